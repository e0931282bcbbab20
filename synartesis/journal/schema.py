"""The journal's schema and its migrations (DESIGN §5).

Migrations are ordered, recorded in ``migrations`` (number, name, when) and in the backend's
schema version, and applied together in one write transaction: proxies that start together on
a new file never see half a schema (the reference lost some), and an upgrade either happens
whole or not at all. A migration never drops history: tables whose constraints change are
rebuilt by copying every row (SQLite cannot alter a CHECK), with foreign keys off around the
transaction so the copy cannot cascade.

Each migration carries its DDL for both backends: SQLite's (``sql``) and PostgreSQL's (``pg``,
issue 14), with the same numbers and names. PostgreSQL alters constraints in place, so nothing
is rebuilt there; its runs and undos get an identity column (``ord``) where SQLite has ``rowid``.
PostgreSQL journals start with this release, so its schema 2 also holds what only a team
journal has: each run's ``owner`` (a database role), the ``team`` table and the row-level
security that enforces it (issue 14); on SQLite the OS user owns everything.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from synartesis.errors import JournalConfigError
from synartesis.journal.rows import now_iso

if TYPE_CHECKING:
    from synartesis.journal.sqlite import SqliteBackend

__all__ = ["Migration", "MIGRATIONS", "SCHEMA_VERSION", "migrate"]


@dataclass(frozen=True)
class Migration:
    number: int
    name: str
    sql: str
    rebuilds: bool = False  # copies tables that others reference (needs foreign keys off)
    pg: str = ""  # the same change in PostgreSQL's DDL (run as one script)
    sqlite_step: "Callable[[SqliteBackend], None] | None" = None  # run after ``sql`` on SQLite

    def ddl(self, backend: str) -> str:
        return self.pg if backend == "postgresql" else self.sql


_INITIAL = """
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
"""

# Schema 2 (issue 10): agent sessions; who launched each run (pid + start token, host); a
# journal-wide action order; honest run statuses (compensated, redone) with the unverified
# count; how each action was reverted; undo attempts that can be redo and saga attempts and
# span a session. Runs that predate it become sessions of their own ('run'); their actions get
# journal-wide numbers in the order they were recorded.
_SESSIONS = """
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('client','explicit','run')),
  name TEXT, client TEXT, client_pid INTEGER, client_started TEXT, host TEXT,
  started_at TEXT NOT NULL);
CREATE INDEX sessions_by_name ON sessions (name);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE runs_v2 (
  id TEXT PRIMARY KEY, label TEXT, client TEXT,
  started_at TEXT NOT NULL, ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('active','complete','rolled_back','partial','compensated','redone')),
  pid INTEGER, servers TEXT NOT NULL DEFAULT '{}', head TEXT NOT NULL DEFAULT '',
  session_id TEXT REFERENCES sessions(id), proxy_started TEXT, host TEXT,
  unverified INTEGER NOT NULL DEFAULT 0, end_note TEXT);
INSERT INTO sessions (id, kind, client, started_at)
  SELECT 's-' || substr(id, 1, 8) || substr(id, 10, 4) || substr(id, 15, 4), 'run', COALESCE(client, label), started_at
  FROM runs;
