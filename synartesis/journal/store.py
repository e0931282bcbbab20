"""The journal (DESIGN §5): runs, actions, undo attempts, content-addressed payloads and a
hash-chained event log, in one SQLite file.

Contract:
- Opening: WAL, ``busy_timeout`` 10 s, ``foreign_keys``; ``synchronous=NORMAL`` (a process crash
  loses nothing; a power cut may lose the last commits), ``FULL`` with ``SYNARTESIS_SYNC=full``.
  The directory is created 0700 and the file 0600: rows hold full arguments and file contents.
- Schema: ordered migrations recorded in ``migrations`` and ``PRAGMA user_version``, each
  applied in one ``BEGIN IMMEDIATE`` transaction, so proxies that start together on a new
  file never see half a schema (reference defect: lost proxies on a fresh journal).
- Read-then-write operations run in ``BEGIN IMMEDIATE``; state changes are conditional
  (``WHERE status = …``) so two deciders or two undos resolve one way.
- Payloads (arguments, snapshots, results, inverses, post-states) are stored once by SHA-256:
  every string of 1 KiB or more inside a JSON value is its own zlib-compressed blob, so the
  same file text seen as an argument, a post-state and the next snapshot is stored once.
- Every state change of an action, run or undo appends an ``events`` row whose hash chains to
  the previous event of its run; ``runs.head`` holds the newest hash; :meth:`Journal.audit`
  re-computes the chain and compares it with the rows.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from synartesis.canonical import call_key, canonical, sha256_hex
from synartesis.errors import JournalError, NoJournalError, UsageError

__all__ = ["Journal", "RunRow", "ActionRow", "UndoRow", "AuditResult", "ACTION_STATUSES",
           "RUN_STATUSES", "APPROVAL_TTL_S", "now_iso"]

RUN_STATUSES = ("active", "complete", "rolled_back", "partial")
ACTION_STATUSES = ("pending", "unknown", "gated", "approved", "denied", "applied", "failed",
                   "rolling_back", "rolled_back", "unrecoverable")
APPROVAL_TTL_S = 3600
_BLOB_MIN = 1024
_ASK_FIRST = 16 * 1024  # smaller blobs are compressed and INSERT OR IGNOREd without a SELECT first
_INLINE_MAX = 2048
_BLOB_KEY = "$synartesis.blob"
_LIT_KEY = "$synartesis.lit"

_MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial schema", """
CREATE TABLE blobs (
  hash TEXT PRIMARY KEY, codec TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE runs (
  id TEXT PRIMARY KEY, label TEXT, client TEXT,
  started_at TEXT NOT NULL, ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('active','complete','rolled_back','partial')),
  pid INTEGER, servers TEXT NOT NULL DEFAULT '{}', head TEXT NOT NULL DEFAULT '');
CREATE TABLE actions (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
  class TEXT NOT NULL CHECK (class IN ('readonly','reversible','compensable','irreversible')),
  rule TEXT, call_key TEXT NOT NULL, args_ref TEXT NOT NULL,
  prior TEXT CHECK (prior IN ('captured','absent')), snapshot_ref TEXT,
  result_ref TEXT, inverse_ref TEXT, verify_ref TEXT, post_ref TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending','unknown','gated','approved','denied','applied',
    'failed','rolling_back','rolled_back','unrecoverable')),
  note TEXT, decided_by TEXT, decided_at TEXT, decision_note TEXT, used_by TEXT,
  idempotency_key TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  UNIQUE (run_id, seq));
CREATE INDEX actions_by_key ON actions (call_key, status);
CREATE INDEX actions_by_status ON actions (status);
CREATE TABLE undos (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  by TEXT NOT NULL, pid INTEGER, started_at TEXT NOT NULL, ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running','rolled_back','partial','halted','abandoned')),
  report_ref TEXT);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, action_id TEXT, undo_id TEXT,
  at TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX events_by_run ON events (run_id, id);
CREATE TABLE shapes (
  fingerprint TEXT PRIMARY KEY, server TEXT NOT NULL, tool TEXT NOT NULL, ref TEXT NOT NULL,
  first_seen TEXT NOT NULL);
"""),
]
SCHEMA_VERSION = _MIGRATIONS[-1][0]


_ID_POOL = bytearray()
_ID_LOCK = threading.Lock()


def new_id() -> str:
    """A random (version 4) UUID as text, like ``str(uuid.uuid4())``, from a pool of
    ``os.urandom`` bytes: one getrandom call per 256 ids, and no ``uuid`` import."""
    with _ID_LOCK:
        if len(_ID_POOL) < 16:
            _ID_POOL.extend(os.urandom(4096))
        b = _ID_POOL[-16:]
        del _ID_POOL[-16:]
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*")


def _q(value: str | None) -> str:
    """``canonical(value)`` for the ids, kinds and times of an event (quoted directly when
    nothing in them needs escaping)."""
    if value is None:
        return "null"
    if _PLAIN.fullmatch(value):
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def _event_body(run_id: str, action_id: str | None, undo_id: str | None, at: str, kind: str, data_text: str) -> str:
    """``canonical({"run", "action", "undo", "at", "kind", "data"})`` built around the data's
    canonical text (computed once: it is also the stored ``data`` column)."""
    return (f'{{"action":{_q(action_id)},"at":{_q(at)},"data":{data_text},"kind":{_q(kind)},'
            f'"run":{_q(run_id)},"undo":{_q(undo_id)}}}')


def now_iso(offset_s: float = 0.0) -> str:
    """UTC now (plus ``offset_s`` seconds) as ISO-8601 with milliseconds."""
    t = datetime.now(timezone.utc) + timedelta(seconds=offset_s)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RunRow:
    """A run: one MCP session through one proxy."""

    id: str
    label: str | None
    client: str | None
    started_at: str
    ended_at: str | None
    status: str
    pid: int | None
    servers: dict
    actions: int = 0
    counts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ActionRow:
    """One ``tools/call`` (or a held call) in a run. Payload refs are read with
    :meth:`Journal.get_json` (``args()`` etc. on the journal)."""

    id: str
    run_id: str
    seq: int
    server: str
    tool: str
    cls: str
    rule: str | None
    call_key: str
    args_ref: str
    prior: str | None
    snapshot_ref: str | None
    result_ref: str | None
    inverse_ref: str | None
    verify_ref: str | None
    post_ref: str | None
    status: str
    note: str | None
    decided_by: str | None
    decided_at: str | None
    decision_note: str | None
    used_by: str | None
    idempotency_key: str
    created_at: str
    updated_at: str

    @property
    def label(self) -> str:
        """Status for display: a spent approval shows as ``used`` (reference defect 36)."""
        return "used" if self.status == "approved" and self.used_by else self.status

    @property
    def qualified(self) -> str:
        return f"{self.server}.{self.tool}"


@dataclass(frozen=True)
class UndoRow:
    id: str
    run_id: str
    by: str
    pid: int | None
    started_at: str
    ended_at: str | None
    status: str
    report_ref: str | None


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :meth:`Journal.audit` for one run: ``ok`` and, if not, where it breaks."""

    run_id: str
    ok: bool
    events: int
    problems: list[str]


