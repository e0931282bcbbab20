"""When a resource differs from what a run left only because a newer call of the same session
changed it, and that call stays in place (it cannot be undone), the drift halt and the dry run
name that call and say that overwriting removes what it did too (new user round 8: an approved
``add_observations`` on an entity the session's ``create_entities`` made read as someone's drift)."""
from __future__ import annotations

import os

from helpers import RawSession, cli, proxy_argv

POLICY = """version: 1
servers:
  memory: {}
tools:
  - match: "memory.read_graph"
    class: readonly
  - match: "memory.open_nodes"
    class: readonly
  - match: "memory.create_entities"
    class: compensable
    inverse: {tool: memory.delete_entities, args: {entityNames: "$result.entities[].name"}}
    verify: {tool: memory.open_nodes, args: {names: "$result.entities[].name"}}
  - match: "memory.add_observations"
    class: irreversible
    gate: never   # trusted here; the shipped policy holds it
"""


def test_a_halt_names_the_sessions_later_call_left_in_place(tmp_path, memory_server):
    manifest, journal, graph = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "memory.jsonl"
    manifest.write_text(POLICY)
    env = dict(os.environ, MEMORY_FILE_PATH=str(graph))
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
        s.handshake()
        made = s.call(1, "create_entities", {"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]})
        assert not made.get("isError"), made
        added = s.call(2, "add_observations", {"observations": [{"entityName": "Alice", "contents": ["plays chess"]}]})
        assert not added.get("isError"), added
        s.close()
    before = graph.read_bytes()
    flags = ("--manifest", str(manifest), "--journal", str(journal))
    preview = cli("undo", "--dry-run", *flags, env=env)
    halted = cli("undo", *flags, env=env)
    assert halted.returncode == 1, halted.stdout + halted.stderr
    for out in (preview.stdout, halted.stdout):
        text = " ".join(out.split())
        assert "drift detected" in text and ":2 memory.add_observations, which this undo leaves in place" in text, out
        assert "changed after it by this session:" in text, out
        assert "also removes what that call did" in text, out
    assert graph.read_bytes() == before  # nothing was changed
