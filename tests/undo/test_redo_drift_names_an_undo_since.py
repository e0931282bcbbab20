"""A new user's round 22, #5: two sessions wrote the same text to a.txt; S2 was undone, then S1;
`redo S2` halted on drift ("not in the state the undo left it in") without saying that the
undo of S1 made the change. The halt names the call that undo reverted, with its session."""

from __future__ import annotations

import os

from helpers import FS_POLICY, RawSession, cli, files_proxy


def test_a_redo_drift_left_by_another_sessions_undo_names_it(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    (root / "a.txt").write_text("a0")
    for name in ("first", "second"):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "same"}).get("isError")
    assert cli("undo", "second", *flags).returncode == 0
    assert cli("undo", "first", *flags).returncode == 0
    assert (root / "a.txt").read_text() == "a0"
    halt = cli("redo", "second", *flags)
    text = " ".join(halt.stdout.split())
    assert halt.returncode == 1 and "drift" in text, halt.stdout
    assert "reverted since by an undo" in text and "write_file of session" in text, halt.stdout
    assert (root / "a.txt").read_text() == "a0"
