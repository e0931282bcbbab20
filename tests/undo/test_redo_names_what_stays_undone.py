"""A redo that leaves what an earlier undo reverted still undone names those steps and the
command that redoes them, and exits 0 (it did what it was asked: redo takes one undo at a time,
as `undo --only` that did every step asked exits 0). New user round 15, #4 and #5. Real
filesystem server, real proxy and CLI."""

from __future__ import annotations

import json

from helpers import FS_POLICY, cli, files_run, open_journal


def test_redo_names_the_steps_an_earlier_undo_left_undone_and_the_command(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "orig\n", "b.txt": "orig\n"},
                            [("write_file", {"path": "{root}/a.txt", "content": "one\n"}),
                             ("write_file", {"path": "{root}/b.txt", "content": "two\n"})], policy=FS_POLICY)
    with open_journal(flags[-1]) as j:
        run = j.list_runs()[0].id
    assert cli("undo", run[:8], "--only", "1", *flags).returncode == 0   # an earlier undo: step 1
    assert cli("undo", run[:8], *flags).returncode == 0                  # the newest: step 2
    redo = cli("redo", *flags)
    assert redo.returncode == 0, redo.stdout + redo.stderr
    assert (root / "b.txt").read_text() == "two\n" and (root / "a.txt").read_text() == "orig\n"
    result = next(ln for ln in redo.stdout.splitlines() if "R E S U L T" in ln)
    assert "step 1 write_file" in result and f"synartesis redo {run[:8]}" in result, result
    again = cli("redo", run[:8], "--json", *flags)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads(again.stdout)
    assert report["status"] == "redone" and report["stillUndone"] == []
    assert (root / "a.txt").read_text() == "one\n"
