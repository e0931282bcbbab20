"""Copying a whole journal into another one (``synartesis journal migrate``, issue 14).

Every row is copied as it is (sessions, runs, payload blobs, tool shapes, actions, reads,
attempts, events), so the hash chain still holds and ``audit`` can prove the copy on both sides. Events
are inserted in their source order and numbered by the target (the chain hashes bodies, not
ids). Chunk packs and chunks are numbered by the target too, and the chunk lists that name
them are rewritten with the target's numbers (a payload's name is its content's hash, so it is
the same payload in both journals). The target must hold no actions yet: journal-wide action numbers (``gseq``) are chained,
so two journals' actions cannot be merged without rewriting history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from synartesis.errors import JournalError, UsageError
from synartesis.journal.blobs import chunk_key, remap_listing
from synartesis.journal.rows import READ_COLS, event_text

if TYPE_CHECKING:
    from synartesis.journal.facade import Journal

__all__ = ["CopyCounts", "copy_journal"]

# (table, its columns as both backends have them, the source order). Events leave their id to
# the target; runs and undos are copied in insertion order so ties keep their order.
_TABLES: tuple[tuple[str, str, str], ...] = (
    ("sessions", "id, kind, name, client, client_pid, client_started, host, started_at", "started_at, id"),
    ("runs", "id, label, client, started_at, ended_at, status, pid, servers, head, session_id, proxy_started, host, "
             "unverified, end_note", "{order}"),
    ("packs3", "id, data", "id"),
    ("chunks3", "hash, pack, start, length, codec, size", "hash"),
    ("blobs", "hash, codec, size, data", "hash"),
    ("shapes", "fingerprint, server, tool, ref, first_seen", "fingerprint"),
    ("actions", "id, run_id, seq, server, tool, class, rule, call_key, args_ref, prior, snapshot_ref, result_ref, "
                "inverse_ref, verify_ref, post_ref, status, note, decided_by, decided_at, decision_note, used_by, "
                "idempotency_key, created_at, updated_at, gseq, reverted", "gseq"),
    ("reads", READ_COLS, "gseq"),
    ("undos", "id, run_id, by, pid, started_at, ended_at, status, report_ref, kind, attempt, scope, pid_started",
              "started_at, {order}"),
    ("events", "run_id, action_id, undo_id, at, kind, data, prev, hash", "id"),
)
_BATCH = 500


@dataclass
class CopyCounts:
    """How many rows of each table were copied."""

    rows: dict[str, int] = field(default_factory=dict)


def copy_journal(source: "Journal", target: "Journal", run_ids: list[str] | None = None) -> CopyCounts:
    """Copy every row of ``source`` (or only what ``run_ids`` need: their sessions, rows and
    events, and every payload) into ``target`` in one transaction of the target.

    Raises:
        UsageError: a whole copy into a target that already holds runs, or a run that is
            already there.
    """
    counts = CopyCounts()
    some = run_ids is not None
    ids = list(run_ids or [])
    if some and not ids:
        return counts
    with target._guard("copy a journal"), target._tx():
        if not some and (target._one(f"SELECT count(*) FROM {target._all_actions}")[0] or target._one("SELECT count(*) FROM runs")[0]):
            raise UsageError(f"the journal at {target.path} already holds runs; migrate into an empty one "
                             "(journal-wide action numbers are chained and cannot be merged)")
        numbers = _copy_chunks(source, target, counts)
        for table, cols, order in _TABLES:
            if table == "reads" and not source._has_reads:  # a journal held at an older schema (tests)
                continue
            order = order.format(order=source.db.row_order)
            marks = ",".join("?" * (cols.count(",") + 1))
            insert = f"INSERT INTO {table} ({cols}) VALUES ({marks})"
            if table in ("sessions", "blobs", "packs3", "chunks3", "shapes"):
                insert += " ON CONFLICT DO NOTHING"
            where, params = _only(table, ids) if some else ("", ())
            with source._guard("read for a copy"):
                cur = source._q(f"SELECT {cols} FROM {table}{where} ORDER BY {order}", params)
                n = 0
                while True:
                    rows = cur.fetchmany(_BATCH)
                    if not rows:
                        break
                    if table == "events" and target.db.name != "sqlite":  # PostgreSQL holds text
                        rows = [(*r[:5], event_text(r[5]), *r[6:]) for r in rows]
                    if table == "blobs":
                        rows = [(h, c, size, _remapped(source, h, d, numbers) if c == "chunkids" else d)
                                for h, c, size, d in rows]
                    target.db.executemany(insert, [tuple(r) for r in rows])
                    n += len(rows)
            counts.rows[table] = n
        top = source._one("SELECT value FROM counters WHERE name = 'gseq'")
        target._q("UPDATE counters SET value = ? WHERE name = 'gseq' AND value < ?", (top[0], top[0]) if top else (0, 0))
    target._heads.clear()
    return counts


def _remapped(source: "Journal", digest: str, listing: Any, numbers: dict[int, int]) -> bytes:
    """``listing`` in the target's chunk numbers; a damaged list (not zlib, a chunk row that is
    gone) stops the copy with the payload named, never a traceback."""
    try:
        return remap_listing(bytes(listing), numbers)
    except (KeyError, ValueError, TypeError):
        raise JournalError(f"the journal at {source.path} has a damaged payload {digest[:12]} (its chunk list "
                           "names chunks it does not hold); nothing was copied: `synartesis audit` says which "
                           "action it belongs to") from None


def _copy_chunks(source: "Journal", target: "Journal", counts: CopyCounts) -> dict[int, int]:
    """Copy every chunk pack and chunk of ``source`` (schema 4's) that ``target`` lacks; return
    each source chunk's number in the target (chunks it already had keep the target's)."""
    ids: dict[int, int] = {}
    counts.rows["packs"] = counts.rows["chunks"] = 0
    with source._guard("read for a copy"):
        packs = [r[0] for r in source._all("SELECT id FROM packs ORDER BY id")]
    for pack in packs:
        with source._guard("read for a copy"):
            codec, data = source._one("SELECT codec, data FROM packs WHERE id = ?", (pack,))
            rows = source._all("SELECT id, hash, start, length FROM chunks WHERE pack = ? ORDER BY id", (pack,))
        have = target._chunk_ids([bytes(r[1]) for r in rows])
        missing = [r for r in rows if bytes(r[1]) not in have]
        if missing:  # a pack whose chunks the target has already is not copied
            sql = "INSERT INTO packs (codec, data) VALUES (?,?)"
            new = target._one(sql + " RETURNING id", (codec, data))[0] if target.db.returning else \
                target._q(sql, (codec, data)).lastrowid
            target.db.executemany("INSERT INTO chunks (key, hash, pack, start, length) VALUES (?,?,?,?,?)",
                                  [(chunk_key(bytes(h)), bytes(h), new, start, length) for _, h, start, length in missing])
            have.update(target._chunk_ids([bytes(r[1]) for r in missing]))
            counts.rows["packs"] += 1
            counts.rows["chunks"] += len(missing)
        ids.update((n, have[bytes(h)]) for n, h, _, _ in rows)
    return ids


def _only(table: str, ids: list[str]) -> tuple[str, tuple]:
    """The WHERE clause that limits ``table`` to what the runs ``ids`` need (payloads: all)."""
    marks = ",".join("?" * len(ids))
    if table == "runs":
        return f" WHERE id IN ({marks})", tuple(ids)
    if table == "sessions":
        return f" WHERE id IN (SELECT session_id FROM runs WHERE id IN ({marks}))", tuple(ids)
    if table in ("actions", "reads", "undos", "events"):
        return f" WHERE run_id IN ({marks})", tuple(ids)
    return "", ()
