"""A session undo that leaves a call in place ends ``partial``, also when that call is in
another run of the session than the ones it reverted (new user round 8: RESULT said
``rolled_back`` and exited 1 while a session's irreversible call in its other run stayed)."""
from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal, proxy_argv

POLICY = FS_POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  dirs: {}\n") + """  - match: "dirs.create_directory"
    class: irreversible
    gate: never   # trusted: not held, and never undone
  - match: "dirs.list_*"
    class: readonly
"""


def test_a_session_undo_that_leaves_another_runs_call_in_place_is_partial(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, POLICY)
    (root / "a.txt").write_text("before")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    env = dict(os.environ, SYNARTESIS_SESSION="one-agent")
    with RawSession(argv, env=env) as files, \
            RawSession(proxy_argv("dirs", manifest, journal, [*fs_server, str(root)]), env=env) as dirs:
        files.handshake()
        dirs.handshake()
        assert not files.call(1, "write_file", {"path": str(root / "a.txt"), "content": "agent"}).get("isError")
        assert not dirs.call(1, "create_directory", {"path": str(root / "made")}).get("isError")
        files.close()
        dirs.close()
    flags = ("--manifest", str(manifest), "--journal", str(journal))
    preview = cli("undo", "--dry-run", "--json", *flags)
    assert json.loads(preview.stdout)["status"] == "partial", preview.stdout + preview.stderr
    text = " ".join(cli("undo", "--dry-run", *flags).stdout.split())
    assert "1 action cannot be undone and would be left in place" in text, text  # a dry run changes nothing
    done = cli("undo", *flags)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "R E S U L T  partial" in done.stdout and "rolled_back" not in done.stdout.split("R E S U L T", 1)[1], done.stdout
    assert (root / "a.txt").read_text() == "before" and (root / "made").is_dir()
    listed = json.loads(cli("list", "--json", *flags).stdout)
    assert [s["status"] for s in listed] == ["partial"], listed
    with open_journal(journal) as j:
        assert {r.status for r in j.list_runs()} == {"rolled_back", "complete"}
