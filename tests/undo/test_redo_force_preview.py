"""Adversarial review 16, F6: `redo --force` over a hand edit (the preview of what --force --yes
would overwrite) said "nothing to redo", "nothing redone (nothing was sent)", with --json
status "nothing" beside the overwrite steps it listed. It now says what it would overwrite,
as undo's --force preview does, and sends nothing."""

from __future__ import annotations

import json

from helpers import cli, files_run


def test_redo_force_preview_lists_the_overwrite_and_sends_nothing(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "a0\n"},
                            [("write_file", {"path": "{root}/a.txt", "content": "agent\n"})])
    assert cli("undo", *flags).returncode == 0
    (root / "a.txt").write_text("hand\n")
    preview = cli("redo", "--force", "--json", *flags)
    report = json.loads(preview.stdout)
    assert report["status"] != "nothing" and any(s["kind"] == "overwrite" for s in report["steps"]), report
    text = cli("redo", "--force", *flags)
    assert "nothing to redo" not in text.stdout and "would overwrite" in text.stdout, text.stdout
    assert (root / "a.txt").read_text() == "hand\n"
    done = cli("redo", "--force", "--yes", *flags)
    assert done.returncode == 0 and (root / "a.txt").read_text() == "agent\n", done.stdout + done.stderr
