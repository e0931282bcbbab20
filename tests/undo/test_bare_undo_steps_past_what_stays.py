"""A new user's finding (round 5): bare `undo` picked a newer session whose only action was an
approved file creation (nothing was captured, so no inverse: left in place), said "nothing
undone" and exited 1, every time: the older session that could be undone was never reached.
A session whose actions all stay in place has nothing left to undo, so the pick steps past it
(`--replan` still counts them: it may build an inverse from the current policy)."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def test_bare_undo_steps_past_a_session_of_an_approved_creation(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    (root / "a.txt").write_text("before\n")
    journal = tmp_path / "j.db"
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]

    def session(name, calls):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            return [s.call(n, "write_file", {"path": str(root / f), "content": c}) for n, (f, c) in enumerate(calls, 1)]

    assert not session("older", [("a.txt", "agent\n")])[0].get("isError")
    assert session("held", [("new.txt", "x\n")])[0].get("isError")  # nothing to restore: held
    with open_journal(journal) as j:
        [held] = [a for r in j.list_runs() for a in j.actions(r.id) if a.status == "gated"]
    assert cli("approve", held.id[:8], "--no-read", "--by", "ana", *flags).returncode == 0
    assert not session("newest", [("new.txt", "x\n")])[0].get("isError")  # the approved retry: applied

    plan = cli("undo", "--dry-run", "--json", *flags)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert any("nothing left to undo" in line for line in json.loads(plan.stdout)["skipped"])
    done = cli("undo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "a.txt").read_text() == "before\n" and (root / "new.txt").read_text() == "x\n"
    again = cli("undo", *flags)
    assert again.returncode == 1 and "nothing can be undone" in again.stdout, again.stdout  # nothing undone: exit 1
    # the held call's own row: its approval was spent by the retry, which the plan names (it said
    # "approved, never retried" while `show` said "approval used by …")
    held_plan = json.loads(cli("undo", "held", "--dry-run", "--json", *flags).stdout)
    [skip] = [s for s in held_plan["steps"] if s["action"] == held.id]
    with open_journal(journal) as j:
        retry = j.get_action(j.get_action(held.id).used_by)
    assert f"its retry is {retry.run_id[:8]}:{retry.seq}," in skip["reason"], skip  # as show labels it
