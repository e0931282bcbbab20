"""Gates across processes: refused at once with the exact approve command; approve/deny from
another process; approvals single-use; denials reach the agent with who and why."""

from __future__ import annotations

import json
import os
import shlex
import time

import helpers
from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, cli, open_journal, proxy_argv

POLICY = FAKE_POLICY + """  - match: "kv.delete"
    class: irreversible
"""


def _proxy(tmp_path):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(POLICY)
    return manifest, journal, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(tmp_path / "kv.json")])


def _state(tmp_path) -> dict:
    p = tmp_path / "kv.json"
    return json.loads(p.read_text()) if p.exists() else {}


def test_held_call_is_refused_at_once_and_approve_lets_one_retry_through(tmp_path):
    manifest, journal, argv = _proxy(tmp_path)
    (tmp_path / "kv.json").write_text(json.dumps({"a": 1}))
    with RawSession(argv) as s:
        s.handshake()
        started = time.monotonic()
        held = s.call(1, "delete", {"key": "a"})
        elapsed = time.monotonic() - started
        text = held["content"][0]["text"]
        assert held["isError"] is True
        assert elapsed < 2.0  # refused immediately, never held open
        assert text.startswith("Synartesis is holding this call for approval")
        assert "then make this exact call again" in text
        assert _state(tmp_path) == {"a": 1}
        # the exact command in the refusal works from any directory
        cmd = text.split("Ask them to run:\n  ", 1)[1].split("\n", 1)[0]
        assert str(journal) in cmd
        other = tmp_path / "elsewhere"
        other.mkdir()
        done = helpers.run(shlex.split(cmd) + ["--by", "ana"], capture_output=True, text=True, cwd=other)
        assert done.returncode == 0, done.stderr
        # a retry with the arguments in another order is the same call
        ok = s.call(2, "delete", {"key": "a"})
        assert ok.get("isError") is not True
        assert _state(tmp_path) == {}
        # single use: the same call again is held again
        (tmp_path / "kv.json").write_text(json.dumps({"a": 2}))
        again = s.call(3, "delete", {"key": "a"})
        assert again["isError"] is True and "holding this call" in again["content"][0]["text"]
        assert _state(tmp_path) == {"a": 2}
        s.close()
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [(a.seq, a.status) for a in acts] == [(1, "applied"), (2, "gated")]
        assert acts[0].decided_by == "ana"


def test_approval_crosses_sessions_and_retries_never_pile_up(tmp_path):
    manifest, journal, argv = _proxy(tmp_path)
    (tmp_path / "kv.json").write_text(json.dumps({"b": 1}))
    with RawSession(argv) as s:
        s.handshake("first")
        for i in range(3):  # the agent retries before anyone answers
            assert s.call(i, "delete", {"key": "b"})["isError"] is True
        s.close()
    with open_journal(journal) as j:
        assert len(j.list_gated()) == 1
    r = cli("approve", "--all", "--by", "bo", "--journal", str(journal), "--manifest", str(manifest))
    assert r.returncode == 0, r.stderr
    with RawSession(argv) as s:  # a new client session (the client restarted)
        s.handshake("second")
        assert s.call(1, "delete", {"key": "b"}).get("isError") is not True
        s.close()
    assert _state(tmp_path) == {}
    with open_journal(journal) as j:
        runs = j.list_runs()
        newest = j.actions(runs[0].id)
        assert [(a.tool, a.status, a.decided_by) for a in newest] == [("delete", "applied", "bo")]
        old = j.actions(runs[1].id)
        assert old[0].label == "used" and old[0].used_by == newest[0].id


def test_denial_reaches_the_agent_with_who_and_why(tmp_path):
    manifest, journal, argv = _proxy(tmp_path)
    (tmp_path / "kv.json").write_text(json.dumps({"c": 1}))
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "delete", {"key": "c"})["isError"] is True
        unnamed = cli("deny", "--by", "cy", "--journal", str(journal), "--manifest", str(manifest))
        assert unnamed.returncode == 2 and "name the held call" in unnamed.stderr  # never decides unseen
        with open_journal(journal) as j:
            held_id = j.list_gated()[0].id
        r = cli("deny", held_id[:8], "--by", "cy", "--reason", "keep c, it is the audit key", "--journal", str(journal),
                "--manifest", str(manifest))
        assert r.returncode == 0, r.stderr
        again = s.call(2, "delete", {"key": "c"})
        text = again["content"][0]["text"]
        assert again["isError"] is True and "cy denied it" in text and "keep c, it is the audit key" in text
        # the agent keeps working on other things
        assert s.call(3, "get", {"key": "c"}).get("isError") is not True
        s.close()
    assert _state(tmp_path) == {"c": 1}
    with open_journal(journal) as j:
        assert not j.list_gated()


def test_decisions_are_conditional_and_default_to_the_os_user(tmp_path):
    manifest, journal, argv = _proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "delete", {"key": "z"})
        s.close()
    env = dict(os.environ, USER="osuser")
    with open_journal(journal) as j:
        aid = j.list_gated()[0].id
    assert cli("approve", aid[:8], "--journal", str(journal), env=env).returncode == 0
    second = cli("deny", aid, "--journal", str(journal), env=env)
    assert second.returncode == 1 and "no longer awaiting approval" in second.stderr
    with open_journal(journal) as j:
        a = j.get_action(aid)
        assert a.status == "approved" and a.decided_by == "osuser"
    nothing = cli("gates", "--journal", str(tmp_path / "nope.db"))
    assert nothing.returncode == 2 and "no journal" in nothing.stderr
    assert not (tmp_path / "nope.db").exists()


def test_on_write_gate_passes_reads_and_holds_writes(tmp_path):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text("""version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: irreversible
    gate: on_write
    sql_arg: key
""")
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(tmp_path / "kv.json")])
    (tmp_path / "kv.json").write_text(json.dumps({"SELECT 1": 5}))
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "get", {"key": "SELECT 1"}).get("isError") is not True
        held = s.call(2, "get", {"key": "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"})
        assert held["isError"] is True and "holding" in held["content"][0]["text"]
        s.close()
    # the read it let through is journalled as what it was, a read (not "cannot be undone");
    # the held one says why it was held (new user round 8)
    assert "not a plain read" in held["content"][0]["text"], held
    with open_journal(journal) as j:
        [run] = j.list_runs()
        assert [(a.cls, a.status) for a in j.actions(run.id)] == [("readonly", "applied"), ("irreversible", "gated")]
    preview = cli("undo", run.id[:8], "--dry-run", "--manifest", str(manifest), "--journal", str(journal))
    assert "cannot be undone" not in preview.stdout and "irreversible" not in preview.stdout, preview.stdout
