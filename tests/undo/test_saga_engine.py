"""The undo engine on a connection the caller already holds (what saga mode uses), and the
text the agent is told after a saga rollback (snapshot-tested)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FAKE_SERVER, RawSession, kv_proxy, open_journal

from synartesis.journal import Journal
from synartesis.proxy.client import McpClient
from synartesis.undo import Step, UndoOptions, UndoReport, saga_text, undo_target
from synartesis.undo.servers import HeldServers
from synartesis.undo.targets import resolve_target

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_the_engine_undoes_a_run_over_a_connection_the_caller_holds(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)

    def go():
        with McpClient.spawn(FAKE_SERVER[0], [*FAKE_SERVER[1:], "--state", str(state)], label="kv") as up:
            up.initialize()
            with Journal.open(journal) as j:
                target = resolve_target(j, j.list_runs()[0].id)
                assert target.live_runs  # its proxy is still running: it is the one rolling back
                return undo_target(j, target, UndoOptions(by="saga", own_run=True),
                                   servers=HeldServers({"kv": up.request}), kind="saga")

    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "a"})
        s.call(2, "put", {"key": "k1", "value": "b"})
        report = go()
        s.close()
    assert report.status == "rolled_back" and report.kind == "saga"
    assert [s.outcome for s in report.steps] == ["restored (verified)"] * 2
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        [u] = j.undos(run.id)
        assert (u.kind, u.by, u.status) == ("saga", "saga", "rolled_back")
        assert run.status == "complete" and j.audit(run.id).ok  # it went on, then ended as usual


def _report(**kw) -> UndoReport:
    steps = [Step(4, "a4", "crm.update_customer", "revert", "state matches; applying inverse", outcome="restored (verified)"),
             Step(3, "a3", "crm.send_email", "permanent", "cannot be undone; left in place"),
             Step(2, "a2", "crm.create_customer", "revert", "no read declared", outcome="sent (unverified)"),
             Step(1, "a1", "crm.get_customer", "skip", "readonly")]
    return UndoReport(run="r", dry_run=False, status="partial", steps=steps, kind="saga", target_name="run 1e1983ae",
                      **kw)


def test_the_saga_report_the_agent_reads_is_stable():
    clean = saga_text(_report(), "the server refused the call: plan 'gold' does not exist")
    halted = _report()
    halted.steps = halted.steps[:1] + [Step(3, "a3", "crm.update_customer", "halt", "drift detected")]
    halted.halted = halted.steps[-1]
    stopped = saga_text(halted, "the server refused the call: quota exceeded")
    nothing = saga_text(UndoReport(run="r", dry_run=False, status="nothing", kind="saga", target_name="run 1e1983ae"),
                        "timeout")
    got = "\n\n---\n\n".join([clean, stopped, nothing]) + "\n"
    expected = (SNAPSHOTS / "saga_report.txt").read_text(encoding="utf-8")
    assert got == expected, got
