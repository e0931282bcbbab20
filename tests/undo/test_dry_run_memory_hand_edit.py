"""undo --dry-run on the shipped memory policy hides a person's edit of the graph file.

The suite's own session (create_entities A,B; create_relations A->B; delete_entities B), then a
person adds an observation to A by editing the graph file. The dry run reads open_nodes [A,B],
sees it differs, finds that the newer planned step 3 names B, and replaces what it read with the
journal's recorded state: 'would end rolled_back'. The real undo halts at step 1 on drift.
Step 3 reads open_nodes [B], not [A, B]: step 1 is checked only during the real undo."""
import json

from helpers import assert_plan_agrees, cli, memory_run


def test_dry_run_halts_where_the_real_undo_halts_after_a_hand_edit_of_the_graph(tmp_path, memory_server):
    mem, env, j = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []},
                                          {"name": "B", "entityType": "t", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "knows"}]}),
        ("delete_entities", {"entityNames": ["B"]})])
    lines = [json.loads(x) for x in mem.read_text().splitlines() if x.strip()]
    for e in lines:
        if e.get("name") == "A":
            e["observations"] = ["a person wrote this by hand"]
    mem.write_text("\n".join(json.dumps(e) for e in lines) + "\n")

    dry = cli("undo", "--dry-run", "--json", *j, env=env)
    text = cli("undo", "--dry-run", *j, env=env)
    real = cli("undo", "--json", *j, env=env)
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == 1 and done["halted"]["seq"] == 1, real.stdout  # the hand edit of A
    assert_plan_agrees(plan, text.stdout, done)
    assert "if it finds drift, it halts there" in text.stdout, text.stdout  # no unconditional promise
