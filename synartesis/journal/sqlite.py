"""The SQLite backend: everything about the journal that is specific to SQLite or to a file.

The rest of ``synartesis.journal`` writes portable SQL (``?`` placeholders, ``ON CONFLICT DO
NOTHING``, window functions) and goes through :class:`SqliteBackend` for what is not portable:
opening (file creation, modes, PRAGMAs), the write transaction (``BEGIN IMMEDIATE``), the schema
version (``PRAGMA user_version``), the change counter (``PRAGMA data_version``), compaction
(``VACUUM``) and the meaning of driver errors. A second backend (PostgreSQL, issue 14) implements
the same methods; :meth:`SqliteBackend.sql` is where it would rewrite placeholders.

File contract (DESIGN §5, issue 9 item 12): the journal is 0600 in a 0700 folder. Folders we
create are 0700 whatever the umask; an existing journal (and its ``-wal``/``-shm``) looser than
0600 is tightened, and so is its folder when the folder is ours (it holds nothing but the
journal and synartesis's own files); a folder that is not ours is only reported, and only when
others can write to it. Each is reported in :attr:`SqliteBackend.warnings`.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from itertools import chain as _chain
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from synartesis.errors import JournalConfigError, JournalError, NoJournalError

__all__ = ["SqliteBackend", "Error"]

Error = sqlite3.Error
_SIDE_FILES = ("-wal", "-shm")
# What may sit beside a journal in a folder that synartesis made for it ($SYNARTESIS_HOME: the
# policy, the install record, backups, OAuth tokens, serve's token, the desktop's launch file,
# the team journal's spool) and the compiled policy caches (policy-<hash>.json, new user round 31).
_OURS = ("synartesis.yaml", "installed.json", "backups", "oauth", "serve-token", "desktop.json", "spool")
_OURS_CACHE = re.compile(r"policy-[0-9a-f]{16}\.json")
# Page size of a new journal: SQLite's smallest. Every table and index takes at least a page
# (an empty journal has ~35 of them: 140 KB at SQLite's 4 KiB default), and a row is rounded up
# to what is left of a page: a journal's rows are a few hundred bytes (a write's two events ~500
# each, compressed) or overflow (payload packs), so at 1 KiB an event took a page of its own,
# and whether two fitted hung on the length of a file's path. Measured (scripts/bench/
# journal_series.py, 30 edits of a 200 KB file): 4 KiB 0.062x of what was written, 2 KiB 0.056x,
# 1 KiB 0.047-0.052x, 512 B 0.041-0.042x; 600 small writes took the same space at 1 KiB and
# 512 B. Journal CPU per write and per read did not differ beyond the noise of a loaded machine
# (README "Design notes"). A journal keeps the page size it was made with.
_PAGE_SIZE = 512
# executemany of an INSERT … VALUES (…): see SqliteBackend.executemany
_VALUES = re.compile(r"^(INSERT INTO [^()]+ \([^()]+\) VALUES )(\([^()]*\))( ON CONFLICT DO NOTHING)?$", re.S)
_ROWS_PER_INSERT = 128


class SqliteBackend:
    """One connection to one journal file. Not thread-safe; one per thread."""

    name = "sqlite"
    driver_error = sqlite3.Error
    # A column that grows with insertion, to order rows written in the same millisecond.
    row_order = "rowid"
    # UPDATE … RETURNING (SQLite 3.35): a changed row comes back without a second statement.
    returning = sqlite3.sqlite_version_info >= (3, 35)

    def __init__(self, path: Path, conn: sqlite3.Connection, warnings: list[str] | None = None) -> None:
        self.path = path
        self.conn = conn
        self.warnings: list[str] = warnings or []
        # beside the file a symlinked journal points at, as SQLite puts it (resolved once:
        # realpath costs ~30 µs, three times a write: 150k instructions a write, callgrind)
        self._wal = os.path.realpath(path) + "-wal"
        self._files = self._identity()  # the journal and write-ahead log this connection has open
        try:  # how many ``?`` one statement may hold (999 before SQLite 3.32)
            self._variables = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except (AttributeError, sqlite3.Error):
            self._variables = 999
        self._shared_texts: dict[tuple, str] = {}  # insert_shared's statement texts

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool) -> "SqliteBackend":
        """Open (and with ``create`` make) the journal file at ``path``.

        Pragmas: WAL, ``busy_timeout`` 10 s, ``foreign_keys``; ``synchronous=NORMAL`` (a
        process crash loses nothing; a power cut may lose the last commits), ``FULL`` with
        ``SYNARTESIS_SYNC=full``.

        Raises:
            NoJournalError: ``create`` is False and there is no file.
            JournalConfigError: a directory, or not a database.
            JournalError: it could not be created or opened.
        """
        p = Path(path).expanduser()
        warnings: list[str] = []
        created = False
        if not p.exists():
            if not create:
                raise NoJournalError(f"there is no journal at {p} yet; one is created by the first proxy that writes to it")
            try:
                if not p.parent.exists():  # ours: 0700 whatever the umask; an existing one is left as it is
                    from synartesis.fsops import ensure_private_dir  # only here: not on every start
                    ensure_private_dir(p.parent)
                fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o600)
                os.close(fd)
                os.chmod(p, 0o600)
                created = True
            except OSError as exc:
                raise JournalError(f"the journal at {p} could not be created: {exc.strerror or exc}") from None
        elif p.is_dir():
            raise JournalConfigError(f"the journal at {p} could not be opened: it is a directory")
        else:
            st = p.stat()  # through a symlink: the file the journal would be
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block or fail as "disk I/O error"
                raise JournalConfigError(f"the journal at {p} could not be opened: it is not a regular file "
                                         f"({_kind(st.st_mode)})")
            if st.st_nlink > 1:
                # SQLite finds its -wal and -shm by the name it was given: two names of one file
                # are two logs and two lock files, and writers through both corrupt it
                # (adversarial review 20, F7: 120 writes through two hard links, then "malformed")
                raise JournalConfigError(f"the journal at {p} has {st.st_nlink} names (hard links, as `cp -al` "
                                         "makes): SQLite keeps one write-ahead log and lock per name, so writing "
                                         "through two corrupts it; remove the other names, or copy the file")
            created = st.st_size == 0  # made by a proxy starting beside this one, or by hand
            if created and not create and _empty(p.parent / (p.name + "-wal")):
                # only a proxy starts a journal: another command would have made one of an
                # empty file given by mistake (adversarial review 14)
                raise NoJournalError(f"there is no journal at {p} yet (the file is empty); one is created by the first "
                                     "proxy that writes to it")
        try:
            conn = sqlite3.connect(str(p), timeout=10.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 10000")
            if created:  # before the first table: a page size is chosen once, with the file
                conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            # SQLite checkpoints the WAL (and fsyncs the file) every 1,000 pages: 4 MB at its
            # default page size, 0.5 MB at ours. Keep it every 4 MB, so small pages do not
            # mean eight times the checkpoints (and their fsyncs) on the write path.
            page = int(conn.execute("PRAGMA page_size").fetchone()[0] or 4096)
            conn.execute(f"PRAGMA wal_autocheckpoint = {max(1000, (4 << 20) // page)}")
            conn.execute("PRAGMA foreign_keys = ON")
            sync = "FULL" if os.environ.get("SYNARTESIS_SYNC", "").lower() == "full" else "NORMAL"
            conn.execute(f"PRAGMA synchronous = {sync}")
        except sqlite3.DatabaseError as exc:
            raise cls.error(p, "open", exc) from None
        return cls(p, conn, warnings)

    def tighten(self) -> None:
        """Tighten the file's mode (and its folder's) once it is known to be a journal: the
        caller migrated it. Before that, a path that pointed at someone's own file (a symlink,
        another program's database) had its mode changed (adversarial review 14). What was done
        or could not be done is added to :attr:`warnings`."""
        self.warnings.extend(_tighten(self.path))

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass

    # -- statements ------------------------------------------------------------------------
    @staticmethod
    def sql(text: str) -> str:
        """The statement as this driver wants it (``?`` placeholders are native here)."""
        return text

    def execute(self, text: str, params: Any = ()) -> sqlite3.Cursor:
        try:
            return self.conn.execute(text, params)
        except UnicodeEncodeError:
            # A lone surrogate (valid JSON, "\ud800") in a name or a note cannot be stored as
            # SQLite text; payloads never get here (they are stored escaped, losslessly).
            return self.conn.execute(text, [_storable(p) for p in params])

    def executemany(self, text: str, rows: list, *, checked: bool = False) -> None:
        """One statement (``?`` placeholders, as :meth:`sql` takes them) over many rows.
        ``checked``: the caller knows every text in them is ASCII (nothing to escape)."""
        # checked first: a row that fails half-way through would leave the earlier ones inserted
        if not checked:
            rows = [r if _storable_row(r) else [_storable(p) for p in r] for r in rows]
        m = _VALUES.match(text) if len(rows) > 1 else None
        if m is None:
            self.conn.executemany(text, rows)
            return
        # An INSERT of many rows goes as multi-row INSERTs, each of a power of two rows (at most
        # 128 and the connection's variable limit): a handful of statement texts, all kept
        # prepared by the connection's statement cache (a text per batch size was prepared
        # anew for every batch and cost more than it saved). Each statement runs its
        # per-statement work (the CHECK's IN list, the foreign key's lookup set-up) once
        # instead of once a row: the journal thread's reads cost about 20k instructions a row
        # less (callgrind). A failing row fails its whole statement; the caller's transaction
        # is rolled back either way, as after executemany.
        head, one, tail = m.group(1), m.group(2), m.group(3) or ""
        width = max(1, one.count("?"))
        most = _ROWS_PER_INSERT
        while most > 1 and most * width > self._variables:
            most >>= 1
        conn, start, n = self.conn, 0, len(rows)
        while start < n:
            k = min(most, n - start)
            k = 1 << (k.bit_length() - 1)
            if k == 1:
                conn.execute(text, rows[start])
            else:
                conn.execute(head + ",".join([one] * k) + tail, list(_chain(*rows[start:start + k])))
            start += k

    def insert_shared(self, table: str, shared_cols: tuple[str, ...], shared: tuple, cols: tuple[str, ...],
                      rows: list, *, checked: bool = False) -> None:
        """INSERT one row of ``table`` per element of ``rows`` (its values for ``cols``), each
        also holding ``shared`` (its values for ``shared_cols``, the same in every row). As
        :meth:`executemany`'s multi-row INSERTs, except that the shared values are bound once a
        statement (``?1`` … ``?S``, which every row names) instead of once a row: a text bound
        costs about 900 instructions (the driver's conversion, SQLite's copy of it), and a batch
        of reads shares its run, server, tool, rule, status and time. What is stored is what
        binding them in every row stores. ``checked`` as for :meth:`executemany`."""
        if not checked:
            if not _storable_row(shared):
                shared = tuple(_storable(p) for p in shared)
            rows = [r if _storable_row(r) else [_storable(p) for p in r] for r in rows]
        s, width = len(shared), len(cols)
        most = _ROWS_PER_INSERT
        while most > 1 and s + most * width > self._variables:
            most >>= 1
        conn, start, n = self.conn, 0, len(rows)
        while start < n:
            k = min(most, n - start)
            k = 1 << (k.bit_length() - 1)
            key = (table, shared_cols, cols, k)
            text = self._shared_texts.get(key)
            if text is None:
                head = ",".join(f"?{i + 1}" for i in range(s))
                values = ",".join("(" + head + "," + ",".join(f"?{s + r * width + j + 1}" for j in range(width)) + ")"
                                  for r in range(k))
                text = self._shared_texts[key] = (f"INSERT INTO {table} ({', '.join(shared_cols + cols)}) "
                                                  f"VALUES {values}")
            conn.execute(text, [*shared, *_chain(*rows[start:start + k])])
            start += k

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction that holds the write lock from its first statement (``BEGIN
        IMMEDIATE``), so read-then-write decisions cannot race another process.

        Raises:
            JournalError: the journal file or its write-ahead log is no longer the one this
                connection opened (:meth:`_same_files`); nothing is written.
        """
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._same_files()
            yield
        except BaseException:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.conn.execute("COMMIT")

    def _identity(self) -> tuple[int, ...] | None:
        """(device, inode) of the journal file and of its ``-wal``; None when either is missing.
        The log is beside the file a symlinked journal points at, as SQLite puts it there
        (adversarial review 20, F6: it was looked for beside the link, and every write of a
        symlinked journal was refused)."""
        try:
            db = os.stat(self.path)
            wal = os.stat(self._wal)
        except OSError:
            return None
        return (db.st_dev, db.st_ino, wal.st_dev, wal.st_ino)

    def _same_files(self) -> None:
        """Refuse to write through a connection whose files were swapped or deleted under it.

        SQLite keeps writing to the files it opened: a journal moved over by an older copy, or
        deleted (the ``-wal`` with it) while a proxy runs, took every later write into files no
        one reads again, and the proxy went on answering success (adversarial review 19, F2:
        30 writes into a replaced journal, 20 into a deleted log). Two ``stat`` calls a write
        transaction, under its lock. A connection opened before the log existed takes the
        first pair it sees.

        Raises:
            JournalError: the journal or its log is gone, or is another file now.
        """
        now = self._identity()
        if now is not None and self._files is None:
            self._files = now
            return
        if now is None or now != self._files:
            raise JournalError(f"the journal at {self.path} was replaced or deleted while it was open here "
                               "(its file or write-ahead log is not the one opened); nothing more is written "
                               "through this connection: restart the client so its proxies open the journal again")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one state of the journal: a read transaction (WAL gives it a snapshot
        at its first SELECT), so a commit by another process between them is seen by all or by
        none (adversarial review 19, F7: an audit read a redo's events before its status update
        and its action rows after, and called the run tampered). Nested in a transaction
        already open, that one is used."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error:
                pass

    # -- schema bookkeeping ------------------------------------------------------------------
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def set_schema_version(self, version: int) -> None:
        self.conn.execute(f"PRAGMA user_version = {int(version)}")

    def has_tables(self) -> bool:
        return bool(self.conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0])

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})").fetchall()]

    @contextmanager
    def rebuilding(self) -> Iterator[None]:
        """Around a migration that rebuilds tables (SQLite's "12-step" ALTER): foreign keys off
        outside the transaction, so dropping an old table cannot cascade into its children,
        and checked before they are switched back on."""
        self.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            yield
            bad = self.conn.execute("PRAGMA foreign_key_check").fetchall()
            if bad:
                raise JournalError(f"the journal at {self.path} has {len(bad)} rows pointing at nothing after its "
                                   "upgrade; it was left as it was")
        finally:
            self.conn.execute("PRAGMA foreign_keys = ON")

    # -- upkeep ----------------------------------------------------------------------------
    def data_version(self) -> int:
        """Changes whenever another connection commits (cheap polling for live views)."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def compact(self) -> None:
        """Give freed space back to the file system (after deleting runs)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.execute("VACUUM")
        # in WAL mode VACUUM writes the whole new file into the log: fold it in, or the size
        # measured now (prune's "after") counts the database twice
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def size(self) -> int:
        """Bytes on disk (the file and its write-ahead log)."""
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += (self.path.parent / (self.path.name + suffix)).stat().st_size
            except OSError:
                pass
        return total

    # -- errors ----------------------------------------------------------------------------
    @staticmethod
    def error(path: Path, op: str, exc: Exception) -> JournalError:
        """The JournalError for a driver error: a damaged or foreign file is a configuration
        error naming the file (exit 2); anything else (locked, disk full) is not."""
        text = str(exc)
        if "not a database" in text or "file is encrypted" in text:
            return JournalConfigError(f"{path} is not a Synartesis journal (or it is damaged: {text}). Point "
                                      "--journal at a Synartesis journal (only a proxy starts a new one).")
        if "malformed" in text or "disk image" in text:
            return JournalConfigError(f"the journal at {path} is damaged ({text}); keep a copy of it (it holds "
                                      "everything an agent did) and point --journal at a new file")
        if op == "open" and path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            # SQLite writes the -wal and -shm beside a WAL journal even to read it: a read-only
            # file or folder is where it lives, a configuration error (adversarial review 19, F15)
            return JournalConfigError(f"the journal at {path} could not be opened: {text}; it or its folder is "
                                      "read-only, and SQLite writes the journal's -wal and -shm beside it even to "
                                      "read it (copy it somewhere writable and point --journal at the copy)")
        if op == "open":
            return JournalError(f"the journal at {path} could not be opened: {text}")
        return JournalError(f"journal {op} failed ({path}): {text}")


