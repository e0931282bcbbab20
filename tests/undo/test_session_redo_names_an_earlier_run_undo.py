"""A new user's round 22, #2: a session of two runs; one run was undone on its own, then the
session. `redo SESSION` redid what the session undo reverted and said `redone`, while `list`
showed the session partial and the other run still undone. The redo now ends partial, names
that run's steps and the command that redoes them (as it does for an earlier undo of one run)."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def test_a_session_redo_names_what_an_earlier_undo_of_one_run_reverted(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    for name in ("a.txt", "b.txt"):
        (root / name).write_text("0")
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="both")) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(root / name), "content": "agent"}).get("isError")
    with open_journal(tmp_path / "j.db") as j:
        first, second = sorted(j.list_runs(), key=lambda r: r.started_at)
        session = first.session_id
    assert cli("undo", second.id[:8], *flags).returncode == 0
    assert cli("undo", "both", *flags).returncode == 0
    assert (root / "a.txt").read_text() == "0" and (root / "b.txt").read_text() == "0"
    dry = json.loads(cli("redo", "both", "--dry-run", "--json", *flags).stdout)
    real = cli("redo", "both", "--json", *flags)
    done = json.loads(real.stdout)
    assert real.returncode == 0 and done["status"] == "partial", done
    assert done["stillUndone"] == [f"{second.id[:8]}:1 write_file"] and dry["stillUndone"] == done["stillUndone"], (dry, done)
    assert dry["status"] == "partial", dry
    assert (root / "a.txt").read_text() == "agent" and (root / "b.txt").read_text() == "0"
    listed = json.loads(cli("list", "--json", *flags).stdout)
    text = cli("redo", "both", "--dry-run", *flags).stdout
    assert f"synartesis redo {session}" in " ".join(text.split()) or "nothing to redo" not in text, text
    again = cli("redo", "both", *flags)
    assert again.returncode == 0 and (root / "b.txt").read_text() == "agent", again.stdout
    assert listed
