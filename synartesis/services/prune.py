"""`prune`: delete whole runs, never one that is active, holds a call, or whose undo halted."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from synartesis.errors import UsageError
from synartesis.journal import Journal, RunRow

__all__ = ["PrunePlan", "plan_prune", "apply_prune"]


@dataclass
class PrunePlan:
    delete: list[RunRow] = field(default_factory=list)
    kept: list[tuple[RunRow, str]] = field(default_factory=list)
    bytes_before: int = 0


def plan_prune(j: Journal, refs: list[str], older_than_days: float | None) -> PrunePlan:
    """Which runs would go and which are kept (with why). A held call an identical call
    since went through without is settled first (it waits for nothing and would keep its run).

    Raises:
        UsageError: neither runs nor ``--older-than`` given, both given, or a run does not match.
    """
    if bool(refs) == (older_than_days is not None):
        raise UsageError("name the runs to prune, or give --older-than DAYS (not both)")
    if refs:
        candidates = [j.find_run(r) for r in refs]
    else:
        import math
        if older_than_days is None or not math.isfinite(older_than_days) or older_than_days < 0:
            raise UsageError("--older-than needs a number of days, 0 or more")
        cutoff = (datetime.now(timezone.utc) - timedelta(days=older_than_days)).isoformat(timespec="milliseconds")
        candidates = [r for r in j.list_runs() if r.started_at.replace("Z", "+00:00") < cutoff]
    if any(r.counts.get("gated") for r in candidates) and j.settle_superseded():
        candidates = [j.find_run(r.id) for r in candidates]  # their counts changed
    plan = PrunePlan(bytes_before=j.size_on_disk())
    for r in candidates:
        why = j.prunable(r)
        if why:
            plan.kept.append((r, why))
        else:
            plan.delete.append(r)
    _keep_sessions_whole(j, plan)
    _keep_later_writes(j, plan)
    return plan


def _keep_later_writes(j: Journal, plan: PrunePlan) -> None:
    """Keep a going run that a staying run's undo or redo needs to halt on:
    - its write, still in effect, followed a staying run's write (in effect, or undone and so
      maybe redone) on the same resource (:class:`synartesis.undo.engine.OtherRuns`: adversarial
      review 20, F4, and review 22, F1: the run a halt named was pruned, and the next undo or
      redo overwrote its write unnamed);
    - its reverted call left what a staying call in effect replaced
      (:meth:`synartesis.undo.engine._Walk.undone_under`: a new user's round 20, #2).
    A run kept counts as staying for the rest, until nothing moves (review 22, F2). One index
    of the going runs' writes a round, so a prune of many runs stays linear (F5: 65 s for 125).
    Pruning such runs together is allowed."""
    if not plan.delete:
        return
    from synartesis.journal import IN_EFFECT
    from synartesis.journal.blobs import DamagedPayload
    from synartesis.undo.engine import OtherRuns, later_than, order_known, prior_state
    going = {r.id: r for r in plan.delete}
    runs = {r.id: r for r in j.list_runs()}
    acts = {rid: [a for a in j.actions(rid) if a.cls != "readonly"] for rid in runs}
    moved = True
    while moved and going:
        moved = False
        staying = {rid: r for rid, r in runs.items() if rid not in going}
        among = [b for rid in going for b in acts.get(rid, []) if b.status in IN_EFFECT]
        watch = [a for rid in staying for a in acts.get(rid, []) if a.status in IN_EFFECT or a.status == "rolled_back"]
        if among and watch:
            others = OtherRuns(j, staying, among=among)
            for a in watch:
                for b, _ in others.after(a):
                    if b.run_id in going:
                        moved = True
                        when = "after" if order_known(a, b) else \
                            "perhaps after (the journal's order of the two is damaged; `synartesis audit`)"
                        _keep(plan, going.pop(b.run_id), f"its {b.qualified} ({b.run_id[:8]}:{b.seq}) wrote the same "
                              f"resource {when} {a.run_id[:8]}:{a.seq}, whose run stays: that run's undo or redo needs "
                              "it to know it must stop there; prune them together")
        replaced: dict[str, list] = {}
        for a in watch:
            if a.status in IN_EFFECT and a.prior == "captured" and a.snapshot_ref:
                try:
                    ref = j.payload_ref(prior_state(a, j.get_json(a.snapshot_ref)))
                except DamagedPayload:  # its undo cannot put that state back: nothing to bring back
                    continue
                if ref:
                    replaced.setdefault(ref, []).append(a)
        for b in j.reverted_leaving(replaced) if replaced and going else ():
            later = [a for a in replaced.get(b.post_ref or "", []) if later_than(a, b)]
            if b.run_id in going and later:
                moved = True
                _keep(plan, going.pop(b.run_id), f"its reverted {b.qualified} ({b.run_id[:8]}:{b.seq}) left what "
                      f"{later[0].run_id[:8]}:{later[0].seq} replaced, whose run stays: its undo needs this run to "
                      "know not to bring that change back; prune them together")


def _keep(plan: PrunePlan, run: RunRow, why: str) -> None:
    plan.delete.remove(run)
    plan.kept.append((run, why))


def _keep_sessions_whole(j: Journal, plan: PrunePlan) -> None:
    """Keep a run whose session was undone across its runs, with something of that undo still to
    redo, when another run of that session stays: the attempt's steps on this run are what a redo of the others compares
    with (adversarial review 16, F8: pruning one run of such a session made the redo of the
    rest halt on "drift" against a state from the pruned run). Pruning every run of the
    session together is allowed."""
    going = {r.id for r in plan.delete}
    by_session: dict[str, list] = {}
    for r in j.list_runs():
        if r.session_id:
            by_session.setdefault(r.session_id, []).append(r)
    spanning: set[str] = set()
    for u in j.attempt_rows():
        if (u.scope or {}).get("session"):
            spanning.add(u.scope["session"])
    from synartesis.undo.redo import redoable
    redo_pending: dict[str, bool] = {}
    for r in list(plan.delete):
        siblings = [s for s in by_session.get(r.session_id or "", []) if s.id != r.id]
        staying = [s for s in siblings if s.id not in going]
        if r.session_id in spanning and staying and r.session_id not in redo_pending:
            redo_pending[r.session_id] = redoable(j, [s.id for s in by_session[r.session_id]]) is not None
        if staying and redo_pending.get(r.session_id or ""):
            plan.delete.remove(r)
            plan.kept.append((r, f"its session {r.session_id[:10]} was undone across its runs and can still be "
                                  f"redone, and {len(staying)} of them stay{'s' if len(staying) == 1 else ''} "
                                  f"({', '.join(s.id[:8] for s in staying)}): prune them together"))


def apply_prune(j: Journal, plan: PrunePlan) -> int:
    """Delete the planned runs; return the journal's size in bytes afterwards."""
    if plan.delete:
        j.prune([r.id for r in plan.delete])
    return j.size_on_disk()
