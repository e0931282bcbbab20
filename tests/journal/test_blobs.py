"""Payloads: stored once by content hash, compressed, chunked for edit series, round-tripped exactly,
collected after prune."""

from __future__ import annotations

import random
import sqlite3
from contextlib import contextmanager

from synartesis.journal import Journal, blobs




def test_large_payloads_are_stored_once(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    text = "the same file text, long enough to be its own blob. " * 400
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": text})
    j.set_prior(a.id, "captured", {"content": text})
    j.mark_applied(a.id, result={}, inverse=[{"server": "fs", "tool": "write_file", "args": {"content": text}}],
                   verify=None, post={"present": True, "value": {"content": text}}, note=None)
    stored = j.conn.execute("SELECT count(*) FROM blobs WHERE size >= ?", (len(text),)).fetchone()[0]
    assert stored == 1
    total = j.conn.execute("SELECT sum(length(data)) FROM blobs").fetchone()[0]
    assert total < len(text) / 4  # compressed
    assert j.get_json(j.get_action(a.id).post_ref)["value"]["content"] == text
    j.close()


def test_a_writes_text_of_a_few_hundred_bytes_is_one_blob_its_refs_share_and_audit_still_hashes_it(new_journal):
    # an undo rewrites the row at every status change: the text must not sit in it four times
    j = new_journal()
    run = j.begin_run("t", {})
    read = {"server": "fs", "tool": "read_text_file", "args": {"path": "p"}, "absent_when": ["ENOENT"]}
    texts = [f"version {n} of a short file, ".ljust(480, "x") for n in range(3)]
    ids = []
    for before, after in zip(texts, texts[1:]):
        a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": after},
                            prior="captured", snapshot={"content": before}, verify=read)
        j.defer_applied(a.id, result={"content": [{"type": "text", "text": "ok"}]},
                        inverse=[{"server": "fs", "tool": "write_file", "args": {"path": "p", "content": before}}],
                        verify=..., post={"present": True, "value": {"content": after}}, note=None)
        j.flush()
        ids.append(a.id)
    assert j.conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == len(texts)  # each text once
    for aid, (before, after) in zip(ids, zip(texts, texts[1:])):
        a = j.get_action(aid)
        refs = (a.args_ref, a.snapshot_ref, a.inverse_ref, a.verify_ref, a.post_ref, a.result_ref)
        assert not any(before in r or after in r for r in refs)
        assert sum(len(r) for r in refs) < 800
        assert a.status == "applied" and j.get_json(a.verify_ref) == read  # kept from the record
        assert j.get_json(a.args_ref)["content"] == after and j.get_json(a.snapshot_ref) == {"content": before}
        assert j.get_json(a.inverse_ref)[0]["args"]["content"] == before
    assert j.audit(run).ok, j.audit(run).problems
    # read back (and kept by this connection) before it is altered: audit reads the file again
    digest = blobs.sha256_hex(texts[1].encode())
    j.conn.execute("UPDATE blobs SET codec = 'raw', data = ? WHERE hash = ?", (b"y" * 480, digest))
    j.conn.commit()
    found = j.audit(run)
    assert not found.ok and any("altered" in p for p in found.problems), found.problems
    j.close()


