"""When a resource differs from what a run left only because a newer call of the same session
changed it, and that call stays in place (it cannot be undone), the drift halt and the dry run
name that call and say that overwriting removes what it did too (new user round 8: an approved
``add_observations`` on an entity the session's ``create_entities`` made read as someone's drift)."""
from __future__ import annotations

from helpers import MEMORY_LEFT_CALLS, MEMORY_LEFT_POLICY, cli, memory_run


def test_a_halt_names_the_sessions_later_call_left_in_place(tmp_path, memory_server):
    graph, env, flags = memory_run(tmp_path, memory_server, MEMORY_LEFT_CALLS, MEMORY_LEFT_POLICY)
    before = graph.read_bytes()
    preview = cli("undo", "--dry-run", *flags, env=env)
    halted = cli("undo", *flags, env=env)
    assert halted.returncode == 1, halted.stdout + halted.stderr
    for out in (preview.stdout, halted.stdout):
        text = " ".join(out.split())
        assert "drift detected" in text and ":2 memory.add_observations, which this undo leaves in place" in text, out
        assert "changed after it by this session:" in text, out
        assert "also removes what that call did" in text, out
    assert graph.read_bytes() == before  # nothing was changed
