"""redo --dry-run says every step would be re-sent where the real redo halts on drift.

A move a.txt -> b.txt, then a write of b.txt; undo both. A person then edits a.txt. The dry run
reads b.txt for step 2 (absent), sees the older planned redo (the move) names b.txt, and replaces
what it read with the state the journal expects: no drift. The real redo moves the person's
a.txt to b.txt and halts at step 2 (b.txt holds the person's text, not what the undo left).
The move has no read: step 2 is checked only during the real redo, and the plan promises no
status."""
import json

from helpers import assert_plan_agrees, cli, files_run


def test_redo_dry_run_agrees_with_the_real_redo_after_a_person_edits_the_undone_file(tmp_path, fs_server):
    root, j = files_run(tmp_path, fs_server, {"a.txt": "orig\n"},
                        [("move_file", {"source": "{root}/a.txt", "destination": "{root}/b.txt"}),
                         ("write_file", {"path": "{root}/b.txt", "content": "agent\n"})])
    undo = cli("undo", *j)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "a.txt").read_text() == "orig\n" and not (root / "b.txt").exists()
    (root / "a.txt").write_text("a person's edit\n")  # drift: not what the undo left

    dry = cli("redo", "--dry-run", "--json", *j)
    text = cli("redo", "--dry-run", *j)
    real = cli("redo", "--json", *j)
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == 1 and done["halted"]["seq"] == 2, real.stdout  # b.txt holds the person's text
    assert_plan_agrees(plan, text.stdout, done)
    assert "would end redone (dry run)" not in text.stdout, text.stdout
