"""undo --dry-run on the shipped memory policy hides a person's edit of the graph file.

The suite's own session (create_entities A,B; create_relations A->B; delete_entities B), then a
person adds an observation to A by editing the graph file. The dry run reads open_nodes [A,B],
sees it differs, finds that the newer planned step 3 names B, and replaces what it read with the
journal's recorded state: 'would end rolled_back'. The real undo halts at step 1 on drift.
Step 3 reads open_nodes [B], not [A, B]: step 1 is checked only during the real undo."""
import json
import os

from helpers import REPO, RawSession, assert_plan_agrees, cli, proxy_argv

MEMORY_SHIPPED = (REPO / "policies" / "memory.yaml").read_text()


def test_dry_run_halts_where_the_real_undo_halts_after_a_hand_edit_of_the_graph(tmp_path, memory_server):
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text(MEMORY_SHIPPED)
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
        s.handshake()
        assert not s.call(1, "create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []},
                                                              {"name": "B", "entityType": "t", "observations": []}]}).get("isError")
        assert not s.call(2, "create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "knows"}]}).get("isError")
        assert not s.call(3, "delete_entities", {"entityNames": ["B"]}).get("isError")
    lines = [json.loads(x) for x in mem.read_text().splitlines() if x.strip()]
    for e in lines:
        if e.get("name") == "A":
            e["observations"] = ["a person wrote this by hand"]
    mem.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    j = ["--manifest", str(manifest), "--journal", str(journal)]

    dry = cli("undo", "--dry-run", "--json", *j, env=env)
    text = cli("undo", "--dry-run", *j, env=env)
    real = cli("undo", "--json", *j, env=env)
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == 1 and done["halted"]["seq"] == 1, real.stdout  # the hand edit of A
    assert_plan_agrees(plan, text.stdout, done)
    assert "if it finds drift, it halts there" in text.stdout, text.stdout  # no unconditional promise
