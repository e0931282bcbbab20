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
    return plan


def apply_prune(j: Journal, plan: PrunePlan) -> int:
    """Delete the planned runs; return the journal's size in bytes afterwards."""
    if plan.delete:
        j.prune([r.id for r in plan.delete])
    return j.size_on_disk()
