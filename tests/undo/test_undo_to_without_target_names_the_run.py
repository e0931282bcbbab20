"""A new user's finding (round 6): `undo --to 1` with no target said "picked run 1e1983ae: the
newest session with something to undo" — a run called a session. `--to` counts one run's
seqs, so bare undo takes the one run of the newest session; the line now says that.
Real filesystem server, real proxy."""

from __future__ import annotations

import json

from helpers import FS_POLICY, cli, files_run


def test_undo_to_without_a_target_says_it_picked_the_run_of_the_newest_session(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "one\n"},
                            [("write_file", {"path": "{root}/a.txt", "content": "two\n"}),
                             ("write_file", {"path": "{root}/a.txt", "content": "three\n"})], policy=FS_POLICY)
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    [run] = session["runs"]
    plan = json.loads(cli("undo", "--to", "2", "--dry-run", "--json", *flags).stdout)
    assert plan["target"] == "run" and plan["run"] == run["id"]
    assert plan["picked"].startswith(f"the one run with actions of session {session['session'][:10]} ("), plan["picked"]
    assert "the newest session with something to undo: 2 actions across 1 run" in plan["picked"], plan["picked"]
    text = " ".join(cli("undo", "--to", "2", *flags).stdout.split())
    assert f"picked run {run['id'][:8]}: the one run with actions of session {session['session'][:10]}" in text, text
    assert (root / "a.txt").read_text() == "two\n"
