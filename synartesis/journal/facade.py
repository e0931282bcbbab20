"""The :class:`Journal`: the one object callers use, over the journal's concerns.

Concerns, each a module of ``synartesis.journal`` and a layer of this class:
``blobs`` (payloads stored once) → ``chain`` (the event chain and audit) → ``actions``
(recording and status changes) → ``runs`` (runs, agent sessions, closing dead runs) →
``gates`` (held calls, approvals, denials) → ``attempts`` (undo, redo and saga attempts) →
``team`` (who may do what in a team journal).
``schema`` owns the tables and migrations; ``sqlite`` everything specific to SQLite and to a
file; ``postgres`` everything specific to PostgreSQL (imported only for a ``postgresql://``
journal). Nothing outside this package runs SQL.

On PostgreSQL a connection can break under an operation; when nothing of it was committed the
backend says so (``RetryableJournalError``) and the operation is run once more, whole, on the
new connection (:func:`_retrying`). SQLite never raises it.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Iterable

from synartesis.errors import JournalError
from synartesis.journal.rows import now_iso
from synartesis.journal.schema import migrate
from synartesis.journal.sqlite import SqliteBackend
from synartesis.journal.team import TeamMixin
from synartesis.paths import is_journal_url

__all__ = ["Journal"]
_RETRIES = 3


class Journal(TeamMixin):
    """A connection to one journal. Not thread-safe; one per thread or process."""

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = False, reap: bool | None = None) -> "Journal":
        """Open (and with ``create`` make) the journal at ``path``, upgrading its schema in place.

        Only the proxy creates journals; every other command passes ``create=False``.
        ``reap`` (default: ``not create``, i.e. the CLI): close runs whose proxy is gone on the
        first write of this connection.

        ``path`` may be a ``postgresql://`` URL (a team journal, issue 14).

        Raises:
            NoJournalError: ``create`` is False and there is no file (no journal in the database).
            JournalConfigError: not a journal, damaged, a newer schema, or a directory (exit 2).
            JournalError: it could not be created or opened.
        """
        db: Any
        if is_journal_url(path):
            try:
                from synartesis.journal.postgres import PostgresBackend  # psycopg: only for a PostgreSQL journal
            except ModuleNotFoundError as exc:
                if exc.name != "psycopg":
                    raise
                from synartesis.errors import JournalConfigError
                raise JournalConfigError(
                    "a postgresql:// journal needs psycopg, which is not installed here: "
                    "pip install 'psycopg[binary]' (in a checkout: pip install -e '.[postgres]')") from None
            from synartesis.paths import journal_location
            db = PostgresBackend.open(journal_location(path), create=create)  # a JournalURL keeps its password
        else:
            db = SqliteBackend.open(path, create=create)
        try:
            with _guarded(db):
                migrate(db)
            db.tighten()  # only now: the file is known to be a journal
        except BaseException:
            db.close()
            raise
        return cls(db, reap=(not create) if reap is None else reap)

    def size_on_disk(self) -> int:
        """Bytes the journal takes on disk (its file and write-ahead log)."""
        return self.db.size()

    # -- tool shapes (so a pin mismatch can name the field that changed) ----------------
    def remember_shapes(self, server: str, shapes: dict[str, dict]) -> None:
        """Store tool objects seen in ``tools/list`` by fingerprint (``{fingerprint: tool}``)."""
        with self._guard("remember tool shapes"), self._tx():
            for fp, tool in shapes.items():
                self._q("INSERT INTO shapes (fingerprint, server, tool, ref, first_seen) VALUES (?,?,?,?,?) "
                        "ON CONFLICT DO NOTHING", (fp, server, str(tool.get("name")), self.put_json(tool), now_iso()))

    def shapes(self, fingerprints: Iterable[str]) -> dict[str, dict]:
        """Tool objects recorded under these fingerprints (those that are known)."""
        out: dict[str, dict] = {}
        with self._guard("read tool shapes"):
            for fp in fingerprints:
                row = self._one("SELECT ref FROM shapes WHERE fingerprint = ?", (fp,))
                if row:
                    out[fp] = self.get_json(row[0])
        return out


class _guarded:
    """Driver errors while migrating become the backend's JournalError."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ, exc, tb) -> bool:
        if isinstance(exc, self.db.driver_error):
            raise self.db.error(self.db.path, "open", exc) from exc
        return False


def _retrying(fn: Callable) -> Callable:
    """Run ``fn`` again (up to ``_RETRIES`` times) when the backend lost its connection and
    made it again with nothing of the operation committed."""

    @functools.wraps(fn)
    def call(self: Journal, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(_RETRIES):
            try:
                return fn(self, *args, **kwargs)
            except JournalError as exc:
                if type(exc).__name__ != "RetryableJournalError" or attempt == _RETRIES - 1 or self._in_tx:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    return call


def _wrap_public(cls: type) -> None:
    """Every public operation of the journal retries a lost connection (see the docstring)."""
    for name in dir(cls):
        if name.startswith("_") or name in ("close", "own_run", "open"):
            continue
        value = next(vars(k)[name] for k in cls.__mro__ if name in vars(k))
        if isinstance(value, (classmethod, staticmethod, property)) or not callable(value):
            continue
        setattr(cls, name, _retrying(value))


_wrap_public(Journal)
