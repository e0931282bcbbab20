"""Reading actions and deciding held calls: what ``show``, ``gates``, ``approve`` and ``deny`` use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synartesis.errors import ConflictError, UsageError
from synartesis.journal import ActionRow, Journal, RunRow

__all__ = ["ActionView", "run_summary", "action_view", "decide", "Decision",
           "pick_gated", "CLASS_BADGE", "class_words"]

CLASS_BADGE = {"readonly": "·", "reversible": "←", "compensable": "≈", "irreversible": "!"}


_HELD = ("gated", "approved", "denied")


def class_words(row: ActionRow, has_inverse: bool) -> str:
    """An action's class as ``show`` and ``gates`` print it, never contradicting what happens
    to this call: the class belongs to its rule, so a held call of a reversible rule (a write
    that creates a file: nothing to restore) is ``reversible rule, held``, and an applied one
    with no undo recorded says so (finding 7)."""
    if row.cls in ("readonly", "irreversible"):
        return row.cls
    if row.status in _HELD:
        return f"{row.cls} rule, this call held"
    if row.status in ("applied", "unknown", "unrecoverable") and not has_inverse:
        return f"{row.cls} rule, no undo recorded for this call"
    return row.cls


@dataclass(frozen=True)
class ActionView:
    """An action with its payloads loaded (for ``show``, ``gates`` and the console)."""

    row: ActionRow
    args: Any
    inverse: list | None
    snapshot: Any = None
    result: Any = None
    post: Any = None
    verify: Any = None

    def as_json(self, full: bool = False) -> dict:
        r = self.row
        out: dict[str, Any] = {
            "id": r.id, "run": r.run_id, "seq": r.seq, "server": r.server, "tool": r.tool,
            "class": r.cls, "rule": r.rule, "status": r.status, "label": r.label, "note": r.note,
            "prior": r.prior, "args": self.args, "inverse": self.inverse,
            "decidedBy": r.decided_by, "decidedAt": r.decided_at, "reason": r.decision_note,
            "usedBy": r.used_by, "createdAt": r.created_at, "updatedAt": r.updated_at,
        }
        if full:
            out.update(snapshot=self.snapshot, result=self.result, post=self.post, verify=self.verify)
        return out


def run_summary(run: RunRow) -> dict:
    """JSON shape of a run in ``list --json`` (``status`` as stored; ``statusText`` as shown:
    a run whose proxy is gone reads as ended, ``compensated`` carries its unverified count)."""
    return {"id": run.id, "session": run.session_id, "label": run.label, "client": run.client,
            "startedAt": run.started_at, "endedAt": run.ended_at, "status": run.status,
            "statusText": run.shown_status, "unverified": run.unverified, "stale": run.stale,
            "note": run.end_note or ("its proxy is gone; it is closed on the next write to the journal" if run.stale else None),
            "servers": sorted(run.servers), "actions": run.actions, "unknown": run.unknown,
            "held": run.counts.get("gated", 0), "host": run.host}


def action_view(j: Journal, a: ActionRow, full: bool = False) -> ActionView:
    """Load an action's payloads (``full`` adds snapshot, result, post-state, verify read)."""
    if not full:
        return ActionView(a, j.get_json(a.args_ref), j.get_json(a.inverse_ref))
    return ActionView(a, j.get_json(a.args_ref), j.get_json(a.inverse_ref), j.get_json(a.snapshot_ref),
                      j.get_json(a.result_ref), j.get_json(a.post_ref), j.get_json(a.verify_ref))


@dataclass(frozen=True)
class Decision:
    action: ActionRow
    ok: bool
    message: str


def pick_gated(j: Journal, ref: str | None, all_: bool) -> list[ActionRow]:
    """The held calls a decision applies to.

    Raises:
        UsageError: no id and several waiting; nothing matches; a full id that is not held.
        ConflictError: the named action exists but is no longer awaiting approval.

    Held calls an identical call since went through without have nothing to decide: they are
    settled first (:meth:`Journal.settle_superseded`).
    """
    j.settle_superseded()
    gated = j.list_gated()
    if all_:
        return gated
    if ref is None:
        # Never decide a call the person has not named: one could arrive between `gates` and this.
        if not gated:
            raise UsageError("nothing is awaiting approval")
        raise UsageError(f"name the held call (or use --all); {len(gated)} awaiting approval: "
                         + ", ".join(f"{a.id[:8]} {a.qualified}" for a in gated))
    if not ref or not all(c in "0123456789abcdef-" for c in ref.lower()):
        raise UsageError(f"{ref!r} is not an action id (ids look like 1e1983ae)")
    hits = [a for a in gated if a.id == ref or a.id.startswith(ref.lower())]
    if len(hits) > 1:
        raise UsageError(f"{ref} matches {len(hits)} held calls; give more of the id")
    if not hits:
        row = j.find_action(ref)  # raises UsageError when nothing matches at all
        why = f": {row.note}" if row.status == "failed" and row.note else ""  # e.g. settled: the same call went through
        raise ConflictError(f"{row.id[:8]} is no longer awaiting approval (it is {row.label}{why})")
    return hits


def decide(j: Journal, targets: list[ActionRow], approve: bool, by: str, reason: str | None = None) -> list[Decision]:
    """Approve or deny each target; a lost race is reported, not raised."""
    out = []
    for a in targets:
        ok = j.decide(a.id, approve, by, reason)
        if ok:
            msg = (f"approved {a.qualified} {a.id[:8]} · now tell the agent to make the same call again" if approve
                   else f"denied {a.qualified} {a.id[:8]} · the agent will be told on its next try")
        else:
            msg = f"{a.id[:8]} is no longer awaiting approval (it is {j.get_action(a.id).label})"
        out.append(Decision(a, ok, msg))
    return out
