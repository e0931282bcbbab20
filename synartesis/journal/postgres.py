"""The PostgreSQL backend (issue 14): the journal of a team, in one shared database.

Imported only when the journal is a ``postgresql://`` URL, so psycopg (3, ``psycopg[binary]``,
the ``postgres`` extra) is never loaded on SQLite's path. It implements what
:class:`synartesis.journal.sqlite.SqliteBackend` does, the PostgreSQL way:

- **Connecting.** The URL is libpq's; the password comes from ``PGPASSWORD``, ``~/.pgpass`` or a
  ``${VAR}`` reference in the URL, expanded here and nowhere else. What is shown (errors, logs,
  the command a held call names) is :class:`synartesis.paths.JournalURL`: no literal password.
- **Writing.** A write transaction takes one transaction-scoped advisory lock of the journal
  (``pg_advisory_xact_lock``) as its first statement, the way SQLite's ``BEGIN IMMEDIATE`` holds
  the write lock: every read-then-write decision (seq and journal-wide numbers, a run's chain
  head, spending an approval, one undo per run at a time) is made by one writer at a time, on
  every machine, and event ids grow in commit order (the chain is audited in id order). Every
  action write already takes the journal-wide counter's row lock, so a per-run lock would not
  let more writers through.
- **A lost connection.** A statement that fails because the connection broke reconnects; when
  nothing of the transaction can have been committed it raises :class:`RetryableJournalError`,
  which :class:`synartesis.journal.facade.Journal` turns into one more try of the whole
  operation. A COMMIT whose answer never came is settled by asking the server about the
  transaction id (``pg_xact_status``): committed is success, anything else is retried, so a
  write whose outcome was unknown is never recorded twice.
- **Schema version** is the newest row of ``migrations`` (there is no ``user_version``);
  **change polling** (:meth:`data_version`) reads the newest event id and row counts.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Any, Iterator

import psycopg

from synartesis.errors import JournalConfigError, JournalError, NoJournalError
from synartesis.journal.sqlite import _storable as _sqlite_storable
from synartesis.journal.sqlite import _utf8
from synartesis.paths import JournalURL

__all__ = ["PostgresBackend", "Error", "RetryableJournalError", "connect", "conninfo"]

Error = psycopg.Error
# pg_advisory_xact_lock key of "the journal" (per database: advisory locks are).
LOCK_KEY = 0x5359_4E41_5254  # "SYNART"
_LOCK = f"SELECT pg_advisory_xact_lock({LOCK_KEY}), pg_current_xact_id()::text"
_VALUES = re.compile(r"^(INSERT INTO [^()]+ \([^()]+\) VALUES )(\([^()]*\))( ON CONFLICT DO NOTHING)?$", re.S)
_ROWS_PER_INSERT = 200
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CONNECT_TIMEOUT_S = 10


class RetryableJournalError(JournalError):
    """The connection broke and was made again; nothing of the operation was committed, so it
    may be run again as a whole."""


def conninfo(url: JournalURL) -> str:
    """The URL with ``${VAR}`` references expanded from the environment (for connecting only).

    Raises:
        JournalConfigError: a reference names a variable that is not set.
    """
    given = url.secret_url()

    def expand(m: re.Match) -> str:
        value = os.environ.get(m.group(1))
        if value is None:
            raise JournalConfigError(f"the journal URL {url} refers to ${{{m.group(1)}}}, which is not set")
        from urllib.parse import quote
        return quote(value, safe="")

    return _VAR.sub(expand, given)


def connect(url: JournalURL, **kwargs: Any) -> "psycopg.Connection":
    """A psycopg connection to ``url`` (autocommit: transactions are begun explicitly).

    Raises:
        JournalError: it could not be made (the message names the journal, never a password).
    """
    info = conninfo(url)
    try:
        return psycopg.connect(info, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S,
                               application_name="synartesis", **kwargs)
    except psycopg.Error as exc:
        raise JournalError(f"the journal at {url} could not be reached: {_clean(exc, url)}") from None


class _Conn:
    """What tests (and ``Journal.conn``) use to run SQL directly: ``?`` placeholders, as on SQLite."""

    def __init__(self, backend: "PostgresBackend") -> None:
        self._backend = backend

    def execute(self, text: str, params: Any = ()) -> Any:
        return self._backend.execute(self._backend.sql(text), params)

    def commit(self) -> None:  # autocommit: nothing to do (SQLite's connection has one too)
        return None


class PostgresBackend:
    """One connection to one PostgreSQL journal. Not thread-safe; one per thread."""

    name = "postgresql"
    driver_error = psycopg.Error
    # An identity column on runs and undos orders rows written in the same millisecond.
    row_order = "ord"
    returning = True

    def __init__(self, url: JournalURL, conn: "psycopg.Connection") -> None:
        self.path = url
        self.url = url
        self._raw = conn
        self.conn = _Conn(self)
        self.warnings: list[str] = []
        self._in_tx = False
        self._pipe: Any = None  # the pipeline of the write transaction in progress
        self._pipe_cm: Any = None
        self._sql_cache: dict[str, str] = {}

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, url: JournalURL, *, create: bool) -> "PostgresBackend":
        """Connect to the journal at ``url``. Only ``create`` makes its tables (in an empty
        database or schema); without it an empty database is "no journal yet".

        Raises:
            NoJournalError: ``create`` is False and the database holds no journal.
            JournalConfigError: a ``${VAR}`` is not set.
            JournalError: the server could not be reached.
        """
        db = cls(url, connect(url))
        if not create:
            try:
                empty = db.schema_version() == 0 and not db.has_tables()
            except psycopg.Error as exc:
                db.close()
                raise db.error(url, "open", exc) from None
            if empty:
                db.close()
                raise NoJournalError(f"there is no journal at {url} yet; it is created by the first proxy that "
                                     "runs (or by `synartesis journal migrate --to URL`)")
        return db

    def tighten(self) -> None:
        """Nothing to tighten: the server keeps the data (the SQLite backend's file modes)."""

    def close(self) -> None:
        try:
            self._raw.close()
        except psycopg.Error:
            pass

    def _reconnect(self) -> bool:
        """Replace a broken connection; True when a new one is up."""
        self.close()
        try:
            self._raw = connect(self.url)
        except JournalError:
            return False
        return True

    # -- statements ------------------------------------------------------------------------
    def sql(self, text: str) -> str:
        """``?`` placeholders become ``%s`` (and a literal ``%`` is escaped)."""
        out = self._sql_cache.get(text)
        if out is None:
            out = self._sql_cache[text] = text.replace("%", "%%").replace("?", "%s")
        return out

    def execute(self, text: str, params: Any = ()) -> Any:
        if self._raw.closed and not self._in_tx:
            self._reconnect()
        if self._pipe is not None and not params and ";" in text:
            self._leave(None)  # a script (several statements) cannot be pipelined
        try:
            cur = self._raw.execute(text, params or None)
        except (UnicodeEncodeError, psycopg.DataError) as exc:
            fixed = [_storable(p) for p in params]
            if fixed == list(params) or isinstance(exc, psycopg.DataError) and "NUL" not in str(exc):
                raise
            # A lone surrogate or a NUL (valid JSON) in a name or note cannot be PostgreSQL
            # text; payloads never get here (they are stored escaped, losslessly).
            cur = self._raw.execute(text, fixed)
        return cur if self._pipe is None else _Piped(cur, self._pipe)

    def executemany(self, text: str, rows: list, *, checked: bool = False) -> None:
        """One statement (``?`` placeholders) over many rows. An ``INSERT … VALUES (…)`` is sent
        as multi-row INSERTs (one round trip and one parameter dump per 200 rows: the proxy's
        journal thread spends less time holding the interpreter while reads are relayed).
        ``checked`` is ignored: ASCII text may still hold a NUL, which PostgreSQL refuses."""
        rows = [r if all(_ok(p) for p in r) else [_storable(p) for p in r] for r in rows]
        m = _VALUES.match(text)
        if m is None or len(rows) < 2:
            with self._raw.cursor() as cur:
                cur.executemany(self.sql(text), rows)
            return
        head, one, tail = m.group(1), m.group(2), m.group(3) or ""
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            part = rows[start:start + _ROWS_PER_INSERT]
            flat = [v for r in part for v in r]
            self._raw.execute(self.sql(head + ",".join([one] * len(part)) + tail), flat)

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction holding the journal's advisory lock from its first statement.

        It runs in psycopg's pipeline mode: a statement is sent at once and only waited for
        when its answer is read (a fetch, or a ``rowcount``, which syncs), so the statements
        whose answers are not needed (BEGIN and the lock, a payload's INSERT, the counter's
        UPDATE) share a round trip with the next one that is. A recorded write costs three
        round trips (its counter, its event, COMMIT) where it cost six. Nothing is committed
        before COMMIT; an error anywhere rolls the whole transaction back. A script of several
        statements (a migration) ends pipeline mode for the rest of its transaction."""
        if self._raw.closed:
            self._reconnect()
        conn = self._raw
        try:
            self._pipe_cm = conn.pipeline()
            self._pipe = self._pipe_cm.__enter__()
            conn.execute("BEGIN")
            lock = conn.execute(_LOCK)  # the lock and the transaction id, read with the first answer
        except psycopg.OperationalError as exc:
            self._leave(exc)
            raise self._lost(exc, None) from None
        self._in_tx = True
        xid: str | None = None
        try:
            yield
            xid = lock.fetchone()[1]  # here at the latest: every write takes the lock first
        except BaseException as exc:
            self._in_tx = False
            self._abandon(exc)
            raise
        self._in_tx = False
        try:
            conn.execute("COMMIT")
            if self._pipe is not None:
                self._pipe.sync()  # a statement's error not read before surfaces here: nothing is committed
        except psycopg.OperationalError as exc:
            self._leave(exc)
            outcome = self._lost(exc, xid)
            if not isinstance(outcome, _Committed):
                raise outcome from None
            return
        except BaseException as exc:
            self._abandon(exc)
            raise
        self._leave(None)

    def _leave(self, exc: BaseException | None) -> None:
        """End pipeline mode, waiting for what is still in flight. After an error whatever
        the pipeline then says is dropped: the error in hand is the one that counts."""
        cm, self._pipe_cm, self._pipe = self._pipe_cm, None, None
        if cm is None:
            return
        try:
            cm.__exit__(type(exc) if exc else None, exc, None)
        except psycopg.Error:
            if exc is None:
                raise

    def _abandon(self, exc: BaseException) -> None:
        """Leave pipeline mode and roll the transaction back (best effort: a broken
        connection has nothing left to roll back)."""
        self._leave(exc)
        try:
            self._raw.execute("ROLLBACK")
        except psycopg.Error:
            pass

    def _lost(self, exc: Exception, xid: str | None) -> JournalError:
        """The error for a connection that broke; with ``xid`` (a COMMIT whose answer was lost),
        None when the server says that transaction committed after all."""
        if not self._reconnect():
            return JournalError(f"the journal at {self.url} went away and could not be reached again: "
                                f"{_clean(exc, self.url)}")
        if xid is not None:
            row = self._raw.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
            if row and row[0] == "committed":
                return _Committed("the transaction committed")
        return RetryableJournalError(f"the connection to the journal at {self.url} was lost "
                                     f"({_clean(exc, self.url)}); nothing of it was committed")

    # -- schema bookkeeping ------------------------------------------------------------------
    def schema_version(self) -> int:
        # pg_tables, not to_regclass: a catalog scan sees a table another session created while
        # this one waited for the advisory lock (a cached lookup may not)
        row = self._raw.execute("SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() "
                                "AND tablename = 'migrations')").fetchone()
        if not row[0]:
            return 0
        return int(self._raw.execute("SELECT COALESCE(max(version), 0) FROM migrations").fetchone()[0])

    def set_schema_version(self, version: int) -> None:
        return None  # the migrations table is the record

    def has_tables(self) -> bool:
        row = self._raw.execute("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()
        return bool(row[0])

    def columns(self, table: str) -> list[str]:
        rows = self._raw.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                 "current_schema() AND table_name = %s ORDER BY ordinal_position", (table,))
        return [r[0] for r in rows.fetchall()]

    @contextmanager
    def rebuilding(self) -> Iterator[None]:
        yield  # PostgreSQL alters constraints in place: nothing is rebuilt

    # -- upkeep ----------------------------------------------------------------------------
    def data_version(self) -> int:
        """Changes whenever anything is committed to the journal (cheap polling for live views):
        every change appends an event; deletions lower a count."""
        row = self.execute("SELECT COALESCE(max(id), 0), count(*), (SELECT count(*) FROM runs), "
                           "(SELECT COALESCE(max(updated_at), '') FROM actions) FROM events").fetchone()
        return hash(tuple(row)) & 0x7FFF_FFFF_FFFF_FFFF

    def compact(self) -> None:
        """Give freed space back (VACUUM; tables this role does not own are skipped by it)."""
        for table in ("blobs", "events", "actions", "reads"):
            try:
                self._raw.execute(f"VACUUM {table}")
            except psycopg.Error:
                pass

    def size(self) -> int:
        """Bytes the journal's tables and indexes take."""
        row = self.execute("SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                           "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                           "AND c.relkind = 'r'").fetchone()
        return int(row[0])

    # -- errors ----------------------------------------------------------------------------
    def error(self, path: Any, op: str, exc: Exception) -> JournalError:
        """The JournalError for a driver error. A broken connection is made again: then the
        error is retryable (nothing was committed). A permission refused by the database (a
        member acting on another user's run, issue 14) says so."""
        if isinstance(exc, psycopg.OperationalError) and self._raw.closed:
            lost = self._lost(exc, None)
            return lost
        text = _clean(exc, self.url)
        if isinstance(exc, psycopg.errors.InsufficientPrivilege) or "row-level security" in text:
            return JournalError(f"the journal at {self.url} refused to {op}: your database role may not "
                                f"({text.splitlines()[0]})")
        if op == "open":
            return JournalError(f"the journal at {self.url} could not be opened: {text}")
        return JournalError(f"journal {op} failed ({self.url}): {text}")


class _Piped:
    """A cursor of a pipelined transaction: ``rowcount`` waits for the statement's answer
    (psycopg fills it in only when the pipeline is synced; fetches wait by themselves)."""

    __slots__ = ("_cur", "_pipe")

    def __init__(self, cur: Any, pipe: Any) -> None:
        self._cur, self._pipe = cur, pipe

    @property
    def rowcount(self) -> int:
        self._pipe.sync()
        return self._cur.rowcount

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> Any:
        return self._cur.fetchall()

    def __iter__(self) -> Any:
        return iter(self._cur)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


class _Committed(JournalError):
    """Internal: the lost COMMIT did commit (never escapes :meth:`PostgresBackend.write`)."""


def _clean(exc: Exception, url: JournalURL) -> str:
    """A driver message with nothing secret in it (the password is never echoed by libpq, but a
    literal one given in the URL is scrubbed anyway)."""
    text = str(exc).strip()
    secret = url.secret_url()
    if secret != str(url):
        text = text.replace(secret, str(url))
    m = re.search(r":([^:@/]+)@", secret)
    if m and len(m.group(1)) >= 3:
        text = text.replace(m.group(1), "***")
    return text.replace("\n\t", " ").replace("\n", " ")


def _ok(value: Any) -> bool:
    """True unless ``value`` is text PostgreSQL cannot take (a lone surrogate or a NUL)."""
    return _utf8(value) and not (isinstance(value, str) and "\x00" in value)


def _storable(value: Any) -> Any:
    stored = _sqlite_storable(value)
    return stored.replace("\x00", "\\x00") if isinstance(stored, str) else stored
