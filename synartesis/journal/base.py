"""What every part of the journal shares: the backend, transactions and error mapping.

Each concern of the journal (payload blobs, the event chain and audit, runs and sessions,
actions, gates, undo attempts) is a mixin over :class:`JournalBase`, in a module of its own;
:class:`synartesis.journal.facade.Journal` puts them together as the one object callers use.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from synartesis.errors import JournalError
from synartesis.journal.rows import ALL_ACTIONS

if TYPE_CHECKING:
    from synartesis.journal.sqlite import SqliteBackend

__all__ = ["JournalBase"]


class JournalBase:
    """A connection to one journal. Not thread-safe; one per thread or process."""

    def __init__(self, db: "SqliteBackend", *, reap: bool = False) -> None:
        self.db = db
        self.path: Path = db.path
        # The CLI closes runs whose proxy is gone on its first write (issue 10 item 3); the
        # proxy never pays for that check on its own writes.
        self._reap_on_write = reap
        self._in_tx = False
        self._seq_sources: dict[str, Callable[[], int]] = {}
        # What this connection last wrote, to skip statements: each run's chain head (checked by
        # a conditional UPDATE, so another writer is noticed) and payloads already stored. Both
        # are taken in only when the transaction that wrote them commits.
        self._heads: dict[str, str] = {}
        self._known_blobs: set[str] = set()
        # A write's payloads stored ahead of its row (ActionsMixin.store_prepared) are pointed
        # at by nothing until the row commits: a prune in between collects them, so the
        # transactions up to that row look for a prune on PostgreSQL too (adversarial review 30)
        self._stored_ahead = False
        self._tx_heads: dict[str, str] = {}
        self._tx_blobs: list[str] = []
        # Status changes that may wait for this connection's next transaction (the proxy's
        # "applied" after a write, see ActionsMixin.defer_applied): each is prepared before the
        # transaction begins (it may wait for a read) and returns what is run first inside it.
        self._deferred: list[Callable[[], Callable[[], None]]] = []
        # Schema 6 keeps plain reads in ``reads`` and every action in the ``all_actions`` view;
        # a journal held at an older schema (only tests make one) keeps everything in actions.
        self._has_reads = db.schema_version() >= 6
        self._all_actions = ALL_ACTIONS if self._has_reads else "actions"

    @property
    def conn(self) -> Any:
        """The driver connection (tests tamper with rows through it)."""
        return self.db.conn

    @property
    def warnings(self) -> list[str]:
        """What opening found and fixed (a journal or folder open to others)."""
        return self.db.warnings

    def close(self) -> None:
        """Commit what was deferred (best effort: if it cannot be, those actions stay
        ``pending`` and become ``unknown``), then close the connection."""
        if self._deferred:
            try:
                with self._guard("commit deferred changes"), self._tx():
                    pass
            except JournalError:
                pass
        self.db.close()

    def __enter__(self) -> "JournalBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- statements -----------------------------------------------------------------------
    def _q(self, sql: str, params: Any = ()) -> Any:
        """Run one statement (call inside :meth:`_guard` or :meth:`_tx`)."""
        return self.db.execute(self.db.sql(sql), params)

    def _one(self, sql: str, params: Any = ()) -> tuple | None:
        return self._q(sql, params).fetchone()

    def _all(self, sql: str, params: Any = ()) -> list[tuple]:
        return self._q(sql, params).fetchall()

    @contextmanager
    def _tx(self, carry: bool = True) -> Iterator[None]:
        """One write transaction holding the write lock from its start. The first one of a CLI
        connection closes stale runs before it does anything else; deferred changes go first
        (``carry=False``: they wait for a later transaction). If it fails, deferred changes
        are dropped with it (their actions stay ``pending``, which a closed or stale run turns
        into ``unknown``): one that cannot be written must not block every later call."""
        if self._in_tx:  # a method called from a deferred change: part of the outer transaction
            yield
            return
        self._tx_heads, self._tx_blobs = {}, []
        if carry:
            deferred, self._deferred = self._deferred, []
        else:
            deferred = []
        changes = [prepare() for prepare in deferred]  # outside the write lock: they may wait for a read
        with self.db.write():
            self._in_tx = True
            try:
                if self._reap_on_write:
                    self._reap_on_write = False
                    self._reap_stale()
                if self._stored_ahead or (self._known_blobs and self.db.name == "sqlite"):
                    self._forget_pruned_blobs()
                for change in changes:
                    change()
                yield
            finally:
                self._in_tx = False
        # committed (an exception above skips this: a rolled-back head or blob is not known)
        self._heads.update(self._tx_heads)
        self._known_blobs.update(self._tx_blobs)

    def _forget_pruned_blobs(self) -> None:
        """Forget which payloads exist when another connection pruned since this one last
        looked: a payload it stored may be gone, and writing it again must store it again
        (adversarial review, round 3). One indexed read per write transaction, SQLite only:
        on PostgreSQL a proxy's connection holds one run, whose payloads no prune can take,
        except a write's payloads stored ahead of its row (``_stored_ahead``), which no row
        points at yet."""
        row = self._q("SELECT value FROM counters WHERE name = 'prunes'").fetchone()
        epoch = row[0] if row else 0
        if epoch != self.__dict__.get("_prune_epoch", 0):
            self._known_blobs.clear()
            self.__dict__["_prune_epoch"] = epoch

    def defer(self, change: Callable[[], None]) -> None:
        """Run ``change`` (journal calls: their transactions join it) at the start of this
        connection's next write transaction, or at :meth:`flush`, instead of in one of its
        own. Until then it is not written: a process killed first loses it, so only what may
        honestly be lost goes here (what an action's status already tells, see
        ActionsMixin.defer_applied and the undo engine's step records)."""
        self._deferred.append(lambda: change)

    def prepare_deferred(self) -> None:
        """Prepare the deferred changes now (each waits for what it needs, such as a write's
        post-read) and keep what they will write for the next transaction: the proxy calls it
        before it sends a call, so no earlier write's post-read can be answered after a later
        write reached the server."""
        ready: list[Callable[[], Callable[[], None]]] = []
        for prepare in self._deferred:
            change = prepare()
            ready.append(lambda change=change: change)
        self._deferred = ready

    @property
    def deferred(self) -> int:
        """How many changes wait for this connection's next transaction."""
        return len(self._deferred)

    def flush(self) -> None:
        """Commit the deferred changes now (one transaction; nothing if there are none)."""
        if self._deferred:
            with self._guard("write deferred changes"), self._tx():
                pass

    def _reap_stale(self) -> int:  # provided by RunsMixin
        return 0

    def _check_may(self, run_ids: Any, what: str) -> None:  # provided by TeamMixin
        return None

    def _may_collect(self) -> bool:  # provided by TeamMixin: payloads are shared by the team
        return True

    def _snapshot(self) -> Any:
        """The backend's consistent-read context (:meth:`SqliteBackend.snapshot`); a backend
        without one reads statement by statement."""
        snap = getattr(self.db, "snapshot", None)
        return snap() if snap is not None else nullcontext()

    @contextmanager
    def _guard(self, op: str) -> Iterator[None]:
        """Driver errors become JournalError (a damaged file: JournalConfigError, exit 2; a
        broken PostgreSQL connection made again: RetryableJournalError)."""
        try:
            yield
        except self.db.driver_error as exc:
            raise self.db.error(self.path, op, exc) from exc

    def _require(self, found: Any, what: str) -> Any:
        if found is None:
            raise JournalError(f"{what} vanished from the journal at {self.path}")
        return found
