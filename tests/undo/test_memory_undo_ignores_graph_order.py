"""A new user's finding (round 16, #1): the simplest memory session, create three entities
then delete the middle one, could not be undone. Undoing the delete re-creates the entity at
the end of the graph, so the create's drift check read `[X1, X3, X2]` where it had recorded
`[X1, X2, X3]`: the same entities, another order, and undo halted on it ("drift detected").
The shipped memory policy's reads say `unordered: true`: their arrays are compared in any
order (a person's real edit still halts), while what is stored and sent back keeps the
server's order."""

from __future__ import annotations

import json

from helpers import cli, memory_run

ENTITIES = [{"name": f"X{i}", "entityType": "thing", "observations": [f"note {i}"]} for i in (1, 2, 3)]


def _names(mem):
    return [json.loads(line)["name"] for line in mem.read_text().splitlines() if line.strip()
            and json.loads(line)["type"] == "entity"]


def test_undo_of_a_create_then_a_delete_of_its_middle_entity(tmp_path, memory_server):
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": ENTITIES}),
        ("delete_entities", {"entityNames": ["X2"]})])
    assert _names(mem) == ["X1", "X3"]
    done = cli("undo", *flags, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "drift" not in done.stdout and _names(mem) == [], done.stdout


def test_a_real_change_still_halts_under_unordered(tmp_path, memory_server):
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": ENTITIES}),
        ("delete_entities", {"entityNames": ["X2"]})])
    lines = [json.loads(line) for line in mem.read_text().splitlines() if line.strip()]
    for item in lines:
        if item.get("name") == "X3":
            item["observations"] = ["a person's note"]
    mem.write_text("\n".join(json.dumps(i) for i in lines) + "\n")
    halted = cli("undo", *flags, env=env)
    assert halted.returncode == 1 and "drift" in halted.stdout, halted.stdout + halted.stderr
    assert "X3" in _names(mem)
