"""Payloads: stored once by content hash, compressed, chunked for edit series, round-tripped exactly,
collected after prune."""

from __future__ import annotations

import random
import sqlite3

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


def test_a_json_value_that_looks_like_our_marker_round_trips(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    tricky = {"$synartesis.blob": "not-a-hash", "nested": [{"$synartesis.lit": 1}], "s": "\ud800 lone"}
    a = j.record_action(run, "s", "t", "readonly", None, tricky)
    assert j.get_json(a.args_ref) == tricky
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
    stored = j.conn.execute("SELECT sum(length(data)) FROM blobs").fetchone()[0]
    written = sum(len(v) for v in versions)
    assert stored < 0.05 * written, stored / written
    assert [j.get_json(j.get_action(i).args_ref)["content"] for i in ids] == versions
    assert j.conn.execute("SELECT count(*) FROM blobs WHERE codec = 'chunks'").fetchone()[0] == 30
    assert j.audit(run).ok
    j.close()


def test_a_text_without_line_ends_and_a_lone_surrogate_round_trip_through_chunks(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    flat = "x" * 70_000 + "\ud800" + "y" * 70_000
    a = j.record_action(run, "fs", "w", "reversible", None, {"content": flat})
    assert j.get_json(a.args_ref) == {"content": flat}
    assert j.conn.execute("SELECT count(*) FROM blobs WHERE codec = 'chunks'").fetchone()[0] == 1
    assert j.audit(run).ok
    j.close()


def test_audit_finds_an_altered_chunk_and_a_missing_one(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    _write_series(j, run, _edits(1))
    listing = j.conn.execute("SELECT data FROM blobs WHERE codec = 'chunks'").fetchone()[0]
    first, second = listing[:32].hex(), listing[32:64].hex()
    j.conn.execute("UPDATE chunks SET codec = 'raw' WHERE hash = ?", (first,))  # its bytes read as others
    j.conn.commit()
    found = j.audit(run)
    assert not found.ok and any("altered" in p for p in found.problems), found.problems
    j.conn.execute("DELETE FROM chunks WHERE hash = ?", (second,))
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
    with monkeypatch.context() as m:  # write a journal the way schema 2 did: whole payloads, old indexes
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        m.setattr(schema, "SCHEMA_VERSION", 2)
        m.setattr(blobs, "_CHUNK_MAX", 1 << 30)
        j = Journal.open(path, create=True)
        run = j.begin_run("old", {})
        old = j.record_action(run, "fs", "write_file", "reversible", None, {"content": big})
        held, _ = j.hold(run, "fs", "delete", "irreversible", None, {"path": "x"}, "needs a person")
        j.close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 2
    assert raw.execute("SELECT count(*) FROM blobs WHERE codec = 'chunks'").fetchone()[0] == 0
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
    assert j.conn.execute("SELECT count(*) FROM blobs WHERE codec = 'chunks'").fetchone()[0] == 1
    assert j.audit(run).ok
    j.close()
