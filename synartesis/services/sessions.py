"""Agent sessions as ``list``, ``show`` and the console present them: sessions first, runs folded in.

A session's status is derived from its runs: ``active`` while any of its proxies runs;
``complete`` when no undo touched it; ``rolled_back`` / ``compensated (unverified: N)`` when
every run with writes was undone; ``redone`` after a redo; ``partial`` for anything between
(some runs undone and others not, or an undo that halted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from synartesis.journal import Journal, RunRow, SessionRow, session_status, status_text
from synartesis.services.runs import ActionView, action_view, run_summary
from synartesis.undo.targets import Target, describe_session, newest_target, resolve_target

__all__ = ["SessionView", "session_status", "group_sessions", "list_sessions", "session_summary", "TargetView", "show_target"]

@dataclass(frozen=True)
class SessionView:
    """A session with its runs (newest first) and what ``list`` counts."""

    session: SessionRow
    runs: list[RunRow]
    status: str
    unverified: int = 0

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def label(self) -> str:
        """What lists show as the agent (the session's name, else its client's)."""
        return self.who

    @property
    def live(self) -> bool:
        return self.status == "active"

    @property
    def shown_status(self) -> str:
        return status_text(self.status, self.unverified)

    @property
    def name(self) -> str:
        return describe_session(self.session, self.runs)

    @property
    def who(self) -> str:
        """The agent as lists show it: its client (``clientInfo.name``), with the session's
        ``SYNARTESIS_SESSION`` name beside it: ``claude-code (review-42)`` (new user round 31,
        9h: the name stood in the client's place)."""
        s = self.session
        if s.name and s.client and s.name != s.client:
            return f"{s.client} ({s.name})"
        return s.name or s.client or "an agent"

    def count(self, key: str) -> int:
        if key == "unknown":
            return sum(r.unknown for r in self.runs)
        return sum(r.counts.get(key, 0) for r in self.runs)

    @property
    def actions(self) -> int:
        return sum(r.actions for r in self.runs)

    def as_json(self) -> dict:
        s = self.session
        return {"session": s.id, "kind": s.kind, "name": s.name, "client": s.client, "clientPid": s.client_pid,
                "startedAt": s.started_at, "lastAt": s.last_at, "status": self.status, "statusText": self.shown_status,
                "unverified": self.unverified, "actions": self.actions, "unknown": self.count("unknown"),
                "held": self.count("gated"), "runs": [run_summary(r) for r in self.runs]}


def session_summary(runs: list[RunRow], s: SessionRow) -> SessionView:
    status, unverified = session_status(runs)
    return SessionView(s, runs, status, unverified)


def group_sessions(runs: list[RunRow], sessions: list[SessionRow]) -> list[SessionView]:
    """``sessions`` (in their order) each with its runs from ``runs`` (in theirs)."""
    by_session: dict[str, list[RunRow]] = {}
    for r in runs:
        by_session.setdefault(r.session_id or r.id, []).append(r)
    return [session_summary(by_session.get(s.id, []), s) for s in sessions]


def list_sessions(j: Journal) -> list[SessionView]:
    """Every session, newest activity first, each with its runs (newest first)."""
    return group_sessions(j.list_runs(), j.list_sessions())


@dataclass(frozen=True)
class TargetView:
    """What ``show`` prints: a run or a session, its actions in order (a session's across all
    of its runs, in journal-wide order) and which run each belongs to."""

    target: Target
    actions: list[ActionView] = field(default_factory=list)
    carriers: dict = field(default_factory=dict)
    session: SessionView | None = None

    @property
    def runs(self) -> dict[str, RunRow]:
        return {r.id: r for r in self.target.runs}

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target.kind, "id": self.target.id,
                               "actions": [dict(a.as_json(), gseq=a.row.gseq) for a in self.actions]}
        if self.target.kind == "run":
            out["run"] = run_summary(self.target.runs[0])
        elif self.session is not None:
            out["session"] = self.session.as_json()
        return out


def show_target(j: Journal, ref: str | None, full: bool = False) -> TargetView:
    """A run or session (default: the newest session) with every action.

    Raises:
        UsageError: nothing matches.
    """
    target = newest_target(j) if ref is None else resolve_target(j, ref)
    rows = j.actions(target.id) if target.kind == "run" else j.actions_of(target.run_ids)
    carriers = {}
    for a in rows:
        if a.used_by:
            c = j.get_action(a.used_by)
            carriers[a.used_by] = f"seq {c.seq}" + ("" if c.run_id == a.run_id else f" of run {c.run_id[:8]}")
    session = session_summary(target.runs, target.session) if target.session is not None else None
    return TargetView(target, [action_view(j, a, full) for a in rows], carriers, session)