def test_a_json_value_that_looks_like_our_marker_round_trips(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    tricky = {"$synartesis.blob": "not-a-hash", "nested": [{"$synartesis.lit": 1}], "s": "\ud800 lone"}
    a = j.record_action(run, "s", "t", "readonly", None, tricky)
    assert j.get_json(a.args_ref) == tricky
    # a server can send a look-alike too, alone or beside a real blob: audit must not take it for
    # a missing payload (found by the reads engineer: a hostile server could make audit fail)
    look_alike = {"$synartesis.blob": "0" * 64}
    j.record_reads([{"run": run, "server": "s", "tool": "t", "rule": None, "args": look_alike,
                     "status": "applied", "result": {"content": [look_alike, {"text": "x" * 5000}]}, "seq": 2}])
    assert j.audit(run).ok, j.audit(run)
    j.close()


def test_prune_deletes_whole_runs_their_sessions_and_unreferenced_payloads(new_journal):
    j = new_journal()
    keep, gone = j.begin_run("keep", {}), j.begin_run("gone", {})
    shared = "text both runs wrote. " * 200
    only_gone = "text only the pruned run wrote. " * 200
    j.record_action(keep, "s", "w", "reversible", None, {"c": shared})
    j.record_action(gone, "s", "w", "reversible", None, {"c": shared, "d": only_gone})
    j.end_run(keep)
    j.end_run(gone)
    assert j.prunable(j.find_run(gone)) is None
    j.prune([gone])
    assert [r.id for r in j.list_runs()] == [keep]
    sizes = {r[0] for r in j.conn.execute("SELECT size FROM blobs")}
    assert len(shared.encode()) in sizes and len(only_gone.encode()) not in sizes
    assert j.conn.execute("SELECT count(*) FROM events WHERE run_id = ?", (gone,)).fetchone()[0] == 0
    assert j.audit(keep).ok


def _edits(n: int, size: int = 200 * 1024) -> list[str]:
    """``n`` versions of one ``size``-byte text, each changing about 1 % of it in place."""
    rng = random.Random(5)
    words = "agent undo journal proxy server write edit file record state restore drift".split()
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(8)) + "\n"
        lines.append(line)
        total += len(line)
    text = "".join(lines)[:size]
    out = []
    for i in range(n):
        at = rng.randrange(0, size - size // 100)
        text = text[:at] + "".join(rng.choice("abcdefgh \n") for _ in range(size // 100)) + text[at + size // 100:]
        out.append(text)
    return out


def _chunked(j_or_conn) -> int:
    """How many payloads are stored as chunk lists."""
    conn = getattr(j_or_conn, "conn", j_or_conn)
    return conn.execute("SELECT count(*) FROM blobs WHERE codec = 'chunkids'").fetchone()[0]


@contextmanager
def _journal_at_schema(path, monkeypatch, version: int):
    """A new journal made the way schema ``version`` made one: its migrations only, every payload whole."""
    from synartesis.journal import schema
    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:version])
        m.setattr(schema, "SCHEMA_VERSION", version)
        m.setattr(blobs, "_CHUNK_MAX", 1 << 30)
        j = Journal.open(path, create=True)
        try:
            yield j
        finally:
            j.close()


def _write_series(j, run, versions):
    ids = []
    for v in versions:
        a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": v},
                            prior="captured", snapshot={"content": v})
        ids.append(a.id)
    return ids