INSERT INTO runs_v2 (id, label, client, started_at, ended_at, status, pid, servers, head, session_id)
  SELECT id, label, client, started_at, ended_at, status, pid, servers, head,
         's-' || substr(id, 1, 8) || substr(id, 10, 4) || substr(id, 15, 4)
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_by_session ON runs (session_id, started_at);
ALTER TABLE actions ADD COLUMN gseq INTEGER;
ALTER TABLE actions ADD COLUMN reverted TEXT CHECK (reverted IN ('verified','unverified','found'));
CREATE TEMP TABLE gseq_order (id TEXT PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO gseq_order SELECT id, row_number() OVER (ORDER BY created_at, run_id, seq) FROM actions;
UPDATE actions SET gseq = (SELECT n FROM gseq_order WHERE gseq_order.id = actions.id);
DROP TABLE gseq_order;
INSERT INTO counters (name, value) SELECT 'gseq', COALESCE(MAX(gseq), 0) FROM actions;
CREATE UNIQUE INDEX actions_by_gseq ON actions (gseq);
CREATE TABLE undos_v2 (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  by TEXT NOT NULL, pid INTEGER, started_at TEXT NOT NULL, ended_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running','rolled_back','partial','halted','abandoned',
    'compensated','redone','nothing')),
  report_ref TEXT,
  kind TEXT NOT NULL DEFAULT 'undo' CHECK (kind IN ('undo','redo','saga')),
  attempt TEXT, scope TEXT, pid_started TEXT);
INSERT INTO undos_v2 (id, run_id, by, pid, started_at, ended_at, status, report_ref, kind, attempt, scope)
  SELECT id, run_id, by, pid, started_at, ended_at, status, report_ref, 'undo', id, '{"run":"' || run_id || '"}'
  FROM undos;
DROP TABLE undos;
ALTER TABLE undos_v2 RENAME TO undos;
CREATE INDEX undos_by_run ON undos (run_id, started_at);
CREATE INDEX undos_by_attempt ON undos (attempt);
"""

def _pg_types(sql: str) -> str:
    """SQLite's DDL with PostgreSQL's types (the first schema is the same tables in both)."""
    return (sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
               .replace(" INTEGER", " BIGINT").replace(" BLOB", " BYTEA"))


# Runs and undos get an identity column to order rows of the same millisecond (SQLite's rowid).
_INITIAL_PG = _pg_types(_INITIAL) + """
ALTER TABLE runs ADD COLUMN ord BIGINT GENERATED BY DEFAULT AS IDENTITY;
ALTER TABLE undos ADD COLUMN ord BIGINT GENERATED BY DEFAULT AS IDENTITY;
CREATE INDEX actions_by_run ON actions (run_id, seq);
"""

_SESSIONS_PG = """
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('client','explicit','run')),
  name TEXT, client TEXT, client_pid BIGINT, client_started TEXT, host TEXT,
  started_at TEXT NOT NULL);
CREATE INDEX sessions_by_name ON sessions (name);
CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
ALTER TABLE runs DROP CONSTRAINT runs_status_check,
  ADD CONSTRAINT runs_status_check CHECK (status IN ('active','complete','rolled_back','partial','compensated','redone')),
  ADD COLUMN session_id TEXT REFERENCES sessions(id), ADD COLUMN proxy_started TEXT, ADD COLUMN host TEXT,
  ADD COLUMN unverified BIGINT NOT NULL DEFAULT 0, ADD COLUMN end_note TEXT;
INSERT INTO sessions (id, kind, client, started_at)
  SELECT 's-' || substr(id, 1, 8) || substr(id, 10, 4) || substr(id, 15, 4), 'run', COALESCE(client, label), started_at
  FROM runs;
UPDATE runs SET session_id = 's-' || substr(id, 1, 8) || substr(id, 10, 4) || substr(id, 15, 4);
CREATE INDEX runs_by_session ON runs (session_id, started_at);
ALTER TABLE actions ADD COLUMN gseq BIGINT,
  ADD COLUMN reverted TEXT CHECK (reverted IN ('verified','unverified','found'));
UPDATE actions SET gseq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, run_id, seq) AS n
  FROM actions) o WHERE o.id = actions.id;
INSERT INTO counters (name, value) SELECT 'gseq', COALESCE(MAX(gseq), 0) FROM actions;
CREATE UNIQUE INDEX actions_by_gseq ON actions (gseq);
ALTER TABLE undos DROP CONSTRAINT undos_status_check,
  ADD CONSTRAINT undos_status_check CHECK (status IN ('running','rolled_back','partial','halted','abandoned',
    'compensated','redone','nothing')),
  ADD COLUMN kind TEXT NOT NULL DEFAULT 'undo' CHECK (kind IN ('undo','redo','saga')),
  ADD COLUMN attempt TEXT, ADD COLUMN scope TEXT, ADD COLUMN pid_started TEXT;
