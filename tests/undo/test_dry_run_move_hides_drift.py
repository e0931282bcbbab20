"""undo --dry-run says 'would end rolled_back' where the real undo halts on drift.

A write of a.txt, then a move a.txt -> b.txt (no read). A person edits b.txt. The dry run reads
a.txt (absent), sees the newer planned move names a.txt, and swaps what it read for the state the
journal recorded, so the person's edit is never compared. The real undo moves b back and halts.
The move meets a.txt's read only by an identifier, so the dry run cannot know what it leaves:
seq 1 is checked only during the real undo, and the plan promises no status."""
import json

from helpers import assert_plan_agrees, cli, files_run


def test_dry_run_agrees_with_the_real_undo_after_a_person_edits_the_moved_file(tmp_path, fs_server):
    root, j = files_run(tmp_path, fs_server, {"a.txt": "orig\n"},
                        [("write_file", {"path": "{root}/a.txt", "content": "agent\n"}),
                         ("move_file", {"source": "{root}/a.txt", "destination": "{root}/b.txt"})])
    (root / "b.txt").write_text("a person's edit\n")  # drift: not what the run left

    dry = cli("undo", "--dry-run", "--json", *j)
    text = cli("undo", "--dry-run", *j)
    real = cli("undo", "--json", *j)
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == 1 and done["halted"]["seq"] == 1, real.stdout  # the person's edit
    assert_plan_agrees(plan, text.stdout, done)
    assert "would end rolled_back (dry run)" not in text.stdout, text.stdout
