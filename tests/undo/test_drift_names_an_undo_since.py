"""A new user's round 19, #6: a drift halt caused by another session's undo (forced over this
session's later write) named nothing but the two states. It now names the call that undo
reverted on the same resource since this call was applied, with its session."""

from __future__ import annotations

import os

from helpers import FS_POLICY, RawSession, cli, files_proxy


def test_a_drift_left_by_another_sessions_undo_names_it(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    (root / "a.txt").write_text("a0")
    for name, text in (("first", "one"), ("second", "two")):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": text}).get("isError")
    forced = cli("undo", "first", "--force", "--yes", *flags)
    assert forced.returncode == 0 and (root / "a.txt").read_text() == "a0", forced.stdout
    halt = cli("undo", "second", *flags)
    assert halt.returncode == 1 and "drift" in halt.stdout, halt.stdout
    text = " ".join(halt.stdout.split())
    assert "reverted since by an undo" in text and "write_file of session" in text, halt.stdout
    assert (root / "a.txt").read_text() == "a0"
