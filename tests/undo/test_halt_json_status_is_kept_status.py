"""A new user's round 22, #3: `undo --json` of a halt that sent nothing said `"status":
"partial"` beside `"stays": "complete"`, while the text said the run stays complete and `list`
showed it complete. The JSON status of such a halt is the status the run keeps."""

from __future__ import annotations

import json

from helpers import cli, files_run


def test_a_halt_that_sent_nothing_reports_the_status_the_run_keeps(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"b.txt": "line1\n"}, [
        ("edit_file", {"path": "{root}/b.txt", "edits": [{"oldText": "line1", "newText": "L1"}]})])
    (root / "b.txt").write_text("L1\nhuman\n")
    for extra in ([], ["--replan"], ["--dry-run"]):
        p = cli("undo", *extra, "--json", *flags)
        doc = json.loads(p.stdout)
        assert p.returncode == 1 and doc["halted"] and doc["sent"] == 0, (extra, doc)
        assert doc["status"] == "complete" and doc["statusText"] == doc["stays"] == "complete", (extra, doc)
    listed = json.loads(cli("list", "--json", *flags).stdout)
    assert "complete" in json.dumps(listed), listed
    assert (root / "b.txt").read_text() == "L1\nhuman\n"
