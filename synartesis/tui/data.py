"""The console's only door to the journal: what it lists (agent sessions with their runs,
held calls, one session's or run's timeline), the detail of one action, and decisions. Nothing else in ``synartesis.tui`` reads
or writes the journal, except the undo / live-check jobs (``tui.jobs``), which call the same
engine the CLI calls on connections of their own.

The live follow reads on a thread of its own (:meth:`ConsoleData.poll`), so a large journal or
a busy machine never stalls the keyboard: a key (``d`` for deny) is handled at once, whatever
the journal is doing. Small reads a key asks for (one run's actions, one action's payloads,
a decision) run on the caller's thread, on a second connection.

The console never creates a journal.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from synartesis.errors import JournalError, NoJournalError, PolicyError, SynartesisError
from synartesis.journal import ActionRow, Journal, RunRow
from synartesis.policy.model import Policy, ProductionHit
from synartesis.services.held import production_hits
from synartesis.services.runs import ActionView, Decision, action_view, decide
from synartesis.services.sessions import SessionView, group_sessions

__all__ = ["Snapshot", "ConsoleData", "read_snapshot", "quiet_policy"]


@dataclass(frozen=True)
class Snapshot:
    """What the console shows, read in one go.

    Attributes:
        runs: every run, newest first; None when there is no journal to read (``problem``).
        held: every call awaiting approval, across runs (oldest first).
        open_run: the fresh row of the run or session whose timeline is open (None: none
            open, or it is no longer in the journal).
        actions: its actions, in order (a session's across its runs, journal-wide).
        problem: why there is nothing to show (no journal yet, or it cannot be read).
        error: a read that failed this time (shown; the next poll tries again).
        sessions: every agent session with its runs (newest activity first).
        production: held call id → what about it matches the policy's ``production_patterns``.
    """

    runs: list[RunRow] | None
    held: list[ActionView] = field(default_factory=list)
    open_run: RunRow | SessionView | None = None
    actions: list[ActionView] = field(default_factory=list)
    problem: str | None = None
    error: str | None = None
    sessions: list[SessionView] = field(default_factory=list)
    production: dict[str, list[ProductionHit]] = field(default_factory=dict)


def read_snapshot(j: Journal, open_run: str | None = None, policy: Policy | None = None) -> Snapshot:
    """Everything the console lists, from the open journal ``j`` (the piped frame uses it too).

    Args:
        open_run: the id of the run or session (``s-…``) whose timeline is open: its actions
            are read as well.
        policy: for the production flags of held calls (None: the default patterns).
    Raises:
        JournalError: the journal cannot be read.
    """
    runs = j.list_runs()
    sessions = group_sessions(runs, j.list_sessions())
    held = [action_view(j, a) for a in j.list_gated()]
    production = {v.row.id: hits for v in held if (hits := production_hits(policy, v.row.server, v.args))}
    fresh: RunRow | SessionView | None = None
    actions: list[ActionView] = []
    if open_run and open_run.startswith("s-"):
        fresh = next((s for s in sessions if s.id == open_run), None)
        if fresh is not None:
            actions = [action_view(j, a) for a in j.actions_of([r.id for r in fresh.runs])]
    elif open_run:
        fresh = next((r for r in runs if r.id == open_run), None)
        if fresh is not None:
            actions = [action_view(j, a) for a in j.actions(fresh.id)]
    return Snapshot(runs, held, fresh, actions, sessions=sessions, production=production)


def quiet_policy(path: Path | None) -> Policy | None:
    """The policy at ``path`` for what the console only decorates with (the production flags):
    None when there is none or it does not load (``check`` is what reports that)."""
    if path is None or not path.exists():
        return None
    from synartesis.policy import load_policy
    try:
        return load_policy(path)
    except PolicyError:
        return None


class ConsoleData:
    """The journal as the console sees it (see the module docstring).

    Args:
        path: the journal file; it may not exist yet (polling waits for it).
        retry: seconds to wait before opening again after a journal that could not be read.
        policy: the policy file, for the production flags of held calls (it may not exist; a
            policy that does not load flags with the default patterns).
    """

    def __init__(self, path: Path, retry: float = 5.0, policy: Path | None = None) -> None:
        self.path = Path(path)
        self.retry = retry
        self.policy_path = policy
        self._policy: tuple[float, Policy | None] | None = None  # (mtime, policy) read on the pool thread
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synartesis-console-journal")
        self._poll_j: Journal | None = None  # used only on the pool's thread
        self._version: int | None = None
        self._retry_at = 0.0
        self._keys_j: Journal | None = None  # used only on the caller's (the event loop's) thread

    # -- the live follow (pool thread) -----------------------------------------------------
    def _open_poll(self) -> str | None:
        if self._poll_j is not None:
            return None
        if time.monotonic() < self._retry_at:
            return "waiting"
        try:
            self._poll_j = Journal.open(self.path, create=False)
        except NoJournalError:
            return (f"no journal at {self.path} yet; it appears at the first tool call made through a wrapped server. "
                    "Waiting for it…")
        except JournalError as exc:
            self._retry_at = time.monotonic() + self.retry
            return f"{exc.message} (looking again every few seconds)"
        self._version = None
        return None

    def _poll(self, open_run: str | None, force: bool) -> Snapshot | None:
        problem = self._open_poll()
        if problem == "waiting":
            return None
        if problem is not None:
            return Snapshot(None, problem=problem)
        assert self._poll_j is not None
        try:
            version = self._poll_j.data_version()
            if version == self._version and not force:
                return None
            self._version = version
            return read_snapshot(self._poll_j, open_run, self._load_policy())
        except SynartesisError as exc:
            return Snapshot([], error=exc.message)
        except Exception as exc:  # noqa: BLE001 - a live view must survive a bad read; say it, retry next tick
            return Snapshot([], error=f"could not read the journal: {type(exc).__name__}: {exc}")

    def _load_policy(self) -> Policy | None:
        """The policy, read again only when its file changed (errors: the defaults)."""
        if self.policy_path is None:
            return None
        try:
            mtime = self.policy_path.stat().st_mtime
        except OSError:
            return None
        if self._policy is None or self._policy[0] != mtime:
            self._policy = (mtime, quiet_policy(self.policy_path))
        return self._policy[1]

    def poll_now(self, open_run: str | None = None, force: bool = False) -> Snapshot | None:
        """:meth:`poll`, waiting for it on this thread (for the first frame)."""
        return self._pool.submit(self._poll, open_run, force).result()

    async def poll(self, open_run: str | None = None, force: bool = False) -> Snapshot | None:
        """Read everything again if another connection committed since the last read (or
        ``force``), on the console's journal thread.

        Args:
            open_run: the id of the run or session whose timeline is open (its actions are read too).
        Returns:
            A Snapshot, or None when nothing changed (or a failed open is not due for a retry).
            Errors are in the Snapshot, never raised.
        """
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._poll, open_run, force)

    # -- reads and writes a key asks for (caller's thread) ---------------------------------
    def _keys(self) -> Journal:
        if self._keys_j is None:
            self._keys_j = Journal.open(self.path, create=False)
        return self._keys_j

    def actions(self, target: RunRow | SessionView) -> list[ActionView]:
        """A run's actions (seq order) or a session's (journal-wide order), with their
        arguments and inverses.

        Raises:
            JournalError: the journal cannot be read.
        """
        j = self._keys()
        if isinstance(target, SessionView):
            return [action_view(j, a) for a in j.actions_of([r.id for r in target.runs])]
        return [action_view(j, a) for a in j.actions(target.id)]

    def detail(self, row: ActionRow) -> ActionView:
        """Everything recorded about one action (arguments, result, snapshot, post-state,
        verify read, inverse).

        Raises:
            JournalError: the journal cannot be read.
        """
        return action_view(self._keys(), row, full=True)

    def decide(self, row: ActionRow, approve: bool, by: str, reason: str | None) -> Decision:
        """Approve or deny one held call (``services.runs.decide``); a lost race is reported
        in the Decision, not raised.

        Raises:
            JournalError: the journal cannot be written.
        """
        (result,) = decide(self._keys(), [row], approve, by, reason)
        return result

    def close(self) -> None:
        """Close both connections and stop the journal thread."""
        if self._keys_j is not None:
            self._keys_j.close()
            self._keys_j = None

        def shut() -> None:
            if self._poll_j is not None:
                self._poll_j.close()
                self._poll_j = None

        try:
            self._pool.submit(shut).result(timeout=10)
        except Exception:  # noqa: BLE001 - closing must not raise
            pass
        self._pool.shutdown(wait=False)
