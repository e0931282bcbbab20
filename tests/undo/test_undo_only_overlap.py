"""``undo --only`` on a compensation with nothing read before its call (adversarial review #4):
what its inverse would touch (the entity names) is its resource, so it refuses when a later
action of the session touched that, as it does for actions with a pre-read."""

from __future__ import annotations

import json
import os

from helpers import MEMORY_POLICY, RawSession, cli, proxy_argv

from synartesis.undo.overlap import action_touches, leaves, shares, undo_touches

POLICY = MEMORY_POLICY + """  - match: "memory.add_observations"
    class: compensable
    inverse: {tool: memory.delete_observations, args: {deletions: [{entityName: "$.observations[0].entityName", observations: "$.observations[0].contents"}]}}
"""


def _entity(name: str) -> dict:
    return {"entities": [{"name": name, "entityType": "person", "observations": ["likes tea"]}]}


def test_undo_only_never_deletes_what_a_later_action_of_the_session_added(tmp_path, memory_server):
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text(POLICY)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
        s.handshake()
        s.call(1, "create_entities", _entity("alice"))
        s.call(2, "create_entities", _entity("bob"))  # same type and text, another entity
        s.call(3, "add_observations", {"observations": [{"entityName": "alice", "contents": ["signed contract #42"]}]})
    (run,) = json.loads(cli("list", "--runs", "--json", *j).stdout)
    refused = cli("undo", run["id"], "--only", "1", *j, env=env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "seq 3 (memory.add_observations) changed the same resource later" in refused.stderr, refused.stderr
    assert "signed contract #42" in mem.read_text() and '"alice"' in mem.read_text()
    bob = cli("undo", run["id"], "--only", "2", *j, env=env)  # nothing later names bob: it goes alone
    assert bob.returncode == 0 and "cannot be undone alone" not in bob.stderr, bob.stdout + bob.stderr
    assert '"bob"' not in mem.read_text() and "signed contract #42" in mem.read_text()


def test_what_an_undo_touches_is_its_read_else_its_inverse_and_only_identifiers_count():
    inverse = [{"server": "memory", "tool": "delete_entities", "args": {"entityNames": ["alice"]}}]
    mine = undo_touches(None, None, inverse)
    assert shares(mine, action_touches(None, "memory", {"observations": [{"entityName": "alice"}]}, None, None))
    assert not shares(mine, action_touches(None, "other", {"entityName": "alice"}, None, None))  # another server
    assert not shares(mine, action_touches(None, "memory", {"entityName": "bob", "x": True}, None, None))
    read = {"server": "memory", "tool": "open_nodes", "args": {"names": ["carol"]}}
    assert undo_touches(None, read, inverse) == undo_touches(None, read, None)  # the read names it
    assert shares(mine, action_touches(None, "memory", {}, None, inverse))  # what its own undo would touch
    assert leaves({"a": [True, None, "", 0, "x", {"b": 1.5}]}) == {"0", '"x"', "1.5"}
    deep: object = "bottom"
    for _ in range(5000):  # nesting a server may hand back: no recursion limit
        deep = [deep]
    assert leaves(deep) == {'"bottom"'}