UPDATE undos SET attempt = id, scope = '{"run":"' || run_id || '"}';
CREATE INDEX undos_by_run ON undos (run_id, started_at);
CREATE INDEX undos_by_attempt ON undos (attempt);
""" + """
-- Who may do what (issue 14), enforced by the database: each run belongs to the database role
-- that began it; a member changes only rows of their own runs, an admin any (the role that
-- created the journal owns its tables and is an admin too). Everyone reads everything.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT CAST(current_user AS TEXT);
CREATE TABLE team (
  name TEXT PRIMARY KEY, role TEXT NOT NULL CHECK (role IN ('admin','member')),
  added_by TEXT NOT NULL, added_at TEXT NOT NULL);
INSERT INTO team (name, role, added_by, added_at)
  VALUES (CAST(current_user AS TEXT), 'admin', CAST(current_user AS TEXT), to_char(now() AT TIME ZONE 'UTC',
  'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
CREATE FUNCTION synartesis_may(run_owner TEXT) RETURNS boolean LANGUAGE sql STABLE
  SET search_path FROM CURRENT AS
  $$ SELECT run_owner = CAST(current_user AS TEXT)
       OR EXISTS (SELECT 1 FROM team WHERE name = CAST(current_user AS TEXT) AND role = 'admin') $$;
CREATE FUNCTION synartesis_may_run(run TEXT) RETURNS boolean LANGUAGE sql STABLE
  SET search_path FROM CURRENT AS
  $$ SELECT COALESCE((SELECT synartesis_may(owner) FROM runs WHERE id = run), false) $$;
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_read ON runs FOR SELECT USING (true);
CREATE POLICY runs_begin ON runs FOR INSERT WITH CHECK (owner = CAST(current_user AS TEXT));
CREATE POLICY runs_change ON runs FOR UPDATE USING (synartesis_may(owner)) WITH CHECK (synartesis_may(owner));
CREATE POLICY runs_prune ON runs FOR DELETE USING (synartesis_may(owner));
ALTER TABLE actions ENABLE ROW LEVEL SECURITY;
CREATE POLICY actions_read ON actions FOR SELECT USING (true);
CREATE POLICY actions_record ON actions FOR INSERT WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY actions_change ON actions FOR UPDATE USING (synartesis_may_run(run_id))
  WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY actions_prune ON actions FOR DELETE USING (synartesis_may_run(run_id));
ALTER TABLE undos ENABLE ROW LEVEL SECURITY;
CREATE POLICY undos_read ON undos FOR SELECT USING (true);
CREATE POLICY undos_begin ON undos FOR INSERT WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY undos_change ON undos FOR UPDATE USING (synartesis_may_run(run_id)) WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY undos_prune ON undos FOR DELETE USING (synartesis_may_run(run_id));
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
CREATE POLICY events_read ON events FOR SELECT USING (true);
CREATE POLICY events_append ON events FOR INSERT WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY events_prune ON events FOR DELETE USING (synartesis_may_run(run_id));
"""

# Schema 3 (issue 11 items 4 and 6): payloads larger than 16 KiB may be stored as content-defined
# chunks (blobs codec 'chunks', listing its chunks' digests; an older build must not read one as
# raw bytes, hence the number). The chunks a payload brings are written together as one pack
# (``packs.data``: the chunks one after another, zlib-compressed as one stream when that is
# smaller); ``chunks`` says where each one is: its pack, byte offset from 0 and length in the
# pack's inflated bytes, the pack's codec ('zpack' compressed, 'raw' not), and its size.
# The actions indexes a read or a write never needs while it is recorded go: gate lookups by
# call key are served by partial indexes that only held, approved and denied rows enter (the
# queries in gates.py repeat each index's condition exactly), and nothing looks actions up by
# status alone. Nothing is copied: the upgrade adds two tables and swaps indexes.
_CHUNKS_AND_LEAN_INDEXES = """
CREATE TABLE packs (id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE chunks (
  hash TEXT PRIMARY KEY, pack TEXT NOT NULL, start INTEGER NOT NULL, length INTEGER NOT NULL,
  codec TEXT NOT NULL, size INTEGER NOT NULL);
DROP INDEX actions_by_key;
DROP INDEX actions_by_status;
CREATE INDEX actions_gated ON actions (call_key) WHERE status = 'gated';
CREATE INDEX actions_approved ON actions (call_key) WHERE status = 'approved';
CREATE INDEX actions_denied ON actions (call_key) WHERE status = 'denied';
"""

# PostgreSQL: the same, with bytea; offsets stay 4-byte integers (what substr(bytea, …) takes).
_CHUNKS_AND_LEAN_INDEXES_PG = _CHUNKS_AND_LEAN_INDEXES.replace(" BLOB", " BYTEA")

# Schema 4 (issue 11 item 6, edit series): chunks are named in a blob's list by their row number
# (blobs codec 'chunkids': delta-coded, compressed) instead of a 32-byte digest each, so small
# chunks are cheap to list; a chunk's digest is kept as 32 bytes and found through an index of
# its first 8 (``key``, a signed integer; the whole digest is compared), and its pack says its
# own codec ('zlib' one stream, 'raw'). Numbers are never reused (AUTOINCREMENT; PostgreSQL's
# identity sequences never reuse either): a connection keeps inflated packs and chunk places by
# number, and a number freed by a prune elsewhere must not come back as other bytes. Schema 3's tables stay as they were under new names
# (chunks3, packs3): their lists are read as before, nothing is copied, and prune collects from
# both. Event data on SQLite may now be a zlib BLOB of its text (rows.packed_event): an older
# build must not read it, which the number also says.
_CHUNK_IDS = """
ALTER TABLE chunks RENAME TO chunks3;
ALTER TABLE packs RENAME TO packs3;
CREATE TABLE packs (id INTEGER PRIMARY KEY AUTOINCREMENT, codec TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER NOT NULL, hash BLOB NOT NULL, pack INTEGER NOT NULL,
  start INTEGER NOT NULL, length INTEGER NOT NULL);
CREATE INDEX chunks_by_key ON chunks (key);
"""

def _grant_to_team(tables: str, member: tuple[str, ...]) -> str:
    """PostgreSQL DDL that gives the team's members what they have on the other tables on new
    ones: admins every privilege on ``tables`` (with grant option), members the ``member``
    grants (each ``GRANT … ON …`` without its grantee)."""
    grants = "\n".join(f"      EXECUTE format('{g} TO %I', m.name);" for g in member)
    return f"""DO $$
DECLARE m record;
BEGIN
  FOR m IN SELECT t.name, t.role FROM team t JOIN pg_roles r ON r.rolname = t.name LOOP
    IF m.role = 'admin' THEN
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO %I WITH GRANT OPTION', m.name);
    ELSE
{grants}
    END IF;
  END LOOP;
END $$;
"""


# PostgreSQL: identity columns; the renamed tables' indexes are renamed too (index names are
# per schema), and the team's members get on the new tables what they had on the old ones.
_CHUNK_IDS_PG = """
ALTER TABLE chunks RENAME TO chunks3;
ALTER INDEX chunks_pkey RENAME TO chunks3_pkey;
ALTER TABLE packs RENAME TO packs3;
ALTER INDEX packs_pkey RENAME TO packs3_pkey;
CREATE TABLE packs (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, codec TEXT NOT NULL, data BYTEA NOT NULL);
CREATE TABLE chunks (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, key BIGINT NOT NULL, hash BYTEA NOT NULL,
  pack BIGINT NOT NULL, start INTEGER NOT NULL, length INTEGER NOT NULL);
CREATE INDEX chunks_by_key ON chunks (key);
""" + _grant_to_team("packs, chunks", ("GRANT SELECT, INSERT ON packs, chunks",))

# Schema 5 (issue 11, CPU per read): the proxy's journal thread chains one ``reads.record``
# event per run and batch of reads, whose data lists every read's chained state, instead of an
# ``action.record`` event per read. No table changes; the number tells an older build, whose
# audit knows no such event and would call every read "inserted outside synartesis", that it
# must not read this journal. Journals from before keep their per-read events; both audit.
_BATCHED_READS = """
UPDATE counters SET value = value WHERE name = 'gseq'
"""

# Schema 6 (issue 11, the journal thread's CPU per read): a plain read is stored in ``reads``,
# an append-only table of the thirteen columns a read has, keyed by its journal-wide number
# (``gseq``, the rowid: no index of its own) with one index on (run_id, seq) that each batch
# appends to (a run's reads are numbered in call order; the newest read's time is found from its
# ``reads.record`` event). A read's row never changes after it is written, so it needs no status history,
# idempotency key or ``updated_at``; its id stays a random UUID (``id[:8]`` names it), stored
# but not indexed, so inserting it does not dirty a random B-tree page. ``all_actions`` is
# every action as ``actions`` has them: the readers select from it. Writes, held calls and the
# reads of older journals stay in ``actions``; nothing is copied. The reads of one batch are
# still chained by their ``reads.record`` event, so audit proves every row as before.
_READS_VIEW = """
CREATE VIEW all_actions AS
  SELECT id, run_id, seq, server, tool, class, rule, call_key, args_ref, prior, snapshot_ref, result_ref,
         inverse_ref, verify_ref, post_ref, status, note, decided_by, decided_at, decision_note, used_by,
         idempotency_key, created_at, updated_at, gseq, reverted FROM actions
  UNION ALL
  SELECT id, run_id, seq, server, tool, 'readonly', rule, call_key, args_ref, NULL, NULL, result_ref,
         NULL, NULL, NULL, status, note, NULL, NULL, NULL, NULL,
         run_id || ':' || seq, at, at, gseq, NULL FROM reads"""
_READS_TABLE = """
CREATE TABLE reads (
  gseq INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, id TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL, rule TEXT,
  call_key TEXT NOT NULL, args_ref TEXT NOT NULL, result_ref TEXT,
  status TEXT NOT NULL CHECK (status IN ('applied','failed','unknown')), note TEXT, at TEXT NOT NULL);
CREATE INDEX reads_by_run ON reads (run_id, seq);
"""
_READS = _READS_TABLE + _READS_VIEW

# PostgreSQL: the same table (BIGINT), the row-level security of ``actions`` (a member appends
# reads to their own runs), and the team's members get on it what they have on ``actions``.
# ``actions_by_run`` goes: it indexed (run_id, seq) a second time beside UNIQUE (run_id, seq),
# which serves the same lookups (SQLite never had it).
_READS_PG = "DROP INDEX actions_by_run;" + _pg_types(_READS_TABLE) + _READS_VIEW + """;
ALTER TABLE reads ENABLE ROW LEVEL SECURITY;
CREATE POLICY reads_read ON reads FOR SELECT USING (true);
CREATE POLICY reads_record ON reads FOR INSERT WITH CHECK (synartesis_may_run(run_id));
CREATE POLICY reads_prune ON reads FOR DELETE USING (synartesis_may_run(run_id));
""" + _grant_to_team("reads, all_actions", ("GRANT SELECT, INSERT, DELETE ON reads", "GRANT SELECT ON all_actions"))

# Schema 7 (issue 11, instructions per read): the CHECK on ``reads.status`` is written as three
# comparisons instead of an IN list. The same constraint (a NULL passes both, and the column is
# NOT NULL), but SQLite builds an ephemeral index for an IN list of three or more constants on
# every row it checks: about 10k instructions a row under callgrind, against 0.2k for the
# comparisons (the multi-row INSERT of a batch of reads still checks each row). SQLite cannot
# ALTER a CHECK, and a table rebuild copies every read (a long pause on the first start of a
# big journal), so the stored CREATE TABLE text is changed in place: what SQLite documents for
# a constraint change that leaves the stored records as they are (ALTER TABLE, "Making other
# kinds of table schema changes": writable_schema, then the schema cookie moved on, so every
# connection reads the schema again). Nothing else is touched; where the text is not found (or
# SQLite refuses writable_schema, in its defensive mode) the IN list stays, the same constraint,
# slower. PostgreSQL checks an IN list cheaply: nothing changes there.
_READS_STATUS_IN = "CHECK (status IN ('applied','failed','unknown'))"
_READS_STATUS_OR = "CHECK (status = 'applied' OR status = 'failed' OR status = 'unknown')"


def _reads_check_as_comparisons(db: "SqliteBackend") -> None:
    tables = db.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name = 'reads'").fetchall()
    _rewrite_stored_tables(db, [(sql.replace(_READS_STATUS_IN, _READS_STATUS_OR), name, sql)
                                for name, sql in tables if sql and _READS_STATUS_IN in sql])


def _rewrite_stored_tables(db: "SqliteBackend", changes: list[tuple[str, str, str]]) -> None:
    """Store each ``(new_sql, table, old_sql)`` as that table's definition in place (SQLite's
    documented procedure: ``writable_schema``, then the schema cookie moved on, so every
    connection reads the schema again). Only for changes every stored row already satisfies.
    Where SQLite refuses (its defensive mode) nothing changes and nothing is raised."""
    import sqlite3
    if not changes:
        return
    conn = db.conn
    try:
        cookie = int(conn.execute("PRAGMA schema_version").fetchone()[0])
        conn.execute("PRAGMA writable_schema = ON")
        try:
            changed = sum(conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ? AND sql = ?",
                                       change).rowcount for change in changes)
            if changed:
                conn.execute(f"PRAGMA schema_version = {cookie + 1}")
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
    except sqlite3.Error:  # defensive mode: sqlite_master may not be written; the IN lists stay
        pass


# Schema 8 (issue 11, instructions per write): every other CHECK of an IN list of three or more
# constants is written as comparisons too, as schema 7 did for ``reads.status``: ``actions.class``
# (4 values), ``actions.status`` (10) and ``actions.reverted`` (3) are checked on every write's
# insert (three ephemeral indexes, ~27k instructions under callgrind) and ``status`` again on each
# of its updates; ``runs.status``, ``undos.status``, ``undos.kind`` and ``sessions.kind`` on their
# rows. The same constraints (``x IN (a, b, c)`` and ``x = a OR x = b OR x = c`` are both NULL for
# a NULL ``x``, which passes a CHECK, and compare with the column's collation). A list of two
# (``actions.prior``, ``team.role``) stays: SQLite already compares it in place. New SQLite
# journals are made with the comparisons (each migration's DDL is rewritten as it runs, by
# :func:`_as_comparisons`, so a journal made in defensive mode has them too); one made before has
# its stored CREATE TABLE text rewritten in place by the step below, as schema 7's, and keeps the
# IN lists where SQLite refuses writable_schema. PostgreSQL checks an IN list cheaply: nothing
# changes there.
_CHECKS_BY_COMPARISONS = 8
_IN_CHECK = re.compile(r"CHECK \((\w+) IN \(((?:'[^']*'\s*,\s*)+'[^']*')\)\)")


def _as_comparisons(sql: str) -> str:
    """``sql`` with each ``CHECK (col IN ('a','b','c', …))`` of three or more constants written
    as ``CHECK (col = 'a' OR col = 'b' OR …)``; anything else as it was."""
    def rewrite(m: "re.Match[str]") -> str:
        values = re.findall(r"'[^']*'", m.group(2))
        if len(values) < 3:
            return m.group(0)
        return "CHECK (" + " OR ".join(f"{m.group(1)} = {v}" for v in values) + ")"
    return _IN_CHECK.sub(rewrite, sql)


def _checks_as_comparisons(db: "SqliteBackend") -> None:
    tables = db.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL").fetchall()
    _rewrite_stored_tables(db, [(new, name, sql) for name, sql in tables if (new := _as_comparisons(sql)) != sql])


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _INITIAL, pg=_INITIAL_PG),
    Migration(2, "agent sessions, journal-wide order, honest statuses, redo", _SESSIONS, rebuilds=True,
              pg=_SESSIONS_PG),
    Migration(3, "chunked payloads, lean actions indexes", _CHUNKS_AND_LEAN_INDEXES, pg=_CHUNKS_AND_LEAN_INDEXES_PG),
    Migration(4, "chunks listed by row number", _CHUNK_IDS, pg=_CHUNK_IDS_PG),
    Migration(5, "one chained event per batch of reads", _BATCHED_READS, pg=_BATCHED_READS),
    Migration(6, "plain reads in a compact append-only table", _READS, pg=_READS_PG),
    Migration(7, "the reads' status checked by comparisons", "", pg=_BATCHED_READS,
              sqlite_step=_reads_check_as_comparisons),
    Migration(_CHECKS_BY_COMPARISONS, "every status and kind checked by comparisons", "", pg=_BATCHED_READS,
              sqlite_step=_checks_as_comparisons),
)
SCHEMA_VERSION = MIGRATIONS[-1].number


def _statements(sql: str) -> list[str]:
    return [s for s in (part.strip() for part in sql.split(";")) if s]


def migrate(db: "SqliteBackend") -> list[int]:
    """Bring the journal behind ``db`` to :data:`SCHEMA_VERSION`; return the migrations applied.

    Raises:
        JournalConfigError: a newer schema than this build knows, or a database that is not a
            journal (tables, but no schema version).
    """
    version = db.schema_version()
    if version == SCHEMA_VERSION:
        return []
    if version > SCHEMA_VERSION:
        raise JournalConfigError(
            f"the journal at {db.path} was written by a newer synartesis (schema {version}; this "
            f"build reads up to {SCHEMA_VERSION}). Upgrade synartesis, or point --journal at a new file; "
            "keep this one: everything an agent did is in it.")
    pending = [m for m in MIGRATIONS if m.number > version]
    applied: list[int] = []
    with (db.rebuilding() if version and any(m.rebuilds for m in pending) else nullcontext()), db.write():
        version = db.schema_version()  # another process may have migrated while we waited
        if version == 0:
            if db.has_tables():
                kind = "a PostgreSQL database (schema)" if db.name == "postgresql" else "a SQLite database"
                raise JournalConfigError(f"{db.path} is {kind} but not a Synartesis journal. "
                                         "Point --journal at a Synartesis journal (only a proxy starts a new one).")
            db.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        for m in MIGRATIONS:
            if m.number > version:
                if db.name == "postgresql":
                    db.execute(m.ddl(db.name))  # one script: PostgreSQL DDL may hold ';' in bodies
                else:  # a journal made for schema 8 or later gets its CHECKs as comparisons directly
                    sql = _as_comparisons(m.sql) if SCHEMA_VERSION >= _CHECKS_BY_COMPARISONS else m.sql
                    for stmt in _statements(sql):
                        db.execute(stmt)
                    if m.sqlite_step is not None:
                        m.sqlite_step(db)
                db.execute(db.sql("INSERT INTO migrations (version, name, applied_at) VALUES (?,?,?)"),
                           (m.number, m.name, now_iso()))
                applied.append(m.number)
        db.set_schema_version(SCHEMA_VERSION)
    return applied
