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
from typing import Any, Iterable

from synartesis.journal.gates import GatesMixin
from synartesis.journal.liveness import process_state, start_token
from synartesis.journal.rows import ATTEMPT_KINDS, ATTEMPT_STATUSES, UndoRow, new_id, now_iso

__all__ = ["AttemptsMixin", "Attempt"]

_UNDO_COLS = "id, run_id, by, pid, started_at, ended_at, status, report_ref, kind, attempt, scope"


class Attempt:
    """A started attempt: its id, its kind and the row it keeps per run."""

    def __init__(self, attempt_id: str, kind: str, rows: dict[str, str]) -> None:
        self.id = attempt_id
        self.kind = kind
        self.rows = rows  # run id → undos row id

    def row(self, run_id: str) -> str:
        return self.rows[run_id]


def _undo_row(r: tuple) -> UndoRow:
    return UndoRow(*r[:10], scope=json.loads(r[10]) if r[10] else None)


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
                if pid and process_state(pid, started) != "gone":
                    return None
                self._q("UPDATE undos SET status = 'abandoned', ended_at = ? WHERE id = ?", (now_iso(), uid))
                self._event(rid, f"{old_kind}.abandoned", {"undo": uid}, undo_id=uid)
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

    def attempt_step(self, attempt: Attempt, run_id: str, step: dict, settle: dict | None = None) -> None:
        """Record one step's outcome (chained in the run of the action it touched).

        ``settle``: the action's new state, written in the same transaction (``{"status",
        "note", "reverted", "expect"}``): an undo step costs one commit fewer.
        """
        with self._guard(f"record {attempt.kind} step"), self._tx():
            if settle is not None:
                self._set(step["action"], settle["status"], note=settle.get("note", ...), expect=settle.get("expect"),
                          **({"reverted": settle["reverted"]} if "reverted" in settle else {}))
            self._event(run_id, f"{attempt.kind}.step", step, undo_id=attempt.row(run_id), action_id=step.get("action"))

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

    def attempt_rows(self, run_ids: Iterable[str] | None = None) -> list[UndoRow]:
        """Rows of every attempt (limited to ``run_ids``), oldest first."""
        with self._guard("read undos"):
            rows = self._all(f"SELECT {_UNDO_COLS} FROM undos ORDER BY started_at, {self.db.row_order}")
        out = [_undo_row(r) for r in rows]
        if run_ids is not None:
            keep = set(run_ids)
            out = [u for u in out if u.run_id in keep]
        return out
