"""Undo, redo and saga attempts: who started them, each step, and how they ended.

An attempt covers one or more runs (a session undo covers all of its runs). It writes one
``undos`` row per run, sharing ``attempt``, so each run's steps are chained in that run's own
event log and two attempts on one run exclude each other: the second is refused while the
first one's process lives (pid and start token), and a crashed one is marked ``abandoned`` and
taken over.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any, Iterable

from synartesis.journal.gates import GatesMixin
from synartesis.journal.liveness import process_state, start_token
from synartesis.journal.rows import (ATTEMPT_KINDS, ATTEMPT_STATUSES, IN_EFFECT, NOTHING_IN_EFFECT, UndoRow, new_id,
                                     now_iso)

__all__ = ["AttemptsMixin", "Attempt", "REDO_SENT_NOTE"]

_UNDO_COLS = "id, run_id, by, pid, started_at, ended_at, status, report_ref, kind, attempt, scope, pid_started"
# What redo writes on an action it is about to send (undo/redo.py): a redo that dies before the
# answer leaves it ``pending``, and its outcome is unknown.
REDO_SENT_NOTE = "redo sent by "


class Attempt:
    """A started attempt: its id, its kind and the row it keeps per run."""

    def __init__(self, attempt_id: str, kind: str, rows: dict[str, str]) -> None:
        self.id = attempt_id
        self.kind = kind
        self.rows = rows  # run id → undos row id

    def row(self, run_id: str) -> str:
        return self.rows[run_id]


def _scope(text: Any) -> dict | None:
    """An attempt's recorded scope; one that is not a JSON object (edited by hand: the undos
    rows are not chained) reads as none recorded, as a NULL does (adversarial review 30)."""
    if not text:
        return None
    try:
        scope = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
    return scope if isinstance(scope, dict) else None


def _undo_row(r: tuple) -> UndoRow:
    row = UndoRow(*r[:10], scope=_scope(r[10]))
    if row.status == "running" and _dead(row.pid, r[11]):
        row = replace(row, status="abandoned")  # as a stale run reads as ended; the next write records it
    return row


def _dead(pid: int | None, started: str | None) -> bool:
    """The process of a ``running`` attempt is gone (no pid: nothing could be running it)."""
    return not pid or process_state(pid, started) == "gone"


class AttemptsMixin(GatesMixin):
    def begin_attempt(self, run_ids: Iterable[str], by: str, kind: str = "undo",
                      scope: dict | None = None) -> Attempt | None:
        """Start an attempt over ``run_ids``; None when a live attempt already works on one of them.

        Raises:
            ConflictError: a team journal's member undoing another user's run (issue 14).

        Args:
            kind: ``undo``, ``redo`` or ``saga``.
            scope: what was asked, recorded with each row (``{"session": id}``, ``{"run": id,
                "only": seq}``, …).
        """
        if kind not in ATTEMPT_KINDS:
            raise ValueError(f"not an attempt kind: {kind}")
        ids = list(dict.fromkeys(run_ids))
        if kind != "saga":  # a saga is the proxy rolling back its own run
            self._check_may(ids, f"{kind}")
        token = start_token(os.getpid())
        with self._guard(f"begin {kind}"), self._tx():
            marks = ",".join("?" * len(ids))
            for uid, rid, pid, started, old_kind in self._all(
                    f"SELECT id, run_id, pid, pid_started, kind FROM undos WHERE status = 'running' AND run_id IN ({marks})",
                    tuple(ids)):
                if not _dead(pid, started):
                    return None
                self._abandon(uid, rid, old_kind)
            attempt = new_id()
            rows: dict[str, str] = {}
            for rid in ids:
                uid = new_id()
                self._q("INSERT INTO undos (id, run_id, by, pid, started_at, status, kind, attempt, scope, pid_started) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?)",
                        (uid, rid, by, os.getpid(), now_iso(), "running", kind, attempt,
                         json.dumps(scope, sort_keys=True) if scope else None, token))
                self._event(rid, f"{kind}.begin", {"by": by, "attempt": attempt, "scope": scope} if scope
                            else {"by": by, "attempt": attempt}, undo_id=uid)
                rows[rid] = uid
        return Attempt(attempt, kind, rows)

    def _abandon(self, uid: str, run_id: str, kind: str) -> None:
        """Record a dead attempt's row as ``abandoned`` (inside a transaction). A redo's call
        left ``pending`` becomes ``unknown``; a run it changed that claims nothing is in effect
        becomes ``partial``, as a halted attempt would have left it."""
        self._q("UPDATE undos SET status = 'abandoned', ended_at = ? WHERE id = ?", (now_iso(), uid))
        self._event(run_id, f"{kind}.abandoned", {"undo": uid}, undo_id=uid)
        if kind != "redo":
            return
        for (aid,) in self._all("SELECT id FROM actions WHERE run_id = ? AND status = 'pending' AND note LIKE ?",
                                (run_id, REDO_SENT_NOTE + "%")):
            self._set(aid, "unknown", note="outcome unknown: the redo that sent this call ended before its answer "
                                           "was recorded", expect=("pending",))
        row = self._one("SELECT status FROM runs WHERE id = ?", (run_id,))
        if row and row[0] in NOTHING_IN_EFFECT and self._one(
                "SELECT 1 FROM actions WHERE run_id = ? AND class != 'readonly' AND status IN "
                f"({','.join('?' * len(IN_EFFECT))}) LIMIT 1", (run_id, *IN_EFFECT)):
            self._q("UPDATE runs SET status = 'partial', unverified = 0 WHERE id = ?", (run_id,))
            self._event(run_id, "run.status", {"status": "partial"})

    def _reap_stale(self) -> int:
        """Close stale runs (:meth:`RunsMixin._reap_stale`), and record every attempt whose
        process is gone as abandoned; return how many runs were closed."""
        closed = super()._reap_stale()
        for uid, rid, pid, started, kind in self._all(
                "SELECT id, run_id, pid, pid_started, kind FROM undos WHERE status = 'running'"):
            if _dead(pid, started):
                self._abandon(uid, rid, kind)
        return closed

    def attempt_step(self, attempt: Attempt, run_id: str, step: dict, settle: dict | None = None) -> None:
        """Record one step's outcome (chained in the run of the action it touched).

        ``settle``: the action's new state, written in the same transaction (``{"status",
        "note", "reverted", "expect"}``): an undo step costs one commit fewer. The step then
        rides in that status change's ``action.<status>`` event (its ``step`` key, with the
        attempt's row as the event's undo): one chained event per step, not two. Without a
        settle (or when its condition no longer holds) the step is an ``<kind>.step`` event.
        """
        uid = attempt.row(run_id)
        with self._guard(f"record {attempt.kind} step"), self._tx():
            if settle is not None and self._set(
                    step["action"], settle["status"], note=settle.get("note", ...), expect=settle.get("expect"),
                    step=step, undo_id=uid, **({"reverted": settle["reverted"]} if "reverted" in settle else {})):
                return
            self._event(run_id, f"{attempt.kind}.step", step, undo_id=uid, action_id=step.get("action"))

    def finish_attempt(self, attempt: Attempt, statuses: dict[str, str], report: Any) -> None:
        """Close every row of an attempt: each run's own outcome (``statuses``; a run missing
        from it ends ``nothing``) and the full report, stored once."""
        with self._guard(f"finish {attempt.kind}"), self._tx():
            ref = self.put_json(report)
            for rid, uid in attempt.rows.items():
                status = statuses.get(rid, "nothing")
                if status not in ATTEMPT_STATUSES:
                    raise ValueError(f"not an attempt status: {status}")
                self._q("UPDATE undos SET status = ?, ended_at = ?, report_ref = ? WHERE id = ?",
                        (status, now_iso(), ref, uid))
                self._event(rid, f"{attempt.kind}.end", {"status": status, "report": ref}, undo_id=uid)

    def undos(self, run_id: str) -> list[UndoRow]:
        """One run's rows of every attempt, oldest first."""
        with self._guard("read undos"):
            rows = self._all(f"SELECT {_UNDO_COLS} FROM undos WHERE run_id = ? ORDER BY started_at, {self.db.row_order}",
                             (run_id,))
        return [_undo_row(r) for r in rows]

    def reverts_between(self, run_ids: Iterable[str], since: str, until: str | None) -> set[str]:
        """Ids of the actions of ``run_ids`` claimed (``rolling_back``) or reverted
        (``rolled_back``) from ``since`` up to ``until`` (ISO times; None: no end). Attempts on a
        run exclude each other, so between an abandoned attempt's start and the next attempt's
        these are that attempt's own reverts (redo takes them over: adversarial review 11, F2)."""
        ids = list(run_ids)
        if not ids:
            return set()
        sql = (f"SELECT DISTINCT action_id FROM events WHERE run_id IN ({','.join('?' * len(ids))}) AND action_id "
               "IS NOT NULL AND kind IN ('action.rolling_back', 'action.rolled_back') AND at >= ?")
        params = [*ids, since]
        if until is not None:
            sql += " AND at < ?"
            params.append(until)
        with self._guard("read reverts"):
            return {r[0] for r in self._all(sql, params)}

    def attempt_rows(self, run_ids: Iterable[str] | None = None) -> list[UndoRow]:
        """Rows of every attempt (limited to ``run_ids``), oldest first."""
        with self._guard("read undos"):
            rows = self._all(f"SELECT {_UNDO_COLS} FROM undos ORDER BY started_at, {self.db.row_order}")
        out = [_undo_row(r) for r in rows]
        if run_ids is not None:
            keep = set(run_ids)
            out = [u for u in out if u.run_id in keep]
        return out
