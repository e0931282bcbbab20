"""Text an agent or a server controls, as the CLI prints it (adversarial review, 2026-12-01):
control characters are shown, never obeyed, and text stdout cannot encode never crashes."""
import json

import pytest
from helpers import GATED_FS_POLICY, RawSession, cli, files_proxy, kv_proxy


def test_the_held_call_preview_never_sends_the_agents_terminal_escapes_to_the_terminal(tmp_path, fs_server):
    # The agent controls the content; printed raw, ESC[1A ESC[2K CR erase the malicious line on
    # a real terminal and print a benign one over it.
    root, argv = files_proxy(tmp_path, fs_server, GATED_FS_POLICY)
    (root / "notes.txt").write_text("line one\nline two\n")
    evil = "line one\nrm -rf ~ # evil\x1b[1A\x1b[2K\r+line two (harmless)\u202e\n"
    with RawSession(argv) as s:
        s.handshake(name="agent\x1b[2K\rtrusted")
        held = s.call(1, "write_file", {"path": str(root / "notes.txt"), "content": evil})
        assert "holding this call" in json.dumps(held)
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    for command in (["gates"], ["list"], ["show"], ["approve"]):
        r = cli(*command, "--manifest", str(manifest), "--journal", str(journal))
        out = r.stdout + r.stderr
        for hidden in ("\x1b", "\r", "\u202e"):
            assert hidden not in out, (command, hidden, out)
        if command == ["gates"]:
            assert "+rm -rf ~ # evil\\x1b[1A\\x1b[2K\\r+line two (harmless)\\u202e" in r.stdout, r.stdout
        if command == ["list"]:
            assert "agent\\x1b[2K\\rtrusted" in r.stdout, r.stdout


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["undo", "--dry-run"], ["undo", "--dry-run", "--json"], ["undo"]])
def test_a_snapshot_holding_a_lone_surrogate_never_crashes_the_cli(tmp_path, command):
    # The server's state (not the agent's arguments) holds "\ud800": the pre-read captures it,
    # the journal keeps it, and printing it raised UnicodeEncodeError with a traceback
    # (the real undo even succeeded, then exited 1 with the traceback).
    manifest, journal, state, argv = kv_proxy(tmp_path)
    state.write_text('{"k0": "x\\ud800y"}')
    with RawSession(argv) as s:
        s.handshake()
        assert "isError" not in json.dumps(s.call(1, "put", {"key": "k0", "value": "clean"}))
    r = cli(*command, "--manifest", str(manifest), "--journal", str(journal))
    assert "Traceback" not in r.stderr, r.stderr[-600:]
    assert r.returncode in (0, 1), r.stderr
    if command[-1] == "--json":
        json.loads(r.stdout)  # still JSON: the surrogate is a \\ud800 escape
        assert "\\ud800" in r.stdout
    else:
        assert "\\ud800" in r.stdout, r.stdout
    if command == ["undo"]:
        assert r.returncode == 0
        assert json.loads(state.read_text())["k0"] == "x\ud800y"
