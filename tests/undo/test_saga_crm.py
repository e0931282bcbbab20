"""Saga mode with the toy CRM (a real MCP server) through the real proxy (issue 10 item 8):
an irreversible call the person approved is never rolled back or re-sent by a saga; the agent
is told it was left in place."""

from __future__ import annotations

import json
import sys

from helpers import RawSession, cli, open_journal, text_of

from synartesis.demo.crm_server import SEED, dump_store
from synartesis.services.demo import demo_policy_text


def test_saga_rolls_back_around_an_approved_email_and_leaves_it_sent_once(tmp_path):
    store, policy, journal = tmp_path / "crm.json", tmp_path / "crm.yaml", tmp_path / "journal.db"
    text = demo_policy_text(sys.executable, store).replace("    provenance: live\n",
                                                          "    provenance: live\n    saga: true\n", 1)
    policy.write_text(text, encoding="utf-8")
    store.write_bytes(dump_store({"customers": SEED, "outbox": []}))
    argv = [sys.executable, "-m", "synartesis", "proxy", "--server", "crm", "--manifest", str(policy),
            "--journal", str(journal), "--", sys.executable, "-m", "synartesis.demo.crm_server", "--state", str(store)]
    email = {"to": "ada@example.com", "subject": "welcome", "body": "hello"}
    with RawSession(argv) as s:
        s.handshake("saga-agent")
        assert not s.call(1, "create_customer", {"name": "Katherine Johnson"}).get("isError")
        held = s.call(2, "send_email", email)
        assert held["isError"] and "synartesis approve" in text_of(held)
        action = text_of(held).split("Action ")[1].split()[0]
        approved = cli("approve", action, "--no-read", "--manifest", str(policy), "--journal", str(journal))
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert not s.call(3, "send_email", email).get("isError")  # the identical retry goes through
        failed = s.call(4, "update_customer", {"id": "c_001", "plan": "platinum"})
        s.close()
    assert failed["isError"]
    told = failed["content"][-1]["text"]
    assert told.startswith("Synartesis saga mode: this call failed (invalid plan 'platinum'")
    assert "Rolled back: #1 crm.create_customer" in told
    assert "Left as they are (they cannot be undone): #2 crm.send_email" in told  # the approved row, used
    data = json.loads(store.read_text())
    assert data["customers"] == SEED  # the create was compensated before the answer
    assert [(m["to"], m["subject"]) for m in data["outbox"]] == [("ada@example.com", "welcome")]  # sent once
    with open_journal(journal) as j:
        [run] = j.list_runs()
        statuses = [(a.seq, a.tool, a.status) for a in j.actions(run.id)]
        # the approved retry is the held row, now applied; the saga left it as it is
        assert statuses == [(1, "create_customer", "rolled_back"), (2, "send_email", "applied"),
                            (3, "update_customer", "failed")]
        [saga] = j.undos(run.id)
        assert saga.kind == "saga" and j.audit(run.id).ok
