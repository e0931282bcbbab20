"""Adversarial review 15, F9: a redo that halted part-way (drift on its second step) left two
steps undone; an undo and a redo after it must not lose them. The second redo redoes what
the newest undo reverted and names the two still undone; the third redoes those."""

from __future__ import annotations

import json

from helpers import cli, files_run


def test_steps_a_halted_redo_left_undone_survive_another_undo_and_redo(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a": "A0\n", "b": "B0\n", "c": "C0\n"},
                            [("write_file", {"path": "{root}/" + n, "content": n.upper() + "1\n"}) for n in "abc"])

    def files():
        return [(root / n).read_text() for n in "abc"]

    assert cli("undo", *flags).returncode == 0 and files() == ["A0\n", "B0\n", "C0\n"]
    (root / "b").write_text("a person's edit\n")
    halted = cli("redo", *flags)
    assert halted.returncode == 1 and "drift" in halted.stdout, halted.stdout
    assert files() == ["A1\n", "a person's edit\n", "C0\n"]
    (root / "b").write_text("B0\n")  # the person puts it back the way the undo left it
    assert cli("undo", *flags).returncode == 0 and files() == ["A0\n", "B0\n", "C0\n"]
    second = cli("redo", "--json", *flags)
    assert second.returncode == 0, second.stdout + second.stderr
    assert files() == ["A1\n", "B0\n", "C0\n"]
    assert [s.split(":")[1] for s in json.loads(second.stdout)["stillUndone"]] == ["2 write_file", "3 write_file"], second.stdout
    third = cli("redo", *flags)
    assert third.returncode == 0, third.stdout + third.stderr
    assert files() == ["A1\n", "B1\n", "C1\n"]
    assert cli("redo", *flags).returncode == 1  # nothing left to redo
    assert cli("undo", *flags).returncode == 0 and files() == ["A0\n", "B0\n", "C0\n"]