def test_an_edit_series_stores_the_chunks_each_edit_touched_not_every_version(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    versions = _edits(30)
    ids = _write_series(j, run, versions)
    stored = j.conn.execute("SELECT (SELECT sum(length(data)) FROM blobs) + (SELECT sum(length(data)) FROM packs) "
                            "+ (SELECT 44 * count(*) FROM chunks)").fetchone()[0]
    written = sum(len(v) for v in versions)
    assert stored < 0.05 * written, stored / written
    assert [j.get_json(j.get_action(i).args_ref)["content"] for i in ids] == versions
    assert _chunked(j) == 30 and j.audit(run).ok
    j.close()


def test_a_text_without_line_ends_and_a_lone_surrogate_round_trip_through_chunks(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    flat = "x" * 70_000 + "\ud800" + "y" * 70_000
    a = j.record_action(run, "fs", "w", "reversible", None, {"content": flat})
    assert j.get_json(a.args_ref) == {"content": flat} and _chunked(j) == 1 and j.audit(run).ok
    j.close()


def test_audit_finds_an_altered_chunk_and_a_missing_one(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    _write_series(j, run, _edits(1))
    listing = j.conn.execute("SELECT data FROM blobs WHERE codec = 'chunkids'").fetchone()[0]
    first, second = blobs.listing_ids(bytes(listing))[:2]
    j.conn.execute("UPDATE chunks SET start = start + 1 WHERE id = ?", (first,))  # its bytes read as others
    j.conn.commit()
    found = j.audit(run)
    assert not found.ok and any("altered" in p for p in found.problems), found.problems
    j.conn.execute("DELETE FROM chunks WHERE id = ?", (second,))
    j.conn.commit()
    found = j.audit(run)
    assert not found.ok and any("missing" in p for p in found.problems), found.problems
    j.close()


def test_prune_collects_chunks_only_the_pruned_run_used_and_keeps_shared_ones(new_journal):
    j = new_journal()
    versions = _edits(4)
    keep, gone = j.begin_run("keep", {}), j.begin_run("gone", {})
    [kept] = _write_series(j, keep, versions[:1])
    _write_series(j, gone, versions[1:])
    j.end_run(keep)
    j.end_run(gone)
    count = "SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM chunks), (SELECT count(*) FROM packs)"
    before = j.conn.execute(count).fetchone()
    j.prune([gone])
    after = j.conn.execute(count).fetchone()
    assert all(a < b for a, b in zip(after, before)), (before, after)
    assert after[2] == 1  # the kept run's pack
    assert j.get_json(j.get_action(kept).args_ref)["content"] == versions[0]
    assert j.audit(keep).ok
    j.close()


def test_a_schema_2_journal_upgrades_in_place_with_its_whole_payloads_and_held_calls(tmp_path, monkeypatch):
    from synartesis.journal import schema

    path = tmp_path / "j" / "journal.db"
    big = _edits(1)[0]
    with _journal_at_schema(path, monkeypatch, 2) as j:  # whole payloads, old indexes
        run = j.begin_run("old", {})
        old = j.record_action(run, "fs", "write_file", "reversible", None, {"content": big})
        held, _ = j.hold(run, "fs", "delete", "irreversible", None, {"path": "x"}, "needs a person")
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
    assert _chunked(raw) == 0
    raw.close()

    j = Journal.open(path)
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    indexes = {r[0] for r in j.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions'")}
    assert {"actions_gated", "actions_approved", "actions_denied"} <= indexes
    assert not {"actions_by_key", "actions_by_status"} & indexes
    assert j.get_json(j.get_action(old.id).args_ref) == {"content": big}
    again, reused = j.hold(run, "fs", "delete", "irreversible", None, {"path": "x"}, "needs a person")
    assert reused and again.id == held.id
    _write_series(j, run, [big[:-1] + "!"])
    assert _chunked(j) == 1 and j.audit(run).ok
    j.close()


def test_a_copy_into_a_journal_that_numbers_chunks_otherwise_reads_every_version_back(new_journal, tmp_path):
    from synartesis.journal.transfer import copy_journal

    versions = _edits(5)
    src = Journal.open(tmp_path / "src" / "journal.db", create=True)
    src.conn.execute("UPDATE counters SET value = 1000 WHERE name = 'gseq'")  # as a spool numbers them
    run = src.begin_run("t", {})
    ids = _write_series(src, run, versions[1:])
    src.end_run(run)
    target = new_journal()
    other = target.begin_run("other", {})  # its own chunks first: the copied ones get other numbers
    _write_series(target, other, [_edits(1, 60_000)[0], versions[0]])
    target.end_run(other)
    before = target.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    copy_journal(src, target, [run])
    assert [target.get_json(target.get_action(i).args_ref)["content"] for i in ids] == versions[1:]
    assert target.audit(run).ok and target.audit(other).ok
    # chunks the target had (version 0 shares most of them) are not stored twice
    added = target.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] - before
    assert 0 < added < src.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    src.close()


def _as_schema_3_chunks(conn, digest: str, text: bytes) -> None:
    """Rewrite the whole blob ``digest`` the way schema 3 stored a chunked one: a list of 32-byte
    digests, the chunks in one zlib pack (``zpack``: offsets into the inflated pack)."""
    import hashlib
    import zlib
    pieces = [text[k:k + 5000] for k in range(0, len(text), 5000)]
    names = [hashlib.sha256(p).hexdigest() for p in pieces]
    conn.execute("INSERT INTO packs (id, data) VALUES (?, ?)", ("pack-3", zlib.compress(b"".join(pieces))))
    offset = 0
    for h, p in zip(names, pieces):
        conn.execute("INSERT INTO chunks (hash, pack, start, length, codec, size) VALUES (?,?,?,?,?,?) "
                     "ON CONFLICT DO NOTHING", (h, "pack-3", offset, len(p), "zpack", len(p)))
        offset += len(p)
    conn.execute("UPDATE blobs SET codec = 'chunks', data = ? WHERE hash = ?",
                 (b"".join(bytes.fromhex(h) for h in names), digest))
    conn.commit()


def test_a_schema_3_journal_upgrades_in_place_and_its_chunk_lists_read_audit_and_prune(tmp_path, monkeypatch):
    from synartesis.canonical import sha256_hex
    from synartesis.journal import schema

    path = tmp_path / "j" / "journal.db"
    old_text, new_text = _edits(2)
    with _journal_at_schema(path, monkeypatch, 3) as j:
        run = j.begin_run("old", {})
        old = j.record_action(run, "fs", "write_file", "reversible", None, {"content": old_text})
        j.end_run(run)
    raw = sqlite3.connect(path)
    _as_schema_3_chunks(raw, sha256_hex(old_text.encode()), old_text.encode())
    raw.close()

    j = Journal.open(path)
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    assert j.get_json(j.get_action(old.id).args_ref) == {"content": old_text} and j.audit(run).ok
    new_run = j.begin_run("new", {})
    _write_series(j, new_run, [new_text])
    j.end_run(new_run)
    assert _chunked(j) == 1 and j.audit(new_run).ok
    left = "SELECT (SELECT count(*) FROM chunks3), (SELECT count(*) FROM packs3), (SELECT count(*) FROM chunks)"
    assert all(j.conn.execute(left).fetchone())
    j.prune([run])
    assert j.conn.execute(left).fetchone()[:2] == (0, 0)
    assert j.get_json(j.actions(new_run)[0].args_ref)["content"] == new_text
    j.close()


def test_a_new_sqlite_journal_has_small_pages_and_an_old_one_keeps_its_own(tmp_path, monkeypatch):
    from synartesis.journal import sqlite as backend

    j = Journal.open(tmp_path / "new" / "journal.db", create=True)
    assert j.conn.execute("PRAGMA page_size").fetchone()[0] == backend._PAGE_SIZE < 4096
    j.close()
    old = tmp_path / "old" / "journal.db"
    with monkeypatch.context() as m:  # a journal made by a build that kept SQLite's default
        m.setattr(backend, "_PAGE_SIZE", 4096)
        j = Journal.open(old, create=True)
        run = j.begin_run("t", {})
        j.close()
    j = Journal.open(old)
    assert j.conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert [r.id for r in j.list_runs()] == [run]
    j.close()


def test_a_small_blob_is_compressed_with_a_window_its_size_and_every_size_reads_back_and_audits(tmp_path):
    # zlib's default state (a 32 KiB window, a 64K-entry hash table) is set up and cleared for
    # any input: a blob of up to 4 KiB gets a window no larger than itself (the header says it)
    import zlib

    j = Journal.open(tmp_path / "j" / "journal.db", create=True)
    run = j.begin_run("t", {})
    prose = " ".join(f"line {n} of a file an agent writes, with words that come back" for n in range(400))
    sizes = (300, 511, 512, 513, 1024, 3000, 4096, 4097, 12000)
    for size in sizes:
        text = prose[:size]
        a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": f"p{size}", "content": text})
        assert j.get_json(a.args_ref)["content"] == text
    stored = {size: j.conn.execute("SELECT codec, data FROM blobs WHERE size = ?", (size,)).fetchone() for size in sizes}
    for size, (codec, data) in stored.items():
        assert codec == "zlib" and zlib.decompress(data) == prose[:size].encode()
        window = 1 << ((data[0] >> 4) + 8)  # CMF's CINFO: log2 of the window, less 8
        assert window == (max(512, 1 << (size - 1).bit_length()) if size <= 4096 else 32768), (size, window)
        assert len(data) <= len(zlib.compress(prose[:size].encode(), 6)) + 2
    assert j.audit(run).ok
    j.close()
