"""Where a dry run may check a step against the state a planned step leaves (the very same read,
whose restore the real undo verifies), and where it must leave the check to the real undo.

Real proxy, real filesystem server, the CLI."""

import json

from helpers import assert_plan_agrees, cli, files_run


def _steps(plan):
    return {s["seq"]: s for s in plan["steps"]}


def test_two_writes_of_one_file_undone_together_would_end_rolled_back_with_no_drift(tmp_path, fs_server):
    root, j = files_run(tmp_path, fs_server, {"a.txt": "orig\n"},
                        [("write_file", {"path": "{root}/a.txt", "content": "one\n"}),
                         ("write_file", {"path": "{root}/a.txt", "content": "two\n"})])
    dry = cli("undo", "--dry-run", "--json", *j)
    text = cli("undo", "--dry-run", *j)
    assert dry.returncode == 0 and text.returncode == 0, dry.stdout + text.stdout
    plan = json.loads(dry.stdout)
    steps = _steps(plan)
    assert plan["halted"] is None and plan["deferredChecks"] == 0, dry.stdout
    assert steps[2]["check"] == "now" and steps[1]["check"] == "simulated", dry.stdout
    assert f"checked against the state step {steps[2]['run'][:8]}:2 leaves" in steps[1]["reason"], steps[1]
    assert "would end rolled_back (dry run)" in text.stdout and "checked only" not in text.stdout, text.stdout

    real = cli("undo", "--json", *j)
    done = json.loads(real.stdout)
    assert real.returncode == 0 and done["status"] == plan["status"] == "rolled_back", real.stdout
    assert (root / "a.txt").read_text() == "orig\n"

    dry = cli("redo", "--dry-run", "--json", *j)
    text = cli("redo", "--dry-run", *j)
    plan = json.loads(dry.stdout)
    assert plan["deferredChecks"] == 0 and _steps(plan)[2]["check"] == "simulated", dry.stdout
    assert "would end redone (dry run)" in text.stdout, text.stdout
    real = cli("redo", "--json", *j)
    assert real.returncode == 0 and json.loads(real.stdout)["status"] == "redone", real.stdout
    assert (root / "a.txt").read_text() == "two\n"


def test_an_undo_plan_checks_a_step_against_the_same_read_that_runs_last_not_an_older_move(tmp_path, fs_server):
    # write a.txt twice, then move it away: the move (no read) runs first in the undo, so step 2's
    # check waits for the real undo; step 2's verified restore is what step 1 then reads
    root, j = files_run(tmp_path, fs_server, {"a.txt": "orig\n"},
                        [("write_file", {"path": "{root}/a.txt", "content": "one\n"}),
                         ("write_file", {"path": "{root}/a.txt", "content": "two\n"}),
                         ("move_file", {"source": "{root}/a.txt", "destination": "{root}/b.txt"})])
    dry = cli("undo", "--dry-run", "--json", *j)
    text = cli("undo", "--dry-run", *j)
    plan = json.loads(dry.stdout)
    steps = _steps(plan)
    assert dry.returncode == 0 and plan["halted"] is None, dry.stdout
    assert steps[3]["check"] is None and steps[2]["check"] == "deferred", dry.stdout
    run = steps[1]["run"][:8]  # a session's steps are named run:seq
    assert f"checked only during the real undo: step {run}:3" in steps[2]["reason"], steps[2]
    assert steps[1]["check"] == "simulated" and f"step {run}:2 leaves" in steps[1]["reason"], steps[1]
    assert plan["deferredChecks"] == 1
    assert "if it finds drift, it halts there" in text.stdout, text.stdout
    assert f"if the real undo finds no drift at sequence {run}:2 (checked only then); if it finds drift, it halts there" in text.stdout, text.stdout

    real = cli("undo", "--json", *j)
    done = json.loads(real.stdout)
    assert real.returncode == 0 and done["halted"] is None and done["status"] == plan["status"], real.stdout
    assert (root / "a.txt").read_text() == "orig\n" and not (root / "b.txt").exists()
    assert_plan_agrees(plan, text.stdout, done)


def test_a_redo_plan_lets_only_steps_that_run_before_it_explain_a_difference(tmp_path, fs_server):
    # redo runs oldest first: the move (no read) runs, then write 2, then write 3. Step 3 is
    # checked against what step 2 leaves (same read, it runs last before it), not the move
    root, j = files_run(tmp_path, fs_server, {"c.txt": "orig\n"},
                        [("move_file", {"source": "{root}/c.txt", "destination": "{root}/a.txt"}),
                         ("write_file", {"path": "{root}/a.txt", "content": "two\n"}),
                         ("write_file", {"path": "{root}/a.txt", "content": "three\n"})])
    undo = cli("undo", *j)
    assert undo.returncode == 0, undo.stdout
    assert (root / "c.txt").read_text() == "orig\n" and not (root / "a.txt").exists()

    dry = cli("redo", "--dry-run", "--json", *j)
    text = cli("redo", "--dry-run", *j)
    plan = json.loads(dry.stdout)
    steps = _steps(plan)
    assert dry.returncode == 0 and plan["halted"] is None, dry.stdout
    run = steps[1]["run"][:8]
    assert steps[2]["check"] == "deferred" and f"checked only during the real redo: step {run}:1" in steps[2]["reason"], steps[2]
    assert steps[3]["check"] == "simulated" and f"step {run}:2 leaves" in steps[3]["reason"], steps[3]
    assert f"if the real redo finds no drift at sequence {run}:2" in text.stdout, text.stdout

    real = cli("redo", "--json", *j)
    done = json.loads(real.stdout)
    assert real.returncode == 0 and done["status"] == "redone", real.stdout
    assert (root / "a.txt").read_text() == "three\n" and not (root / "c.txt").exists()
    assert_plan_agrees(plan, text.stdout, done)
