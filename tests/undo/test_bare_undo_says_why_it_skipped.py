"""A new user's finding (round 6): bare `undo` named the newer sessions it stepped past
("skipped 3 newer sessions with nothing left to undo: …") but not why, so a session the person
expected to undo looked forgotten. Each skipped session now has a line saying why: only reads,
already undone, a call that stays in place (an approved creation), a call never applied.
Real filesystem server, real proxy, one SYNARTESIS_SESSION per session."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def test_bare_undo_says_why_it_skipped_each_newer_session(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    (root / "a.txt").write_text("before\n")
    (root / "b.txt").write_text("before\n")
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]

    def session(name, calls):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            return [s.call(n, tool, {"path": str(root / f), **extra}) for n, (tool, f, extra) in enumerate(calls, 1)]

    assert not session("older", [("write_file", "a.txt", {"content": "agent\n"})])[0].get("isError")
    assert not session("undone", [("write_file", "b.txt", {"content": "agent\n"})])[0].get("isError")
    assert cli("undo", "undone", *flags).returncode == 0
    assert session("held", [("write_file", "new.txt", {"content": "x\n"})])[0].get("isError")  # nothing to restore
    with open_journal(tmp_path / "j.db") as j:
        [held] = [a for r in j.list_runs() for a in j.actions(r.id) if a.status == "gated"]
    assert cli("approve", held.id[:8], "--no-read", "--by", "ana", *flags).returncode == 0
    assert not session("created", [("write_file", "new.txt", {"content": "x\n"})])[0].get("isError")
    assert session("waiting", [("write_file", "other.txt", {"content": "y\n"})])[0].get("isError")
    assert not session("reads", [("read_text_file", "a.txt", {})])[0].get("isError")

    plan = cli("undo", "--dry-run", "--json", *flags)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    report = json.loads(plan.stdout)
    assert "older" in report["targetName"], report["targetName"]
    lines = [" ".join(line.split()) for line in report["skipped"]]
    assert lines[0] == "skipped 5 newer sessions with nothing left to undo:", lines
    why = {line.split(" (")[1].split(")")[0]: line.split("): ", 1)[1] for line in lines[1:]}
    with open_journal(tmp_path / "j.db") as j:  # a new user's round 7: the bare form names the deny too
        [waiting] = [a for r in j.list_runs() for a in j.actions(r.id) if a.status == "gated"]
    assert why == {
        "reads": "only reads",
        "waiting": f"its only call was never applied (1 waiting for approval); refuse what waits with "
                   f"`synartesis deny {waiting.id[:8]}`",
        "created": "its only call stays in place: an approved creation (nothing existed before it to put back)",
        "held": "its only call was never applied (1 approved, its retry recorded on its own)",
        "undone": "already undone",
    }, lines
    text = cli("undo", "--dry-run", *flags).stdout
    assert "created): its only call stays in place: an approved creation" in " ".join(text.split()), text
    # undone by name, the creation's own step says it the same way
    # (a new user's round 8: "no usable inverse was recorded: no prior state existed, …; post-state …")
    with open_journal(tmp_path / "j.db") as j:
        created = j.find_session("created")
    named = " ".join(cli("undo", created.id[:10], "--dry-run", *flags).stdout.split())
    assert "an approved creation (nothing existed before it to put back); left in place" in named, named
    assert "no usable inverse was recorded" not in named, named
