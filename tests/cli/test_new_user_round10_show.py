"""new user round 10, #4: `show` said `unrecoverable` for an action an undo halted on, and the
drift note's expected/actual lines lost their indentation. Real proxy, real filesystem server."""

from __future__ import annotations

import json

from helpers import FS_POLICY, cli, files_run


def test_show_words_an_action_an_undo_halted_on_as_halted_and_keeps_the_notes_indentation(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "v0"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "v1"})], policy=FS_POLICY)
    (root / "a.txt").write_text("someone else")  # a person's edit: the undo halts on drift
    assert cli("undo", *flags).returncode == 1
    out = cli("show", *flags).stdout
    lines = out.splitlines()
    row = next(line for line in lines if "files.write_file" in line and ":1" in line)
    assert " halted " in row and "unrecoverable" not in out, out
    assert "halted: an undo stopped at this call without confirming it was reverted" in " ".join(out.split()), out
    assert any(line.startswith("       note: drift at sequence 1") for line in lines), out
    assert any(line.startswith("               expected: ") for line in lines), out  # the note's own 2, under its text
    assert any(line.startswith("               actual:   ") for line in lines), out
    assert "1 halted" in out, out
    (action,) = json.loads(cli("show", "--json", *flags).stdout)["actions"]
    assert action["status"] == "unrecoverable", action  # the journal's word, where it is data