_ACTION_COLS = ("id, run_id, seq, server, tool, class, rule, call_key, args_ref, prior, snapshot_ref, "
                "result_ref, inverse_ref, verify_ref, post_ref, status, note, decided_by, decided_at, "
                "decision_note, used_by, idempotency_key, created_at, updated_at")


def _action(row: tuple) -> ActionRow:
    return ActionRow(*row)


def row_values(a: "ActionRow") -> tuple:
    """An ActionRow as the tuple of its columns (the order of ``_ACTION_COLS``)."""
    return (a.id, a.run_id, a.seq, a.server, a.tool, a.cls, a.rule, a.call_key, a.args_ref, a.prior,
            a.snapshot_ref, a.result_ref, a.inverse_ref, a.verify_ref, a.post_ref, a.status, a.note,
            a.decided_by, a.decided_at, a.decision_note, a.used_by, a.idempotency_key, a.created_at,
            a.updated_at)


class Journal:
    """A connection to one journal file. Not thread-safe; one per thread/process."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        self._seq_sources: dict[str, Any] = {}
        # What this connection last wrote, to skip statements: each run's chain head (checked by
        # a conditional UPDATE, so another writer is noticed) and the payloads its committed
        # rows reference (an active run's payloads are never collected; prune forgets them).
        self._heads: dict[str, str] = {}
        self._known_blobs: set[str] = set()
        self._tx_blobs: list[str] = []

    def own_run(self, run_id: str, next_seq: Any) -> None:
        """Let the process that owns ``run_id`` (its proxy) number its actions itself.

        The proxy numbers a call when it handles it, so a read journalled later by the reader
        thread keeps its place in the run's order; only that proxy inserts into its run.
        """
        self._seq_sources[run_id] = next_seq

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = False) -> "Journal":
        """Open (and with ``create`` make) the journal at ``path``.

        Only the proxy creates journals; every other command passes ``create=False``.
        Raises:
            NoJournalError: ``create`` is False and there is no file.
            JournalError: not a journal, a newer schema, unreadable, or a directory.
        """
        p = Path(path).expanduser()
        if not p.exists():
            if not create:
                raise NoJournalError(f"there is no journal at {p}; it is created by the first proxy that runs (or pass --journal)")
            try:
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o600)
                os.close(fd)
            except OSError as exc:
                raise JournalError(f"the journal at {p} could not be created: {exc.strerror or exc}") from None
        elif p.is_dir():
            raise JournalError(f"the journal at {p} could not be opened: it is a directory")
        try:
            conn = sqlite3.connect(str(p), timeout=10.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 10000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA foreign_keys = ON")
            sync = "FULL" if os.environ.get("SYNARTESIS_SYNC", "").lower() == "full" else "NORMAL"
            conn.execute(f"PRAGMA synchronous = {sync}")
            del mode
        except sqlite3.DatabaseError as exc:
            raise JournalError(_open_message(p, exc)) from None
        j = cls(p, conn)
        try:
            j._migrate()
        except BaseException:
            conn.close()
            raise
        return j

    def _migrate(self) -> None:
        try:
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                return
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"the journal at {self.path} was written by a newer synartesis (schema {version}; this "
                    f"build reads up to {SCHEMA_VERSION}). Upgrade synartesis, or point --journal at a new file; "
                    "keep this one: everything an agent did is in it.")
            with self._tx():
                version = self.conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    tables = self.conn.execute(
                        "SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
                    if tables:
                        raise JournalError(f"{self.path} is a SQLite database but not a Synartesis journal. "
                                           "Point --journal at a journal, or at a new file to start one.")
                    self.conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
                for number, name, sql in _MIGRATIONS:
                    if number > version:
                        for stmt in sql.split(";"):
                            if stmt.strip():
                                self.conn.execute(stmt)
                        self.conn.execute("INSERT INTO migrations VALUES (?,?,?)", (number, name, now_iso()))
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise JournalError(_open_message(self.path, exc)) from None

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    class _Tx:
        def __init__(self, journal: "Journal") -> None:
            self.journal = journal
            self.conn = journal.conn

        def __enter__(self) -> sqlite3.Connection:
            self.journal._tx_blobs.clear()
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, typ: Any, exc: Any, tb: Any) -> None:
            blobs, self.journal._tx_blobs = self.journal._tx_blobs, []
            if typ is None:
                self.conn.execute("COMMIT")
                self.journal._known_blobs.update(blobs)  # only what is on disk now
            else:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass

    def _tx(self) -> "Journal._Tx":
        return Journal._Tx(self)

    def _guard(self, op: str) -> "_Guard":
        return _Guard(op, self.path)

    # -- payloads ------------------------------------------------------------------------
    def _put_blob(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._tx_blobs.append(digest)
        if digest in self._known_blobs:
            return digest
        if len(data) > _ASK_FIRST and self.conn.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone():
            return digest  # already stored: spare the compression
        codec, stored = "raw", data
        if len(data) > 128:
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                codec, stored = "zlib", packed
        self.conn.execute("INSERT OR IGNORE INTO blobs (hash, codec, size, data) VALUES (?,?,?,?)",
                          (digest, codec, len(data), stored))
        return digest

    def _get_blob(self, digest: str) -> bytes:
        row = self.conn.execute("SELECT codec, data FROM blobs WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise JournalError(f"the journal at {self.path} is missing payload {digest[:12]}")
        try:
            return zlib.decompress(row[1]) if row[0] == "zlib" else bytes(row[1])
        except zlib.error:
            raise JournalError(f"the journal at {self.path} has a damaged payload {digest[:12]}; "
                               "`synartesis audit` says which action it belongs to") from None

    def _split(self, value: Any) -> Any:
        if isinstance(value, str):
            if len(value) >= _BLOB_MIN:
                return {_BLOB_KEY: self._put_blob(value.encode("utf-8", "surrogatepass"))}
            return value
        if isinstance(value, list):
            return [self._split(v) for v in value]
        if isinstance(value, dict):
            inner = {k: self._split(v) for k, v in value.items()}
            if _BLOB_KEY in value or _LIT_KEY in value:
                return {_LIT_KEY: inner}
            return inner
        return value

    def _join(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._join(v) for v in value]
        if isinstance(value, dict):
            if len(value) == 1 and _BLOB_KEY in value:
                return self._get_blob(value[_BLOB_KEY]).decode("utf-8", "surrogatepass")
            if len(value) == 1 and _LIT_KEY in value:
                return {k: self._join(v) for k, v in value[_LIT_KEY].items()}
            return {k: self._join(v) for k, v in value.items()}
        return value

    def put_json(self, value: Any) -> str:
        """Store a JSON value; return its ref. Call inside a tx.

        Large strings inside it become blobs (deduplicated, compressed); what remains is kept
        inline in the ref (``=`` + JSON) when small, else stored as a blob too.
        """
        split = self._split(value)
        skeleton = json.dumps(split, ensure_ascii=False, separators=(",", ":"))
        if not skeleton.isascii():
            try:
                skeleton.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: kept as its \u escape, read back as it was
                skeleton = json.dumps(split, separators=(",", ":"))
        if len(skeleton) <= _INLINE_MAX:
            return "=" + skeleton
        return self._put_blob(skeleton.encode("utf-8", "surrogatepass"))

    def get_json(self, ref: str | None) -> Any:
        """The value stored under ``ref`` (None for None)."""
        if ref is None:
            return None
        with self._guard("read"):
            if ref.startswith("="):
                return self._join(json.loads(ref[1:]))
            return self._join(json.loads(self._get_blob(ref).decode("utf-8", "surrogatepass")))

    # -- events --------------------------------------------------------------------------
    def _event(self, run_id: str, kind: str, data: dict, *, action_id: str | None = None,
               undo_id: str | None = None) -> None:
        at = now_iso()
        hashed, data_text = _chain_texts(data)
        body = _event_body(run_id, action_id, undo_id, at, kind, hashed)
        prev = self._heads.get(run_id)
        digest = ""
        if prev is not None:  # this connection wrote the head last, unless the UPDATE says otherwise
            digest = sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))
            if self.conn.execute("UPDATE runs SET head = ? WHERE id = ? AND head = ?",
                                 (digest, run_id, prev)).rowcount != 1:
                prev = None
        if prev is None:
            prev_row = self.conn.execute("SELECT head FROM runs WHERE id = ?", (run_id,)).fetchone()
            prev = prev_row[0] if prev_row else ""
            digest = sha256_hex((prev + "\n" + body).encode("utf-8", "surrogatepass"))
            self.conn.execute("UPDATE runs SET head = ? WHERE id = ?", (digest, run_id))
        self.conn.execute("INSERT INTO events (run_id, action_id, undo_id, at, kind, data, prev, hash) "
                          "VALUES (?,?,?,?,?,?,?,?)",
                          (run_id, action_id, undo_id, at, kind, data_text, prev, digest))
        self._heads[run_id] = digest

    def _action_event(self, action_id: str, kind: str) -> None:
        row = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE id = ?", (action_id,)).fetchone()
        if row is None:
            return
        a = _action(row)
        self._event(a.run_id, kind, _action_state(a), action_id=a.id)

    # -- runs ----------------------------------------------------------------------------
    def begin_run(self, label: str | None, servers: dict, client: str | None = None) -> str:
        """Open a run (status ``active``); ``servers`` = {name: launch line} recorded for undo."""
        run_id = new_id()
        with self._guard("begin run"), self._tx():
            self.conn.execute("INSERT INTO runs (id, label, client, started_at, status, pid, servers) "
                              "VALUES (?,?,?,?,?,?,?)",
                              (run_id, label, client, now_iso(), "active", os.getpid(), canonical(servers)))
            self._event(run_id, "run.begin", {"label": label, "servers": servers})
        return run_id

    def set_run_label(self, run_id: str, label: str) -> None:
        with self._guard("label run"), self._tx():
            self.conn.execute("UPDATE runs SET label = ? WHERE id = ? AND label IS NULL", (label, run_id))

    def end_run(self, run_id: str) -> bool:
        """``active`` → ``complete``; never overwrites an undo's status (reference defect 5)."""
        with self._guard("end run"), self._tx():
            cur = self.conn.execute("UPDATE runs SET status = 'complete', ended_at = ? "
                                    "WHERE id = ? AND status = 'active'", (now_iso(), run_id))
            if cur.rowcount:
                self._event(run_id, "run.end", {"status": "complete"})
            return cur.rowcount == 1

    def set_run_status(self, run_id: str, status: str) -> None:
        """Write an undo's outcome (``rolled_back`` / ``partial``) to the run."""
        assert status in RUN_STATUSES
        with self._guard("set run status"), self._tx():
            self.conn.execute("UPDATE runs SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE id = ?",
                              (status, now_iso(), run_id))
            self._event(run_id, "run.status", {"status": status})

    def _run_rows(self, where: str = "", params: tuple = ()) -> list[RunRow]:
        rows = self.conn.execute(
            "SELECT r.id, r.label, r.client, r.started_at, r.ended_at, r.status, r.pid, r.servers, "
            "(SELECT count(*) FROM actions a WHERE a.run_id = r.id) "
            f"FROM runs r {where} ORDER BY r.started_at DESC, r.rowid DESC", params).fetchall()
        out = []
        for r in rows:
            counts = dict(self.conn.execute("SELECT status, count(*) FROM actions WHERE run_id = ? GROUP BY status",
                                            (r[0],)).fetchall())
            out.append(RunRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7] or "{}"), r[8], counts))
        return out

    def list_runs(self) -> list[RunRow]:
        """Every run, newest first."""
        with self._guard("list runs"):
            return self._run_rows()

    def find_run(self, ref: str | None = None, *, status: Iterable[str] | None = None,
                 newest_not_active: bool = False) -> RunRow:
        """A run by id or unambiguous prefix; without ``ref`` the newest (optionally filtered).

        Raises:
            UsageError: nothing matches, or a prefix is ambiguous.
        """
        runs = self.list_runs()
        if status is not None:
            wanted = set(status)
            runs = [r for r in runs if r.status in wanted]
        if ref is not None:
            if not ref or not all(c in "0123456789abcdef-" for c in ref.lower()):
                raise UsageError(f"{ref!r} is not a run id (ids look like 1e1983ae)")
            hits = [r for r in runs if r.id == ref] or [r for r in runs if r.id.startswith(ref.lower())]
            if not hits:
                raise UsageError(f"no run matches {ref}")
            if len(hits) > 1:
                raise UsageError(f"{ref} matches {len(hits)} runs; give more of the id: "
                                 + ", ".join(r.id[:12] for r in hits[:5]))
            return hits[0]
        if newest_not_active:
            runs = [r for r in runs if r.status != "active"] or []
        if not runs:
            raise UsageError("there is no run to act on")
        return runs[0]

    def close_run(self, run_id: str) -> bool:
        """Close a run a killed proxy left ``active``; False if it was no longer active."""
        with self._guard("close run"), self._tx():
            last = self.conn.execute("SELECT max(updated_at) FROM actions WHERE run_id = ?", (run_id,)).fetchone()[0]
            cur = self.conn.execute("UPDATE runs SET status = 'complete', ended_at = ? WHERE id = ? AND status = 'active'",
                                    (last or now_iso(), run_id))
            if cur.rowcount:
                self._event(run_id, "run.close", {"status": "complete"})
            return cur.rowcount == 1

    # -- actions: recording ----------------------------------------------------------------
    def _insert_action(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                       args: Any, status: str, note: str | None, decided_by: str | None = None,
                       decided_at: str | None = None, *, prior: str | None = None, snapshot: Any = None,
                       verify: Any = None, result: Any = None, fetch: bool = True,
                       seq: int | None = None) -> ActionRow | None:
        if seq is None:
            source = self._seq_sources.get(run_id)
            seq = source() if source is not None else self.conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM actions WHERE run_id = ?", (run_id,)).fetchone()[0]
        aid = new_id()
        ts = now_iso()
        row = ActionRow(
            id=aid, run_id=run_id, seq=seq, server=server, tool=tool, cls=cls, rule=rule,
            call_key=call_key(server, tool, args), args_ref=self.put_json(args), prior=prior,
            snapshot_ref=self.put_json(snapshot) if prior == "captured" else None,
            result_ref=self.put_json(result) if result is not None else None, inverse_ref=None,
            verify_ref=self.put_json(verify) if verify is not None else None, post_ref=None,
            status=status, note=_text(note), decided_by=decided_by, decided_at=decided_at, decision_note=None,
            used_by=None, idempotency_key=f"{run_id}:{seq}", created_at=ts, updated_at=ts)
        self.conn.execute(f"INSERT INTO actions ({_ACTION_COLS}) VALUES ({','.join('?' * 24)})", row_values(row))
        self._event(run_id, "action.record", _action_state(row), action_id=aid)
        return row if fetch else None

    def record_action(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                      args: Any, status: str = "pending", note: str | None = None, *,
                      prior: str | None = None, snapshot: Any = None, verify: Any = None) -> ActionRow:
        """Insert an action with the next seq of its run (``BEGIN IMMEDIATE``).

        ``prior``/``snapshot``/``verify``: the pre-read, stored in the same transaction, so a
        write's row and the state it will replace are committed together before it is sent.
        """
        with self._guard("record action"), self._tx():
            return self._insert_action(run_id, server, tool, cls, rule, args, status, note,
                                       prior=prior, snapshot=snapshot, verify=verify)

    def record_reads(self, items: list[dict]) -> None:
        """Record finished reads in one transaction: each ``{run, server, tool, rule, args,
        status, note, result, seq}`` (``result`` already capped). Used by the proxy's journal
        thread: the rows and their events are inserted with one ``executemany`` each, every
        event's canonical text is built once, and each run's head is updated once."""
        if not items:
            return
        with self._guard("record reads"), self._tx():
            heads: dict[str, str] = {}
            rows: list[tuple] = []
            events: list[tuple] = []
            ts = now_iso()
            for it in items:
                run_id = it["run"]
                prev = heads.get(run_id)
                if prev is None:
                    found = self.conn.execute("SELECT head FROM runs WHERE id = ?", (run_id,)).fetchone()
                    if found is None:
                        continue  # the run is gone (pruned): nothing to attach the read to
                    prev = found[0]
                    heads[run_id] = prev
                seq = it.get("seq")
                if seq is None:
                    source = self._seq_sources.get(run_id)
                    seq = source() if source is not None else self.conn.execute(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM actions WHERE run_id = ?", (run_id,)).fetchone()[0]
                args, result = it["args"], it.get("result")
                aid = new_id()
                key, args_ref = self._key_and_ref(it["server"], it["tool"], args)
                row = (aid, run_id, seq, it["server"], it["tool"], "readonly", it.get("rule"), key, args_ref, None, None,
                       self.put_json(result) if result is not None else None, None, None, None,
                       it["status"], _text(it.get("note")), None, None, None, None, f"{run_id}:{seq}", ts, ts)
                hashed, data_text = _chain_texts(_row_state(row))
                digest = sha256_hex((prev + "\n" + _event_body(run_id, aid, None, ts, "action.record", hashed))
                                    .encode("utf-8", "surrogatepass"))
                rows.append(row)
                events.append((run_id, aid, ts, data_text, prev, digest))
                heads[run_id] = digest
            self.conn.executemany(f"INSERT INTO actions ({_ACTION_COLS}) VALUES ({','.join('?' * 24)})", rows)
            self.conn.executemany("INSERT INTO events (run_id, action_id, undo_id, at, kind, data, prev, hash) "
                                  "VALUES (?,?,NULL,?,'action.record',?,?,?)", events)
            self.conn.executemany("UPDATE runs SET head = ? WHERE id = ?", [(h, r) for r, h in heads.items()])
            self._heads.update(heads)

    def _key_and_ref(self, server: str, tool: str, args: Any) -> tuple[str, str]:
        """(call_key, args_ref) with the arguments serialised once when they are small (no
        string in them can be a blob, so the ref is their canonical text inline)."""
        text = canonical(args)
        if len(text) < _BLOB_MIN and "$synartesis." not in text and text.isascii():
            whole = f"[{canonical(server)},{canonical(tool)},{text}]"
            return sha256_hex(whole.encode("utf-8")), "=" + text
        return call_key(server, tool, args), self.put_json(args)

    def hold(self, run_id: str, server: str, tool: str, cls: str, rule: str | None, args: Any,
             reason: str, action_id: str | None = None) -> tuple[ActionRow, bool]:
        """Record a held (``gated``) call, reusing a waiting twin; return (row, reused).

        A twin is any ``gated`` row for the same server, tool and canonical arguments, in any
        run: an agent that retries before anyone answered never piles up rows (defect 3).
        ``action_id``: a row of this call already recorded (e.g. its pre-read found nothing);
        it becomes the held row unless a twin exists, in which case it is marked ``failed``.
        """
        key = call_key(server, tool, args)
        with self._guard("hold action"), self._tx():
            twin = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'gated' "
                                     "ORDER BY created_at LIMIT 1", (key,)).fetchone()
            if twin is not None:
                if action_id is not None:
                    self._set(action_id, "failed", note=f"held as action {twin[0]} (same call)")
                return _action(twin), True
            if action_id is not None:
                self._set(action_id, "gated", note=reason)
                return self._get_action(action_id), False
            return self._insert_action(run_id, server, tool, cls, rule, args, "gated", reason), False

    def find_denial(self, server: str, tool: str, args: Any) -> ActionRow | None:
        """A denial of this exact call within the last hour (defect 2: the agent is told)."""
        key = call_key(server, tool, args)
        with self._guard("find denial"):
            row = self.conn.execute(
                f"SELECT {_ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'denied' AND decided_at >= ? "
                "ORDER BY decided_at DESC LIMIT 1", (key, now_iso(-APPROVAL_TTL_S))).fetchone()
        return _action(row) if row else None

    def take_approval(self, run_id: str, server: str, tool: str, cls: str, rule: str | None,
                      args: Any, action_id: str | None = None) -> ActionRow | None:
        """Spend an unused approval of this exact call (under an hour old, any run).

        Returns the row that now carries the call (status ``pending``), or None.
        Same run and no ``action_id``: the approved row itself carries it. Otherwise
        ``action_id`` (a row of this call already recorded) or a new row in ``run_id`` gets the
        approver, and the approval is marked used by it. Single use (DESIGN §7).
        """
        key = call_key(server, tool, args)
        with self._guard("take approval"), self._tx():
            row = self.conn.execute(
                f"SELECT {_ACTION_COLS} FROM actions WHERE call_key = ? AND status = 'approved' AND used_by IS NULL "
                "AND decided_at >= ? ORDER BY decided_at DESC LIMIT 1", (key, now_iso(-APPROVAL_TTL_S))).fetchone()
            if row is None:
                return None
            granted = _action(row)
            if granted.run_id == run_id and action_id is None:
                self._set(granted.id, "pending", note=f"approved by {granted.decided_by}")
                return self._get_action(granted.id)
            if action_id is None:
                carrier = self._insert_action(run_id, server, tool, cls, rule, args, "pending",
                                              f"approved by {granted.decided_by} (as action {granted.id[:8]})",
                                              granted.decided_by, granted.decided_at)
            else:
                self.conn.execute("UPDATE actions SET decided_by = ?, decided_at = ?, note = ?, updated_at = ? WHERE id = ?",
                                  (granted.decided_by, granted.decided_at,
                                   f"approved by {granted.decided_by} (as action {granted.id[:8]})", now_iso(), action_id))
                self._action_event(action_id, "action.approved_carry")
                carrier = self._get_action(action_id)
            self.conn.execute("UPDATE actions SET used_by = ?, updated_at = ? WHERE id = ?",
                              (carrier.id, now_iso(), granted.id))
            self._action_event(granted.id, "action.approval_used")
            return carrier

    def _set(self, action_id: str, status: str, *, note: Any = ..., expect: Iterable[str] | None = None,
             **refs: Any) -> bool:
        sets, params = ["status = ?", "updated_at = ?"], [status, now_iso()]
        if note is not ...:
            sets.append("note = ?")
            params.append(note)
        for col, value in refs.items():
            sets.append(f"{col} = ?")
            params.append(value)
        where = "id = ?"
        params.append(action_id)
        if expect is not None:
            exp = list(expect)
            where += f" AND status IN ({','.join('?' * len(exp))})"
            params.extend(exp)
        cur = self.conn.execute(f"UPDATE actions SET {', '.join(sets)} WHERE {where}", params)
        if cur.rowcount:
            self._action_event(action_id, f"action.{status}")
        return cur.rowcount == 1

    def set_prior(self, action_id: str, prior: str, snapshot: Any = None, verify: Any = None) -> None:
        """Store the pre-read: ``prior`` is ``captured`` (with ``snapshot`` payload) or ``absent``.
        Committed before the call is forwarded (PROXY.md §2.8)."""
        with self._guard("store snapshot"), self._tx():
            snap = self.put_json(snapshot) if prior == "captured" else None
            ver = self.put_json(verify) if verify is not None else None
            row = self.conn.execute(
                "UPDATE actions SET prior = ?, snapshot_ref = ?, verify_ref = ?, updated_at = ? WHERE id = ? "
                f"RETURNING {_ACTION_COLS}", (prior, snap, ver, now_iso(), action_id)).fetchone()
            if row is not None:
                a = _action(row)
                self._event(a.run_id, "action.snapshot", _action_state(a), action_id=a.id)

    def mark_applied(self, action_id: str, *, result: Any, inverse: list | None, verify: Any,
                     post: Any, note: str | None) -> None:
        """The call succeeded: store result, resolved inverse, drift read and post-state.

        One transaction of four statements (the row's update returns the row its event needs);
        conditional on the action still being ``pending`` or ``unknown``.
        """
        with self._guard("mark applied"), self._tx():
            refs = (self.put_json(result), self.put_json(inverse) if inverse else None,
                    self.put_json(verify) if verify is not None else None,
                    self.put_json(post) if post is not None else None)
            row = self.conn.execute(
                "UPDATE actions SET status = 'applied', updated_at = ?, note = ?, result_ref = ?, inverse_ref = ?, "
                f"verify_ref = ?, post_ref = ? WHERE id = ? AND status IN ('pending','unknown') RETURNING {_ACTION_COLS}",
                (now_iso(), _text(note), *refs, action_id)).fetchone()
            if row is not None:
                a = _action(row)
                self._event(a.run_id, "action.applied", _action_state(a), action_id=a.id)

    def mark_failed(self, action_id: str, note: str, result: Any = None) -> None:
        """The call certainly did not happen (refused, ``isError``, never sent)."""
        with self._guard("mark failed"), self._tx():
            self._set(action_id, "failed", note=note, expect=("pending", "unknown", "gated"),
                      result_ref=self.put_json(result) if result is not None else None)

    def mark_unknown(self, action_id: str, note: str) -> None:
        """Sent, but no answer (timeout, disconnect, cancellation): undo halts here."""
        with self._guard("mark unknown"), self._tx():
            self._set(action_id, "unknown", note=note, expect=("pending",))

    # -- decisions -----------------------------------------------------------------------
    def decide(self, action_id: str, approve: bool, by: str, reason: str | None = None) -> bool:
        """Approve or deny a held call; False if it was no longer ``gated`` (a lost race)."""
        with self._guard("record decision"), self._tx():
            if approve:
                return self._set(action_id, "approved", note=None, expect=("gated",), decided_by=by,
                                 decided_at=now_iso())
            return self._set(action_id, "denied", note=None, expect=("gated",), decided_by=by,
                             decided_at=now_iso(), decision_note=reason or "denied")

    def list_gated(self) -> list[ActionRow]:
        """Every held call across all runs, oldest first."""
        with self._guard("list held calls"):
            rows = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE status = 'gated' ORDER BY created_at").fetchall()
        return [_action(r) for r in rows]

    # -- actions: reading ----------------------------------------------------------------
    def _get_action(self, action_id: str) -> ActionRow:
        row = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE id = ?", (action_id,)).fetchone()
        if row is None:
            raise JournalError(f"action {action_id} vanished from the journal")
        return _action(row)

    def get_action(self, action_id: str) -> ActionRow:
        with self._guard("read action"):
            return self._get_action(action_id)

    def find_action(self, ref: str) -> ActionRow:
        """An action by id or unambiguous prefix.

        Raises:
            UsageError: nothing matches, or the prefix is ambiguous.
        """
        if not ref or not all(c in "0123456789abcdef-" for c in ref.lower()):
            raise UsageError(f"{ref!r} is not an action id (ids look like 1e1983ae)")
        with self._guard("find action"):
            rows = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE id = ? OR id LIKE ?",
                                     (ref, ref.lower() + "%")).fetchall()
        exact = [r for r in rows if r[0] == ref]
        rows = exact or rows
        if not rows:
            raise UsageError(f"no action matches {ref}")
        if len(rows) > 1:
            raise UsageError(f"{ref} matches {len(rows)} actions; give more of the id")
        return _action(rows[0])

    def actions(self, run_id: str) -> list[ActionRow]:
        """A run's actions by seq."""
        with self._guard("read actions"):
            rows = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions WHERE run_id = ? ORDER BY seq",
                                     (run_id,)).fetchall()
        return [_action(r) for r in rows]

    def recent_actions(self, limit: int = 12) -> list[ActionRow]:
        """The newest actions across runs, oldest first."""
        with self._guard("read actions"):
            rows = self.conn.execute(f"SELECT {_ACTION_COLS} FROM actions ORDER BY created_at DESC, seq DESC LIMIT ?",
                                     (limit,)).fetchall()
        return [_action(r) for r in reversed(rows)]

    def data_version(self) -> int:
        """Changes whenever another connection commits (cheap polling for live views)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    # -- undo ----------------------------------------------------------------------------
    def set_action_status(self, action_id: str, status: str, note: Any = ...,
                          expect: Iterable[str] | None = None) -> bool:
        """Conditional status change used by undo (claims, outcomes). False if lost."""
        with self._guard("update action"), self._tx():
            return self._set(action_id, status, note=note, expect=expect)

    def begin_undo(self, run_id: str, by: str) -> str | None:
        """Start an undo attempt; None when another live undo of this run is running.

        An attempt whose process is gone (same host) is marked ``abandoned`` and taken over.
        """
        with self._guard("begin undo"), self._tx():
            for uid, pid in self.conn.execute("SELECT id, pid FROM undos WHERE run_id = ? AND status = 'running'",
                                              (run_id,)).fetchall():
                if pid and _alive(pid):
                    return None
                self.conn.execute("UPDATE undos SET status = 'abandoned', ended_at = ? WHERE id = ?", (now_iso(), uid))
                self._event(run_id, "undo.abandoned", {"undo": uid}, undo_id=uid)
            uid = new_id()
            self.conn.execute("INSERT INTO undos (id, run_id, by, pid, started_at, status) VALUES (?,?,?,?,?,?)",
                              (uid, run_id, by, os.getpid(), now_iso(), "running"))
            self._event(run_id, "undo.begin", {"by": by}, undo_id=uid)
            return uid

    def undo_step(self, undo_id: str, run_id: str, step: dict) -> None:
        """Record one step's outcome of an undo attempt (chained like actions)."""
        with self._guard("record undo step"), self._tx():
            self._event(run_id, "undo.step", step, undo_id=undo_id, action_id=step.get("action"))

    def finish_undo(self, undo_id: str, run_id: str, status: str, report: Any) -> None:
        """Close an undo attempt with its outcome and full report."""
        with self._guard("finish undo"), self._tx():
            ref = self.put_json(report)
            self.conn.execute("UPDATE undos SET status = ?, ended_at = ?, report_ref = ? WHERE id = ?",
                              (status, now_iso(), ref, undo_id))
            self._event(run_id, "undo.end", {"status": status, "report": ref}, undo_id=undo_id)

    def undos(self, run_id: str) -> list[UndoRow]:
        with self._guard("read undos"):
            rows = self.conn.execute("SELECT id, run_id, by, pid, started_at, ended_at, status, report_ref FROM undos "
                                     "WHERE run_id = ? ORDER BY started_at", (run_id,)).fetchall()
        return [UndoRow(*r) for r in rows]

    # -- tool shapes (so a pin mismatch can name the field that changed) --------------
    def remember_shapes(self, server: str, shapes: dict[str, dict]) -> None:
        """Store tool objects seen in ``tools/list`` by fingerprint (``{fingerprint: tool}``)."""
        with self._guard("remember tool shapes"), self._tx():
            for fp, tool in shapes.items():
                if not self.conn.execute("SELECT 1 FROM shapes WHERE fingerprint = ?", (fp,)).fetchone():
                    self.conn.execute("INSERT INTO shapes VALUES (?,?,?,?,?)",
                                      (fp, server, str(tool.get("name")), self.put_json(tool), now_iso()))

    def shapes(self, fingerprints: Iterable[str]) -> dict[str, dict]:
        """Tool objects recorded under these fingerprints (those that are known)."""
        out: dict[str, dict] = {}
        with self._guard("read tool shapes"):
            for fp in fingerprints:
                row = self.conn.execute("SELECT ref FROM shapes WHERE fingerprint = ?", (fp,)).fetchone()
                if row:
                    out[fp] = self._join(json.loads(self._get_blob(row[0])))
        return out

    # -- audit and prune -----------------------------------------------------------------
    def audit(self, run_id: str) -> AuditResult:
        """Re-compute the run's hash chain and compare it with the action rows.

        Finds: an edited or deleted event (a broken link or hash), a truncated chain (head
        mismatch), action rows whose status or payloads differ from their last recorded event,
        and rows with no recorded history.
        """
        problems: list[str] = []
        with self._guard("audit"):
            head = self.conn.execute("SELECT head FROM runs WHERE id = ?", (run_id,)).fetchone()
            events = self.conn.execute("SELECT id, action_id, undo_id, at, kind, data, prev, hash FROM events "
                                       "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
            actions = {a.id: a for a in self.actions(run_id)}
        if head is None:
            return AuditResult(run_id, False, 0, [f"run {run_id} is not in the journal"])
        prev = ""
        last_state: dict[str, dict] = {}
        for eid, action_id, undo_id, at, kind, data, eprev, ehash in events:
            if eprev != prev:
                problems.append(f"event {eid} ({kind} at {at}) does not follow the one before it: "
                                "an event was removed or reordered here")
            body = canonical({"run": run_id, "action": action_id, "undo": undo_id, "at": at, "kind": kind,
                              "data": json.loads(data)})
            if sha256_hex((eprev + "\n" + body).encode("utf-8", "surrogatepass")) != ehash:
                problems.append(f"event {eid} ({kind} at {at}) was altered after it was written")
            prev = ehash
            if action_id and kind.startswith("action."):
                last_state[action_id] = json.loads(data)
        if prev != (head[0] or ""):
            problems.append("the newest events of this run are missing (the chain ends before the run's head)")
        begin = next((json.loads(e[5]) for e in events if e[4] == "run.begin"), None)
        with self._guard("audit"):
            servers = self.conn.execute("SELECT servers FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        if begin is not None and canonical(json.loads(servers or "{}")) != canonical(begin.get("servers") or {}):
            problems.append("the run's recorded launch lines were edited after it started")
        for a in actions.values():
            for ref in (a.args_ref, a.snapshot_ref, a.result_ref, a.inverse_ref, a.verify_ref, a.post_ref):
                bad = self._bad_payload(ref)
                if bad:
                    problems.append(f"action {a.seq} ({a.qualified}): {bad}")
                    break
        for aid, a in actions.items():
            if aid not in last_state:
                problems.append(f"action {a.seq} ({a.qualified}) has no recorded history: inserted outside synartesis")
            elif last_state[aid] != _action_state(a):
                problems.append(f"action {a.seq} ({a.qualified}) differs from what was recorded: edited afterwards")
        for aid, state in last_state.items():
            if aid not in actions:
                problems.append(f"action {state.get('seq')} ({state.get('server')}.{state.get('tool')}) was "
                                "recorded but its row is gone: removed afterwards")
        # A gap in seqs is not evidence: a read numbered by a proxy that was then killed before
        # its reader thread wrote it leaves one. Removed rows are caught by the chain instead.
        return AuditResult(run_id, not problems, len(events), problems)

    def _bad_payload(self, ref: str | None) -> str | None:
        """Why the payload under ``ref`` cannot be trusted (its bytes no longer hash to its
        name, or it is missing), or None."""
        if not ref:
            return None
        refs = [ref]
        while refs:
            r = refs.pop()
            try:
                if r.startswith("="):
                    skeleton = json.loads(r[1:])
                else:
                    data = self._get_blob(r)
                    if sha256_hex(data) != r:
                        return f"stored payload {r[:12]} was altered after it was written"
                    skeleton = json.loads(data) if data[:1] in (b"{", b"[") else None
            except JournalError:
                return f"stored payload {r[:12]} is missing"
            except (ValueError, zlib.error, UnicodeDecodeError):
                return f"stored payload {r[:12]} is unreadable"
            if skeleton is not None:
                refs.extend(_blob_refs(skeleton))
        return None

    def prunable(self, run: RunRow) -> str | None:
        """Why ``run`` must be kept (None when it may be pruned)."""
        if run.status == "active":
            return "it is still active"
        if run.counts.get("gated"):
            return "it holds a call waiting for approval"
        if run.counts.get("unrecoverable") or run.counts.get("rolling_back"):
            return "its undo halted; a person must look at it first"
        return None

    def prune(self, run_ids: list[str]) -> int:
        """Delete whole runs (actions, undos, events) and unreferenced payloads; VACUUM.

        Returns the number of runs deleted. Callers check :meth:`prunable` first.
        """
        self._known_blobs.clear()
        with self._guard("prune"):
            with self._tx():
                for rid in run_ids:
                    self.conn.execute("DELETE FROM events WHERE run_id = ?", (rid,))
                    self.conn.execute("DELETE FROM actions WHERE run_id = ?", (rid,))
                    self.conn.execute("DELETE FROM undos WHERE run_id = ?", (rid,))
                    self.conn.execute("DELETE FROM runs WHERE id = ?", (rid,))
                self._collect_garbage()
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.execute("VACUUM")
        return len(run_ids)

    def _collect_garbage(self) -> None:
        live: set[str] = set()
        cols = ("args_ref", "snapshot_ref", "result_ref", "inverse_ref", "verify_ref", "post_ref")
        for row in self.conn.execute(f"SELECT {', '.join(cols)} FROM actions"):
            live.update(r for r in row if r)
        live.update(r[0] for r in self.conn.execute("SELECT report_ref FROM undos WHERE report_ref IS NOT NULL"))
        live.update(r[0] for r in self.conn.execute("SELECT ref FROM shapes"))
        for data in self.conn.execute("SELECT data FROM events WHERE kind = 'undo.end'").fetchall():
            ref = json.loads(data[0]).get("report")
            if ref:
                live.add(ref)
        stack = list(live)
        while stack:  # skeletons (inline or blobs) point at string blobs
            ref = stack.pop()
            try:
                skeleton = json.loads(ref[1:] if ref.startswith("=") else self._get_blob(ref))
            except (ValueError, JournalError, UnicodeDecodeError):
                continue
            for inner in _blob_refs(skeleton):
                if inner not in live:
                    live.add(inner)
        for (digest,) in self.conn.execute("SELECT hash FROM blobs").fetchall():
            if digest not in live:
                self.conn.execute("DELETE FROM blobs WHERE hash = ?", (digest,))


def _blob_refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if len(value) == 1 and _BLOB_KEY in value and isinstance(value[_BLOB_KEY], str):
            yield value[_BLOB_KEY]
            return
        for v in value.values():
            yield from _blob_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _blob_refs(v)


def _text(note: Any) -> Any:
    """A note as TEXT SQLite accepts: a lone surrogate (from a server's message) kept as its
    escape rather than failing the whole transaction."""
    if isinstance(note, str) and not note.isascii():
        try:
            note.encode("utf-8")
        except UnicodeEncodeError:
            return note.encode("utf-8", "backslashreplace").decode("utf-8")
    return note


def _chain_texts(data: Any) -> tuple[str, str]:
    """(what the chain hashes, what is stored) for an event's data: both its canonical JSON,
    except that a lone surrogate is stored as its escape (SQLite TEXT must be UTF-8) while the
    hash stays over the canonical text that :meth:`Journal.audit` recomputes."""
    text = canonical(data)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text, json.dumps(data, sort_keys=True, separators=(",", ":"))
    return text, text


def _row_state(r: tuple) -> dict:
    """:func:`_action_state` of a row tuple in ``_ACTION_COLS`` order."""
    return {"seq": r[2], "server": r[3], "tool": r[4], "class": r[5], "key": r[7], "args": r[8], "status": r[15],
            "prior": r[9], "snapshot": r[10], "result": r[11], "inverse": r[12], "verify": r[13], "post": r[14],
            "by": r[17], "used_by": r[20], "decision": r[19]}


def _action_state(a: ActionRow) -> dict:
    """The part of an action row the event chain vouches for."""
    return {"seq": a.seq, "server": a.server, "tool": a.tool, "class": a.cls, "key": a.call_key,
            "args": a.args_ref, "status": a.status, "prior": a.prior, "snapshot": a.snapshot_ref,
            "result": a.result_ref, "inverse": a.inverse_ref, "verify": a.verify_ref, "post": a.post_ref,
            "by": a.decided_by, "used_by": a.used_by, "decision": a.decision_note}


def process_alive(pid: int) -> bool:
    """True when a process with this id exists on this machine (or cannot be checked)."""
    return _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _open_message(p: Path, exc: Exception) -> str:
    text = str(exc)
    if "not a database" in text or "file is encrypted" in text:
        return f"{p} is not a Synartesis journal. Point --journal at a journal, or at a new file to start one."
    return f"the journal at {p} could not be opened: {text}"


class _Guard:
    """Turns sqlite3 errors into JournalError("journal OP failed: …")."""

    def __init__(self, op: str, path: Path) -> None:
        self.op, self.path = op, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: Any, tb: Any) -> bool:
        if exc is not None and isinstance(exc, sqlite3.Error):
            raise JournalError(f"journal {self.op} failed ({self.path}): {exc}") from exc
        return False


del time
