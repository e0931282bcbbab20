"""The console's long jobs: undo (dry run or real), the live check, and what a held call would
change. Each opens its own
connection to the journal (the console's polling connection then sees the job's commits through
``data_version``) and calls the same engine functions the CLI calls, with the policy the CLI
would load (``synartesis undo`` / ``show --live``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from synartesis.journal import ActionRow, Journal
from synartesis.policy import Policy, load_policy
from synartesis.services.held import HeldPreview, preview_held
from synartesis.services.launch_env import entry_env
from synartesis.undo import LiveReport, UndoOptions, UndoReport, live_check, undo_run

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


async def undo(target: Target, run_id: str, dry_run: bool) -> UndoReport:
    """Undo the whole run or session ``run_id`` (``dry_run``: the real plan, nothing sent or
    written).

    Returns the engine's UndoReport. Raises what ``undo_run`` raises (ConflictError for an
    active run or a concurrent undo, UsageError, JournalError, PolicyError).
    """
    policy = load_policy_at(target.policy)
    with Journal.open(target.journal, create=False) as j:
        return await undo_run(j, UndoOptions(run=run_id, dry_run=dry_run, by=target.by, policy=policy,
                                             entry_env=entry_env))


async def live(target: Target, run_id: str) -> LiveReport:
    """``show RUN|SESSION --live``: read every resource it wrote; nothing is written."""
    policy = load_policy_at(target.policy)
    with Journal.open(target.journal, create=False) as j:
        return await live_check(j, run_id, policy, entry_env=entry_env)


async def held_preview(target: Target, row: ActionRow) -> HeldPreview:
    """What the held call ``row`` would change (``services.held``): its rule's pre-read, run
    now on its server; nothing is sent but the read."""
    policy = load_policy_at(target.policy)
    with Journal.open(target.journal, create=False) as j:
        [preview] = await preview_held(j, [row], policy, entry_env=entry_env)
    return preview
