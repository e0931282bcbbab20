"""The console's long jobs: undo (dry run or real), the live check, and what a held call would
change. Each opens its own
connection to the journal (the console's polling connection then sees the job's commits through
``data_version``) and calls the same engine functions the CLI calls, with the policy the CLI
would load (``synartesis undo`` / ``show --live``).

The engines block (the synchronous upstream), so each job runs on a worker thread while the
console's event loop stays free. Cancelling a job (esc) sets its :class:`Stop`: the servers it
started are killed at once, no further step is taken, and a request that was in flight fails as
``closed`` and is recorded as such (an inverse in flight leaves its action ``rolling_back``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from synartesis.errors import ConflictError, LiveRunError
from synartesis.journal import ActionRow, Journal
from synartesis.policy import Policy, load_policy
from synartesis.services.held import HeldPreview, preview_held
from synartesis.services.launch_env import entry_env
from synartesis.undo import LiveReport, UndoOptions, UndoReport, live_check, undo_run
from synartesis.undo.servers import Stop

__all__ = ["Target", "load_policy_at", "undo", "live", "held_preview"]


@dataclass(frozen=True)
class Target:
    """Where the console works: the journal, the policy path (may not exist), who acts."""

    journal: Path
    policy: Path
    by: str


def load_policy_at(path: Path) -> Policy | None:
    """The policy at ``path``, or None when there is none (as ``synartesis undo`` does).

    Raises:
        PolicyError: the file exists but is not a valid policy.
    """
    if not path.exists():
        return None
    return load_policy(path)


async def _on_thread(job: Callable[[Stop], Any]) -> Any:
    """Run ``job(stop)`` on a worker thread; cancelled, set ``stop`` (its servers die now) and
    let the cancellation go on while the thread finishes what it was doing."""
    stop = Stop()
    try:
        return await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(job, stop)))
    except asyncio.CancelledError:
        stop.set()
        raise


async def undo(target: Target, run_id: str, dry_run: bool) -> UndoReport:
    """Undo the whole run or session ``run_id`` (``dry_run``: the real plan, nothing sent or
    written).

    Returns the engine's UndoReport. Raises what ``undo_run`` raises (ConflictError for an
    active run or a concurrent undo, UsageError, JournalError, PolicyError).
    """
    def job(stop: Stop) -> UndoReport:
        policy = load_policy_at(target.policy)
        with Journal.open(target.journal, create=False) as j:
            return undo_run(j, UndoOptions(run=run_id, dry_run=dry_run, by=target.by, policy=policy,
                                           entry_env=entry_env, stop=stop))
    try:
        return await _on_thread(job)
    except LiveRunError as exc:  # the CLI's advice names --force, which the console does not have
        raise ConflictError(f"{exc.what} still active (an agent may still be writing through it): stop the "
                            "agent (quit its client: the run ends when its proxy exits), then press u again; "
                            f"to undo it while it runs, use `synartesis undo {run_id} --force` in a terminal") from None


async def live(target: Target, run_id: str) -> LiveReport:
    """``show RUN|SESSION --live``: read every resource it wrote; nothing is written."""
    def job(stop: Stop) -> LiveReport:
        policy = load_policy_at(target.policy)
        with Journal.open(target.journal, create=False) as j:
            return live_check(j, run_id, policy, entry_env=entry_env, stop=stop)
    return await _on_thread(job)


async def held_preview(target: Target, row: ActionRow) -> HeldPreview:
    """What the held call ``row`` would change (``services.held``): its rule's pre-read, run
    now on its server; nothing is sent but the read."""
    def job(stop: Stop) -> HeldPreview:
        policy = load_policy_at(target.policy)
        with Journal.open(target.journal, create=False) as j:
            [preview] = preview_held(j, [row], policy, entry_env=entry_env, stop=stop)
        return preview
    return await _on_thread(job)
