"""Saga mode and errors after a write, through the real proxy: the toy CRM (a real MCP server)
and the small kv server (which can write and then report an error, on cue)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from helpers import FAKE_BLIND_POLICY, RawSession, cli, kv_proxy, open_journal, text_of

from synartesis.demo.crm_server import SEED, dump_store
from synartesis.services.demo import demo_policy_text

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _crm(tmp_path: Path, saga: bool):
    store, policy, journal = tmp_path / "crm.json", tmp_path / "crm.yaml", tmp_path / "journal.db"
    text = demo_policy_text(sys.executable, store)
    if saga:
        text = text.replace("    provenance: live\n", "    provenance: live\n    saga: true\n", 1)
    policy.write_text(text, encoding="utf-8")
    store.write_bytes(dump_store({"customers": SEED, "outbox": []}))
    argv = [sys.executable, "-m", "synartesis", "proxy", "--server", "crm", "--manifest", str(policy),
            "--journal", str(journal), "--", sys.executable, "-m", "synartesis.demo.crm_server", "--state", str(store)]
    return store, journal, argv


def _agent(argv):
    with RawSession(argv) as s:
        s.handshake("saga-agent")
        created = s.call(1, "create_customer", {"name": "Katherine Johnson", "plan": "pro"})
        updated = s.call(2, "update_customer", {"id": "c_001", "plan": "free"})
        failed = s.call(3, "update_customer", {"id": "c_002", "plan": "platinum"})
        after = s.call(4, "get_customer", {"id": "c_001"})  # the agent goes on
        s.close()
    assert not created.get("isError") and not updated.get("isError") and failed["isError"]
    return failed, after


def test_saga_rolls_the_run_back_before_the_error_reaches_the_agent(tmp_path):
    store, journal, argv = _crm(tmp_path, saga=True)
    original = store.read_bytes()
    failed, after = _agent(argv)
    text = text_of(failed)
    assert text.startswith("invalid plan 'platinum'")  # the server's own words come first
    assert store.read_bytes() == original  # both earlier changes were put back before the answer
    assert json.loads(text_of(after))["plan"] == SEED["c_001"]["plan"]  # and the agent sees it so at once
    with open_journal(journal) as j:
        [run] = j.list_runs()
        acts = j.actions(run.id)
        assert [(a.tool, a.status) for a in acts[:3]] == [
            ("create_customer", "rolled_back"), ("update_customer", "rolled_back"), ("update_customer", "failed")]
        assert "resource is unchanged" in acts[2].note  # the error was settled by reading again
        [saga] = j.undos(run.id)
        assert (saga.kind, saga.by, saga.status) == ("saga", "saga", "compensated")
        assert run.status == "complete" and j.audit(run.id).ok
    # what the agent was told, word for word (ids and times taken out)
    told = [b["text"] for b in failed["content"]]
    assert len(told) == 2  # the server's block, then ours
    shown = re.sub(r"run [0-9a-f]{8}", "run RUN", told[1]) + "\n"
    assert shown == (SNAPSHOTS / "saga_answer.txt").read_text(encoding="utf-8"), shown
    history = cli("history", "--journal", str(journal))
    assert "saga of run" in history.stdout and "by saga" in history.stdout


def test_without_saga_mode_a_failed_call_changes_nothing_else(tmp_path):
    store, journal, argv = _crm(tmp_path, saga=False)
    original = store.read_bytes()
    failed, _ = _agent(argv)
    assert text_of(failed) == "invalid plan 'platinum': must be one of free, pro, enterprise"
    assert store.read_bytes() != original
    with open_journal(journal) as j:
        [run] = j.list_runs()
        assert [a.status for a in j.actions(run.id)][:3] == ["applied", "applied", "failed"]
        assert j.undos(run.id) == []


def test_an_error_after_a_write_is_settled_by_reading_the_resource_again(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    env = dict(os.environ, FAKE_ERROR_AFTER_PUT="written", FAKE_REFUSE_PUT_VALUE="refused")
    with RawSession(argv, env=env) as s:
        s.handshake()
        wrote = s.call(1, "put", {"key": "k0", "value": "written"})  # applied, then an error
        refused = s.call(2, "put", {"key": "k1", "value": "refused"})  # an error, nothing written
        s.close()
    assert wrote["isError"] and refused["isError"]
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        a, b = j.actions(run.id)
        assert a.status == "applied" and "but the resource changed" in a.note and "quota exceeded" in a.note
        assert b.status == "failed" and "unchanged" in b.note
    assert json.loads(state.read_text())["k0"] == "written"
    undo = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}  # the write the error hid is undone


def test_an_error_after_a_write_with_no_read_is_of_unknown_outcome_and_undo_halts(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=FAKE_BLIND_POLICY)
    with RawSession(argv, env=dict(os.environ, FAKE_ERROR_AFTER_PUT="x")) as s:
        s.handshake()
        assert s.call(1, "put", {"key": "k0", "value": "x"})["isError"]
        s.close()
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "unknown" and "no read could tell" in a.note
    undo = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert undo.returncode == 1 and "outcome unknown" in undo.stdout


def test_a_health_check_leaves_no_run(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:  # what `claude mcp list` or a status probe does
        s.handshake("health-check")
        assert s.request(1, "tools/list")["result"]["tools"]
        s.close()
    if journal.exists():
        with open_journal(journal) as j:
            assert j.list_runs() == []
    assert cli("undo", "--manifest", str(manifest), "--journal", str(journal)).returncode in (1, 2)

