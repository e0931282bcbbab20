"""Undo and the live check over several runs at once (a conversation of the window), through
the same engine as ``synartesis undo`` / ``show --live`` (:mod:`synartesis.undo.engine`).

A conversation in the window talks to several servers, one proxy (so one run) each. Undoing it
newest first across all of them means walking the runs in *segments*: the newest stretch of
actions that belong to one run is undone with ``undo RUN --to SEQ``, then the next stretch of
another run, and so on; each call is exactly what the CLI would run, with its halts. (Agent
sessions in the journal will give this a single ``undo SESSION``; until then this is the order.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from synartesis.journal import ActionRow, Journal
from synartesis.undo import LiveReport, UndoOptions, UndoReport, live_check, undo_run

__all__ = ["Segment", "segments", "plan_targets", "undo_segments", "live_runs", "load_policy_at"]

_NOT_UNDONE = ("failed", "denied", "gated", "approved", "rolled_back")


@dataclass(frozen=True)
class Segment:
    """``undo RUN --to SEQ`` (``to`` None: the whole run)."""

    run: str
    to: int | None


def _undoable(a: ActionRow) -> bool:
    return a.cls != "readonly" and a.status not in _NOT_UNDONE


def segments(actions: Iterable[ActionRow], since: tuple[str, int] | None = None) -> list[Segment]:
    """The undo calls that put back ``actions`` (from one or more runs) newest first.

    Args:
        actions: every action of the runs concerned.
        since: ``(run, seq)``: undo only back to this action (it included): in its run, seqs
            from it up; in the other runs, what was recorded after it.
    Returns:
        Segments, newest first. A run's oldest segment has ``to`` None when it reaches the run's
        first action, so a clean undo of everything ends the run ``rolled_back``.
    """
    acts = list(actions)
    by_run: dict[str, list[ActionRow]] = {}
    for a in acts:
        by_run.setdefault(a.run_id, []).append(a)
    cut = None
    if since is not None:
        anchor = next((a for a in acts if a.run_id == since[0] and a.seq == since[1]), None)
        cut = anchor.created_at if anchor else None

    def in_scope(a: ActionRow) -> bool:
        if since is None:
            return True
        if a.run_id == since[0]:
            return a.seq >= since[1]
        return cut is not None and a.created_at > cut

    wanted = sorted((a for a in acts if in_scope(a) and _undoable(a)), key=lambda a: (a.created_at, a.seq), reverse=True)
    out: list[Segment] = []
    for a in wanted:
        if out and out[-1].run == a.run_id:
            out[-1] = Segment(a.run_id, a.seq)  # newest first, so each action lowers the stretch's floor
        else:
            out.append(Segment(a.run_id, a.seq))
    # A run's last stretch covers everything undoable left in it: undo the whole run (to None),
    # which is the same walk and lets a clean undo end the run rolled_back.
    result = []
    for i, s in enumerate(out):
        last = not any(t.run == s.run for t in out[i + 1:])
        below = any(_undoable(x) and s.to is not None and x.seq < s.to for x in by_run[s.run])
        result.append(Segment(s.run, None) if last and not below else s)
    return result


def plan_targets(segs: list[Segment]) -> list[Segment]:
    """One dry run per run (its lowest ``to``), in the order the runs are first undone."""
    order: list[str] = []
    lowest: dict[str, int | None] = {}
    for s in segs:
        if s.run not in lowest:
            order.append(s.run)
            lowest[s.run] = s.to
        elif lowest[s.run] is not None:
            lowest[s.run] = None if s.to is None else min(lowest[s.run], s.to)  # type: ignore[type-var]
    return [Segment(r, lowest[r]) for r in order]


def load_policy_at(path: Path):
    """The policy at ``path``, or None when there is none (as ``synartesis undo`` does).

    Raises:
        PolicyError: the file exists but is not a valid policy.
    """
    from synartesis.policy import load_policy
    return load_policy(path) if path.exists() else None


def undo_segments(journal: Path, policy_path: Path, segs: list[Segment], *, dry_run: bool, by: str,
                  replan: bool = False, force: bool = False, yes: bool = False) -> list[UndoReport]:
    """Run ``undo RUN --to SEQ`` for each segment in order; stop after the first halt (or a
    ``--force`` preview that found something to overwrite). A dry run plans each run once.

    Returns the engine's reports, in order. Raises what :func:`undo_run` raises
    (ConflictError for an active run or a concurrent undo, UsageError, JournalError), and
    PolicyError for a malformed policy.
    """
    from synartesis.services.launch_env import entry_env

    policy = load_policy_at(policy_path)
    todo = plan_targets(segs) if dry_run or (force and not yes) else segs
    reports: list[UndoReport] = []
    with Journal.open(journal, create=False) as j:
        for s in todo:
            report = undo_run(j, UndoOptions(run=s.run, to=s.to, dry_run=dry_run, replan=replan, force=force,
                                                   yes=yes, by=by, policy=policy, entry_env=entry_env))
            reports.append(report)
            if report.halted and not dry_run:
                break
    return reports


def live_runs(journal: Path, policy_path: Path, runs: list[str]) -> list[LiveReport]:
    """``show RUN --live`` for each run (nothing is written, never stops early)."""
    from synartesis.services.launch_env import entry_env

    policy = load_policy_at(policy_path)
    with Journal.open(journal, create=False) as j:
        return [live_check(j, r, policy, entry_env=entry_env) for r in runs]
