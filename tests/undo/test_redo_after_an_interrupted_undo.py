"""Redo after an undo killed mid-step (adversarial review 11, F2): the abandoned attempt's
reverts are taken over, so the newest write is redone too, and a redo that comes before any
undo has finished the interrupted one says what it cannot redo and why.

Real proxy, real filesystem server; the undo SIGKILLs itself after its first claim ahead."""

from __future__ import annotations

import json
import signal
import sys

from helpers import cli, open_journal, own_descendants, run
from test_undo_claims_ahead import _KILLED_AFTER_CLAIM, _statuses, _three_writes


def test_redo_after_a_killed_undo_and_the_undo_that_finished_it_redoes_the_newest_write_too(tmp_path, fs_server):
    path, journal = _three_writes(tmp_path, fs_server)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]
    killed = run([sys.executable, "-c", _KILLED_AFTER_CLAIM, "undo", *flags], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert _statuses(journal) == {1: "applied", 2: "rolling_back", 3: "rolling_back"}

    # before any undo finished the killed one: redo says what it cannot redo, and sends nothing
    early = cli("redo", *flags)
    assert early.returncode == 1, early.stdout + early.stderr
    out = " ".join(early.stdout.split())
    assert "an undo of it was interrupted while reverting this call" in out, out
    assert "Run `synartesis undo` first" in out and "nothing to redo" not in out, out
    assert path.read_text() == "v2"

    assert cli("undo", *flags).returncode == 0
    assert path.read_text() == "v0"
    again = cli("redo", "--json", *flags)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads(again.stdout)
    assert [(s["seq"], s["kind"]) for s in report["steps"]] == [(1, "redo"), (2, "redo"), (3, "redo")], report
    assert report["status"] == "redone", report
    assert path.read_text() == "v3"
    assert _statuses(journal) == {1: "applied", 2: "applied", 3: "applied"}
    with open_journal(journal) as j:
        assert j.list_runs()[0].status == "redone"
    after = cli("redo", *flags)  # nothing is left undone, and it says so
    assert after.returncode == 1 and "nothing to redo" in after.stdout, after.stdout
    assert own_descendants() == []


def test_a_killed_undo_is_taken_over_by_the_undo_of_its_own_run_not_by_one_of_another_run(tmp_path, fs_server):
    """Review 12, F1: an undo of another run of the session that ran after the killed one took
    over its reverts, so a session redo redid only what the finishing undo sent and left the
    newest write of the first run undone."""
    from helpers import FS_POLICY, files_run
    from test_undo_claims_ahead import _KILLED_AFTER_CLAIM, _three_writes

    path, journal = _three_writes(tmp_path, fs_server)  # run A: a.txt v1, v2, v3
    root, flags = files_run(tmp_path, fs_server, {"b.txt": "b0"},  # run B, the same client process
                            [("write_file", {"path": "{root}/b.txt", "content": "b1"})], policy=FS_POLICY)
    with open_journal(journal) as j:
        runs = sorted(j.list_runs(), key=lambda r: r.started_at)
        sessions = {r.session_id for r in runs}
    assert len(runs) == 2 and len(sessions) == 1, runs
    run_a, run_b = runs[0].id, runs[1].id
    killed = run([sys.executable, "-c", _KILLED_AFTER_CLAIM, "undo", run_a, *flags], capture_output=True, text=True,
                 timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert path.read_text() == "v2"  # A's newest write reverted by the killed undo
    assert cli("undo", run_b, *flags).returncode == 0  # another run's undo, after it
    assert (root / "b.txt").read_text() == "b0"
    assert cli("undo", run_a, *flags).returncode == 0  # finishes the killed one
    assert path.read_text() == "v0"
    first = cli("redo", "--json", sessions.pop(), *flags)  # the newest undo: A's, with what the killed one reverted
    assert first.returncode == 0, first.stdout + first.stderr
    assert path.read_text() == "v3", first.stdout
    assert own_descendants() == []
