"""Adversarial review 11: after an undo was killed, `show` listed actions `rolling_back` and said
nothing of an interrupted undo or of what finishes it."""
from __future__ import annotations

from helpers import cli

from synartesis.journal import Journal


def test_show_says_rolling_back_actions_are_an_interrupted_undo_and_how_to_finish_it(tmp_path):
    journal = tmp_path / "journal.db"
    with Journal.open(journal, create=True) as j:
        run = j.begin_run("t", {})
        a = j.record_action(run, "files", "write_file", "reversible", None, {"path": "/p", "content": "y"})
        j.set_action_status(a.id, "applied")
        j.set_action_status(a.id, "rolling_back", expect=("applied",))
        j.end_run(run)
    out = cli("show", run, "--journal", str(journal))
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "1 action is rolling_back: an undo of it was interrupted, or is running now." in text, text
    assert f"synartesis undo {run[:8]}` finishes it" in text, text
