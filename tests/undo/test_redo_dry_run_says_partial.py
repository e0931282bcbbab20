"""A new user's round 22, #1: after `undo --to 3` then `undo --only 2`, `redo --dry-run` said
"would end redone", and the real redo then ended partial (steps 3 and 4, reverted by the
earlier undo, stay undone). The preview now ends as the redo does and names those steps."""

from __future__ import annotations

import json

from helpers import cli, files_run


def test_the_redo_preview_ends_partial_as_the_redo_does(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "A0\n", "b.txt": "B0\n"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "A1\n"}),
        ("write_file", {"path": "{root}/b.txt", "content": "B1\n"}),
        ("write_file", {"path": "{root}/a.txt", "content": "A2\n"}),
        ("edit_file", {"path": "{root}/b.txt", "edits": [{"oldText": "B1", "newText": "B2"}]}),
    ])
    assert cli("undo", "--to", "3", *flags).returncode == 0
    assert cli("undo", "--only", "2", *flags).returncode == 0
    dry = cli("redo", "--dry-run", *flags)
    text = " ".join(dry.stdout.split())
    assert dry.returncode == 0 and "would end partial (dry run)" in text, dry.stdout
    assert "(steps 3 write_file, 4 edit_file) would still be undone" in text, dry.stdout
    doc = json.loads(cli("redo", "--dry-run", "--json", *flags).stdout)
    assert doc["status"] == "partial" and doc["stillUndone"] == ["3 write_file", "4 edit_file"], doc
    real = cli("redo", "--json", *flags)
    done = json.loads(real.stdout)
    assert real.returncode == 0 and done["status"] == doc["status"] and done["stillUndone"] == doc["stillUndone"], done
    assert (root / "b.txt").read_text() == "B1\n" and (root / "a.txt").read_text() == "A1\n"
    again = cli("redo", *flags)
    assert again.returncode == 0 and "R E S U L T  redone" in again.stdout, again.stdout
    assert (root / "b.txt").read_text() == "B2\n" and (root / "a.txt").read_text() == "A2\n"
