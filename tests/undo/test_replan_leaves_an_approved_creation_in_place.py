"""A new user's round 31, #2: one session wrote p1.txt, created p2.txt (held, approved, retried)
and wrote p3.txt. A person edited p3, so `undo` halted; they put p3 back and ran `undo --replan`
(what the halt used to recommend). p3 was reverted, then: "replan failed: the current policy's
rule files.write_file does not resolve for this action: $snapshot.content refers to $snapshot,
which is not available at this point"; partial, exit 1, p1.txt still the agent's. The current
policy's inverse needs the state before the call, and a creation has none: as the proxy records
such a call, and as a plain undo says, it is an approved creation left in place, and the older
steps are undone. Same for `undo --replan --dry-run`. Real proxy, real filesystem server."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def _session(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    p1, p2, p3 = root / "p1.txt", root / "p2.txt", root / "p3.txt"
    p1.write_text("one")
    p3.write_text("three")
    journal = tmp_path / "j.db"
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="work")) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(p1), "content": "agent one"}).get("isError")
        assert s.call(2, "write_file", {"path": str(p2), "content": "new"}).get("isError")  # held: a creation
        with open_journal(journal) as j:
            [held] = [a for r in j.list_runs() for a in j.actions(r.id) if a.status == "gated"]
        assert cli("approve", held.id[:8], "--no-read", "--by", "ana", *flags).returncode == 0
        assert not s.call(3, "write_file", {"path": str(p2), "content": "new"}).get("isError")  # the retry
        assert not s.call(4, "write_file", {"path": str(p3), "content": "agent three"}).get("isError")
    return (p1, p2, p3), flags


def test_replan_after_a_drift_halt_leaves_the_approved_creation_and_undoes_the_older_write(tmp_path, fs_server):
    (p1, p2, p3), flags = _session(tmp_path, fs_server)
    p3.write_text("a person's edit")
    halted = cli("undo", *flags)
    assert halted.returncode == 1 and "drift" in halted.stdout, halted.stdout + halted.stderr
    p3.write_text("agent three")  # put back the way the run left it
    done = cli("undo", "work", "--replan", *flags)
    text = " ".join(done.stdout.split())
    assert "replan failed" not in text and "$snapshot" not in text, done.stdout
    assert "an approved creation (nothing existed before it to put back); left in place" in text, done.stdout
    assert p1.read_text() == "one" and p3.read_text() == "three" and p2.read_text() == "new"
    assert done.returncode == 1  # something was left in place, as a plain undo says it


def test_replan_dry_run_of_a_session_with_an_approved_creation_plans_the_older_steps(tmp_path, fs_server):
    (p1, p2, p3), flags = _session(tmp_path, fs_server)
    for extra in (["--replan", "--dry-run"], ["--dry-run"]):
        plan = json.loads(cli("undo", "work", *extra, "--json", *flags).stdout)
        assert plan["halted"] is None, (extra, plan)
        kinds = [(s["kind"], s["reason"]) for s in plan["steps"]]
        assert [k for k, _ in kinds].count("revert") == 2, (extra, kinds)
        assert any(k == "permanent" and "an approved creation" in r for k, r in kinds), (extra, kinds)
    assert p1.read_text() == "agent one" and p3.read_text() == "agent three"
