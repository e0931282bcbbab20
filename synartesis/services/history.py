"""``history``: who undid, redid, approved or denied what, and when (issue 10 item 7).

Read from what the journal already keeps: attempts (``undos`` rows and their reports) and the
decision events of the chain. Each undo or redo comes with its per-step report and, for each
step, the original call of the action it touched; each decision with the held call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synartesis.errors import JournalError
from synartesis.journal import Journal, status_text
from synartesis.undo.targets import resolve_target

__all__ = ["HistoryEntry", "history"]


@dataclass
class HistoryEntry:
    """One undo, redo, saga rollback, approval or denial.

    ``kind``: ``undo`` | ``redo`` | ``saga`` | ``approved`` | ``denied``. ``target``: what it
    acted on (``run …`` / ``session …`` for attempts, ``server.tool`` for decisions).
    """

    at: str
    kind: str
    by: str
    target: str
    status: str | None = None
    ended_at: str | None = None
    steps: list[dict] = field(default_factory=list)
    call: dict | None = None
    reason: str | None = None
    attempt: str | None = None
    runs: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"at": self.at, "kind": self.kind, "by": self.by, "target": self.target, "status": self.status,
                "endedAt": self.ended_at, "steps": self.steps, "call": self.call, "reason": self.reason,
                "attempt": self.attempt, "runs": self.runs}


def _call_of(j: Journal, action_id: str | None, cache: dict[str, dict | None]) -> dict | None:
    if not action_id:
        return None
    if action_id not in cache:
        try:
            a = j.get_action(action_id)
            cache[action_id] = {"server": a.server, "tool": a.tool, "args": j.get_json(a.args_ref), "run": a.run_id,
                                "seq": a.seq}
        except JournalError:  # pruned since
            cache[action_id] = None
    return cache[action_id]


def history(j: Journal, ref: str | None = None, by: str | None = None) -> list[HistoryEntry]:
    """Every attempt and decision (of ``ref``, a run or session, when given; only those made by
    ``by``, exactly as recorded, when given), oldest first.

    Raises:
        UsageError: ``ref`` matches nothing.
    """
    run_ids = resolve_target(j, ref).run_ids if ref else None
    calls: dict[str, dict | None] = {}
    groups: dict[str, list] = {}
    for u in j.attempt_rows(run_ids):
        groups.setdefault(u.attempt or u.id, []).append(u)
    out: list[HistoryEntry] = []
    for attempt, rows in groups.items():
        first = rows[0]
        report = j.get_json(next((r.report_ref for r in rows if r.report_ref), None)) or {}
        scope = first.scope or {}
        if scope.get("session"):
            target = f"session {scope['session'][:10]}"
        else:
            target = f"run {(scope.get('run') or first.run_id)[:8]}"
        if scope.get("only") is not None:
            target += f" (only seq {scope['only']})"
        elif scope.get("to") is not None:
            target += f" (down to seq {scope['to']})"
        steps = []
        for s in report.get("steps", []):
            steps.append({**{k: s.get(k) for k in ("seq", "kind", "outcome", "reason", "run", "gseq", "action")},
                          "call": _call_of(j, s.get("action"), calls)})
        if any(r.status == "running" for r in rows):
            status = "running"
        elif report.get("halted") and report.get("stays"):
            # halted before anything changed: the target kept its status (the undo said so; its
            # report's own status would read "partial"); a session's, when it was one (round 30, U1)
            whole = "session" if scope.get("session") else "run"
            if report.get("sent"):  # a call went out and put nothing back: not "nothing changed"
                status = f"halted after a call was sent (the {whole} is {report['stays']})"
            else:
                status = f"halted, nothing changed (the {whole} stays {report['stays']})"
        elif report.get("status"):
            status = status_text(report["status"], report.get("unverified") or 0)
        else:
            status = rows[0].status
        out.append(HistoryEntry(first.started_at, first.kind, first.by, target, status,
                                max((r.ended_at for r in rows if r.ended_at), default=None), steps,
                                attempt=attempt, runs=[r.run_id for r in rows]))
    for at, kind, a in j.decisions(run_ids):
        out.append(HistoryEntry(at, kind, a.decided_by or "unknown", a.qualified,
                                call={"server": a.server, "tool": a.tool, "args": j.get_json(a.args_ref),
                                      "run": a.run_id, "seq": a.seq, "action": a.id},
                                reason=a.decision_note if kind == "denied" else None, runs=[a.run_id]))
    return sorted((e for e in out if by is None or e.by == by), key=lambda e: e.at)
