"""A new user's round 31, #1: session A wrote r.txt (base → A), then session B wrote it (A → B).
`undo A` halted on drift and said "2. undo the other run named above first, then run `synartesis
undo A` again". They undid B (r.txt = A again) and ran `undo A` again: exit 1, "halted here on an
earlier attempt", without reading the file, the same option 2 once more and, beside it, "run undo
--replan". The earlier halt pinned the outcome. Now every undo reads the resource again, so the
advice works, and a halt names one way to go on. Real proxy, real filesystem server."""

from __future__ import annotations

from helpers import cli, two_sessions_writing


def test_undo_again_after_undoing_the_other_session_as_the_halt_said_undoes_it(tmp_path, fs_server):
    doc, flags = two_sessions_writing(tmp_path, fs_server)
    halted = cli("undo", "sa", *flags)
    text = " ".join(halted.stdout.split())
    assert halted.returncode == 1 and "drift" in text, halted.stdout + halted.stderr
    assert "undo the other run named above first" in text and "--replan" not in text, halted.stdout
    assert doc.read_text() == "B"
    other = cli("undo", "sb", *flags)  # what the halt said to do first
    assert other.returncode == 0 and doc.read_text() == "A", other.stdout + other.stderr
    again = cli("undo", "sa", *flags)  # "then run `synartesis undo …` again"
    assert again.returncode == 0, again.stdout + again.stderr  # was 1: "halted here on an earlier attempt"
    assert "earlier attempt" not in again.stdout
    assert doc.read_text() == "base"


def test_a_second_undo_that_still_finds_drift_reads_again_and_gives_one_way_on(tmp_path, fs_server):
    doc, flags = two_sessions_writing(tmp_path, fs_server)
    assert cli("undo", "sa", *flags).returncode == 1
    doc.write_text("a person's edit")  # the world moved on since the first halt
    again = cli("undo", "sa", *flags)
    text = " ".join(again.stdout.split())
    assert again.returncode == 1 and "drift" in text, again.stdout + again.stderr
    # what it read now, not what the first attempt saw; and no advice that contradicts option 2
    assert "a person's edit" in text and "earlier attempt" not in text, again.stdout
    assert "undo the other run named above first" in text and "--replan" not in text, again.stdout
    assert doc.read_text() == "a person's edit"