def _utf8(value: Any) -> bool:
    """True unless ``value`` is text SQLite cannot take (a lone surrogate)."""
    if not isinstance(value, str) or value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _storable_row(row: Any) -> bool:
    """True unless a value of ``row`` is text SQLite cannot take (ASCII text, the usual case,
    is passed without an encoding attempt)."""
    for p in row:
        if p.__class__ is str and not p.isascii() and not _utf8(p):
            return False
    return True


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _empty(p: Path) -> bool:
    """True when ``p`` is missing or holds no bytes."""
    try:
        return p.stat().st_size == 0
    except OSError:
        return True


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in a word or two."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def _tighten(p: Path) -> list[str]:
    """Tighten a journal looser than 0600 (and its folder, when it is ours, looser than 0700);
    return what was said about it."""
    notes: list[str] = []
    uid = getattr(os, "getuid", None)
    if uid is None:  # Windows: no POSIX modes to speak of
        return notes
    for f in [p] + [p.parent / (p.name + s) for s in _SIDE_FILES]:
        try:
            st = f.stat()
        except OSError:
            continue
        if stat.S_IMODE(st.st_mode) & 0o077:
            old = stat.S_IMODE(st.st_mode)
            if st.st_uid == uid():
                try:
                    os.chmod(f, 0o600)
                    notes.append(f"{f} was readable by others (mode {old:04o}); it holds your data, so it is now 0600")
                    continue
                except OSError:
                    pass
            notes.append(f"{f} is readable by others (mode {old:04o}) and could not be tightened; it holds your "
                         f"data: chmod 600 {f}")
    folder = p.parent
    try:
        st = folder.stat()
    except OSError:
        return notes
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return notes
    if st.st_uid == uid() and _ours(folder, p.name):
        try:
            os.chmod(folder, 0o700)
            notes.append(f"{folder} was open to others (mode {mode:04o}); it holds the journal, so it is now 0700")
            return notes
        except OSError:
            pass
    if mode & 0o022 and not mode & stat.S_ISVTX:
        # a folder others can write to lets them replace the journal; one they can only list is
        # the user's own business (a project folder with the journal beside its policy)
        notes.append(f"{folder} can be written by others (mode {mode:04o}), so they could replace the journal in it "
                     f"(chmod go-w {folder}, or keep the journal in a folder of its own)")
    return notes


def _ours(folder: Path, journal_name: str) -> bool:
    """True when ``folder`` holds nothing but this journal and synartesis's own files."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return all(n.startswith(journal_name) or n in _OURS or _OURS_CACHE.fullmatch(n) or n.endswith(".synartesis-tmp")
               for n in names)
