"""Gates and approvals (DESIGN §7): held calls, decisions, and spending an approval.

A call is identified by its ``call_key`` (server, tool, canonical arguments). A held call's
retries reuse the waiting row in any run; an approval is single-use, expires after an hour and
is not tied to a run; a denial is told to the agent on every identical retry for an hour.
"""

from __future__ import annotations

from typing import Any

from synartesis.canonical import call_key
from synartesis.journal.rows import ACTION_COLS, APPROVAL_TTL_S, ActionRow, action_from_row, now_iso
from synartesis.journal.runs import RunsMixin

__all__ = ["GatesMixin"]


def _reached_server(a: ActionRow) -> bool:
    """Whether a row records its call sent to the server: not held or decided, and not a
    ``failed`` row refused before sending (held as a twin, blocked, never sent): a failed row
    reached the server only when its note gives the server's answer."""
    if a.status in ("gated", "approved", "denied"):
        return False
    if a.status == "failed":
        return (a.note or "").startswith(("the server answered", "the server asked", "the server refused"))
    return True


class _NotSpent(Exception):
    """The approval could not be marked used: roll the carrier back."""


class GatesMixin(RunsMixin):
    def hold(self, run_id: str, server: str, tool: str, cls: str, rule: str | None, args: Any,
             reason: str, action_id: str | None = None) -> tuple[ActionRow, bool]:
        """Record a held (``gated``) call, reusing a waiting twin; return (row, reused).

        A twin is any ``gated`` row for the same server, tool and canonical arguments, in any
        run: an agent that retries before anyone answered never piles up rows (defect 3).
        ``action_id``: a row of this call already recorded (e.g. its pre-read found nothing);
        it becomes the held row unless a twin exists, in which case it is marked ``failed``.
        """
        key = call_key(server, tool, args)
        with self._guard("hold action"), self._tx():
            twin = self._one(f"SELECT {ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'gated' "
                             "ORDER BY created_at LIMIT 1", (key,))
            if twin is not None:
                if action_id is not None:
                    self._set(action_id, "failed", note=f"held as action {twin[0]} (same call)")
                return action_from_row(twin), True
            if action_id is not None:
                self._set(action_id, "gated", note=reason)
                return self._get_action(action_id), False
            row = self._insert_action(run_id, server, tool, cls, rule, args, "gated", reason)
            assert row is not None
            return row, False

    def find_denial(self, server: str, tool: str, args: Any) -> ActionRow | None:
        """A denial of this exact call within the last hour (defect 2: the agent is told)."""
        key = call_key(server, tool, args)
        with self._guard("find denial"):
            row = self._one(f"SELECT {ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'denied' "
                            "AND decided_at >= ? ORDER BY decided_at DESC LIMIT 1", (key, now_iso(-APPROVAL_TTL_S)))
        return action_from_row(row) if row else None

    def take_approval(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                      args: Any, action_id: str | None = None) -> ActionRow | None:
        """Spend an unused approval of this exact call (under an hour old, any run).

        Returns the row that now carries the call (status ``pending``), or None.
        Same run and no ``action_id``: the approved row itself carries it. Otherwise
        ``action_id`` (a row of this call already recorded) or a new row in ``run_id`` gets the
        approver, and the approval is marked used by it. Single use (DESIGN §7).
        """
        try:
            return self._take_approval(run_id, server, tool, cls, rule, args, action_id)
        except _NotSpent:
            return None

    def _take_approval(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                       args: Any, action_id: str | None) -> ActionRow | None:
        key = call_key(server, tool, args)
        with self._guard("take approval"), self._tx():
            row = self._one(f"SELECT {ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'approved' "
                            "AND used_by IS NULL AND decided_at >= ? ORDER BY decided_at DESC LIMIT 1",
                            (key, now_iso(-APPROVAL_TTL_S)))
            if row is None:
                return None
            granted = action_from_row(row)
            if granted.run_id == run_id and action_id is None:
                self._set(granted.id, "pending", note=f"approved by {granted.decided_by}")
                return self._get_action(granted.id)
            carried = f"approved by {granted.decided_by} (as action {granted.id[:8]})"
            if action_id is None:
                carrier = self._insert_action(run_id, server, tool, cls, rule, args, "pending", carried,
                                              granted.decided_by, granted.decided_at)
                assert carrier is not None
            else:
                self._q("UPDATE actions SET decided_by = ?, decided_at = ?, note = ?, updated_at = ? WHERE id = ?",
                        (granted.decided_by, granted.decided_at, carried, now_iso(), action_id))
                self._action_event(action_id, "action.approved_carry")
                carrier = self._get_action(action_id)
            spent = self._q("UPDATE actions SET used_by = ?, updated_at = ? WHERE id = ? AND used_by IS NULL",
                            (carrier.id, now_iso(), granted.id))
            if spent.rowcount != 1:
                # not ours to spend (a team journal: another user's approval) or spent meanwhile:
                # nothing of this transaction stays, and the call is held as any other
                raise _NotSpent()
            self._action_event(granted.id, "action.approval_used")
            return carrier

    def decide(self, action_id: str, approve: bool, by: str, reason: str | None = None) -> bool:
        """Approve or deny a held call; False if it was no longer ``gated`` (a lost race).

        Raises:
            ConflictError: a team journal's member deciding on another user's run (issue 14).
        """
        if self.db.name == "postgresql":
            with self._guard("record decision"):
                row = self._one("SELECT run_id FROM actions WHERE id = ?", (action_id,))
            if row:
                self._check_may([row[0]], "approve or deny calls of")
        with self._guard("record decision"), self._tx():
            if approve:
                return self._set(action_id, "approved", note=None, expect=("gated",), decided_by=by,
                                 decided_at=now_iso())
            return self._set(action_id, "denied", note=None, expect=("gated",), decided_by=by,
                             decided_at=now_iso(), decision_note=reason or "denied")

    def settle_held_twins(self, sent: ActionRow) -> list[str]:
        """Settle the held calls made moot by ``sent``, the same call (server, tool, canonical
        arguments) let through without an approval (a held call, or an approved one whose
        approval nobody spent yet): a new file's write held as a creation
        whose file exists by the time the agent makes it again. Each waiting twin becomes
        ``failed`` ("never sent"), so it no longer waits for a decision that means nothing,
        keeps its run from ``prune`` or offers an approval its reason no longer explains (new
        user round 15, #1). Returns the ids settled (usually none: one probe of the index of
        held calls, with no write lock taken)."""
        with self._guard("settle held calls"):
            waiting = [(r[0], r[1]) for r in self._all(
                "SELECT id, status FROM actions WHERE call_key = ? AND status = 'gated' AND id != ? "
                "UNION ALL SELECT id, status FROM actions WHERE call_key = ? AND status = 'approved' "
                "AND used_by IS NULL AND id != ?", (sent.call_key, sent.id, sent.call_key, sent.id))]
            if not waiting:
                return []
            with self._tx():
                # an approval nobody spent is withdrawn too: a later identical call must not
                # carry it (adversarial review 17, F2: spent an hour later, its row took a write
                # made after this one, out of the journal's order)
                return [aid for aid, status in waiting if self._supersede(aid, status, sent)]

    def _supersede(self, action_id: str, status: str, sent: ActionRow) -> bool:
        """Mark a held (or approved, unspent) call ``failed``, never sent, because ``sent`` went
        through; False when it was no longer in ``status`` (inside the caller's transaction)."""
        note = (f"never sent: the same call went through later as action {sent.id[:8]} without needing "
                "approval, so this one no longer waits for a decision"
                + ("; its approval is withdrawn" if status == "approved" else ""))
        # approved between the caller's read and this update: withdrawn all the same
        return self._set(action_id, "failed", expect=(status, "approved") if status == "gated" else (status,), note=note)

    def superseded_holds(self) -> list[tuple[ActionRow, ActionRow]]:
        """Held calls whose identical call was since let through (journals written before
        :meth:`settle_held_twins` existed), as (held, sent) pairs: ``sent`` is the first later
        row of the same call that reached the server (not held, denied, approved or refused).
        One scan of the actions table; ``prune`` and the held-call listings settle them."""
        with self._guard("find superseded held calls"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM actions WHERE call_key IN "
                             "(SELECT call_key FROM actions WHERE status = 'gated') ORDER BY gseq")
        waiting: dict[str, list[ActionRow]] = {}
        out = []
        for a in map(action_from_row, rows):
            if a.status == "gated":
                waiting.setdefault(a.call_key, []).append(a)
            elif _reached_server(a) and waiting.get(a.call_key):
                out.extend((h, a) for h in waiting.pop(a.call_key))
        return out

    def settle_superseded(self) -> int:
        """Settle every held call :meth:`superseded_holds` finds; returns how many."""
        n = 0
        for held, sent in self.superseded_holds():
            with self._guard("settle held calls"), self._tx():
                n += self._supersede(held.id, "gated", sent)
        return n

    def list_gated(self) -> list[ActionRow]:
        """Every held call across all runs, oldest first."""
        with self._guard("list held calls"):
            rows = self._all(f"SELECT {ACTION_COLS} FROM actions WHERE status = 'gated' ORDER BY created_at, gseq")
        return [action_from_row(r) for r in rows]

    def decisions(self, run_ids: list[str] | None = None) -> list[tuple[str, str, ActionRow]]:
        """Every approval and denial a person made, oldest first, as (when, ``approved`` |
        ``denied``, the held call's row as it is now); ``run_ids`` limits it to those runs.
        Read from the event chain: a spent approval's row has moved on, its decision has not."""
        with self._guard("read decisions"):
            rows = self._all("SELECT e.at, e.kind, " + ", ".join("a." + c.strip() for c in ACTION_COLS.split(","))
                             + " FROM events e JOIN actions a ON a.id = e.action_id "
                             "WHERE e.kind IN ('action.approved', 'action.denied') ORDER BY e.id")
        keep = None if run_ids is None else set(run_ids)
        out = []
        for r in rows:
            a = action_from_row(r[2:])
            if keep is None or a.run_id in keep:
                out.append((r[0], r[1].split(".", 1)[1], a))
        return out
