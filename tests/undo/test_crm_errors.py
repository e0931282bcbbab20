"""Errors after a write with the toy CRM (a real MCP server) through the real proxy, saga off
(issue 10 item 4): an error is no proof that nothing happened, so the proxy reads again.

- ``update_customer`` with a bad plan: the pre-read record is unchanged → ``failed``; undo
  skips it.
- ``create_customer`` with a bad plan: its only read is ``get_customer $result.id``, and an
  error has no id, so nothing can tell → ``unknown``; undo halts there until ``--force``.

The third state, ``applied`` (the resource changed although the server said error), cannot
happen with the CRM, which checks every input before it writes: ``tests/proxy/test_saga.py``
shows it with the kv server, which can write and then fail on cue.
"""

from __future__ import annotations

import json
import sys

from helpers import RawSession, cli, open_journal

from synartesis.demo.crm_server import SEED, dump_store
from synartesis.services.demo import demo_policy_text


def test_errors_after_a_write_are_failed_or_unknown_and_undo_treats_each_accordingly(tmp_path):
    store, policy, journal = tmp_path / "crm.json", tmp_path / "crm.yaml", tmp_path / "journal.db"
    policy.write_text(demo_policy_text(sys.executable, store), encoding="utf-8")
    store.write_bytes(dump_store({"customers": SEED, "outbox": []}))
    original = store.read_bytes()
    argv = [sys.executable, "-m", "synartesis", "proxy", "--server", "crm", "--manifest", str(policy),
            "--journal", str(journal), "--", sys.executable, "-m", "synartesis.demo.crm_server", "--state", str(store)]
    with RawSession(argv) as s:
        s.handshake("crm-agent")
        assert not s.call(1, "update_customer", {"id": "c_001", "plan": "free"}).get("isError")
        assert s.call(2, "update_customer", {"id": "c_002", "plan": "platinum"})["isError"]
        assert s.call(3, "create_customer", {"name": "Nobody", "plan": "gold"})["isError"]
        s.close()
    with open_journal(journal) as j:
        [run] = j.list_runs()
        applied, refused, unclear = j.actions(run.id)
        assert applied.status == "applied"
        assert refused.status == "failed" and "unchanged" in refused.note and "invalid plan 'platinum'" in refused.note
        assert unclear.status == "unknown" and "no read could tell" in unclear.note
        assert run.unknown == 1
    listed = json.loads(cli("list", "--runs", "--json", "--journal", str(journal)).stdout)[0]
    assert listed["unknown"] == 1

    def undo(*extra):
        return cli("undo", "--manifest", str(policy), "--journal", str(journal), *extra)

    halted = undo()
    assert halted.returncode == 1 and "halted at sequence 3" in halted.stdout and "outcome unknown" in halted.stdout
    assert json.loads(store.read_text())["customers"]["c_001"]["plan"] == "free"  # nothing was sent
    forced = json.loads(undo(run.id[:8], "--force", "--yes", "--json").stdout)
    kinds = {s["seq"]: s["kind"] for s in forced["steps"]}
    assert kinds[2] == "skip" and kinds[1] == "revert", forced["steps"]
    assert store.read_bytes() == original  # the one write that happened is undone, byte for byte
