"""The journal: permissions, schema in one transaction, deduplicated payloads, the hash chain."""

from __future__ import annotations

import os
import sqlite3

import pytest

from synartesis.errors import JournalError, NoJournalError
from synartesis.journal import Journal


def _journal(tmp_path):
    return Journal.open(tmp_path / "j" / "journal.db", create=True)


def test_new_journal_is_private_wal_and_versioned(tmp_path):
    j = _journal(tmp_path)
    assert os.stat(j.path).st_mode & 0o777 == 0o600
    assert os.stat(j.path.parent).st_mode & 0o777 == 0o700
    assert j.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    assert j.conn.execute("SELECT count(*) FROM migrations").fetchone()[0] >= 1
    j.close()


def test_commands_never_create_a_journal(tmp_path):
    with pytest.raises(NoJournalError):
        Journal.open(tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()


def test_not_a_journal_and_newer_schema_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database at all" * 100)
    with pytest.raises(JournalError) as info:
        Journal.open(text)
    assert "not a Synartesis journal" in str(info.value)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE x (a)").connection.commit()
    with pytest.raises(JournalError) as info:
        Journal.open(other)
    assert "not a Synartesis journal" in str(info.value)
    j = _journal(tmp_path)
    j.conn.execute("PRAGMA user_version = 99")
    j.close()
    with pytest.raises(JournalError) as info:
        Journal.open(tmp_path / "j" / "journal.db")
    assert "newer synartesis" in str(info.value) and "keep this one" in str(info.value)
    with pytest.raises(JournalError):
        Journal.open(tmp_path)  # a directory


def test_large_payloads_are_stored_once(tmp_path):
    j = _journal(tmp_path)
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


def test_a_json_value_that_looks_like_our_marker_round_trips(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {})
    tricky = {"$synartesis.blob": "not-a-hash", "nested": [{"$synartesis.lit": 1}]}
    a = j.record_action(run, "s", "t", "readonly", None, tricky)
    assert j.get_json(a.args_ref) == tricky
    j.close()


def test_audit_finds_edits_deletions_and_truncation(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {})
    ids = [j.record_action(run, "s", "t", "readonly", None, {"n": n}).id for n in range(4)]
    assert j.audit(run).ok
    j.conn.execute("UPDATE actions SET status = 'failed' WHERE id = ?", (ids[1],))
    assert any("edited afterwards" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE actions SET status = 'pending' WHERE id = ?", (ids[1],))
    assert j.audit(run).ok
    j.conn.execute("DELETE FROM actions WHERE id = ?", (ids[2],))
    assert any("removed afterwards" in p for p in j.audit(run).problems)
    j2 = _journal(tmp_path / "b")
    run2 = j2.begin_run("t", {})
    for n in range(3):
        j2.record_action(run2, "s", "t", "readonly", None, {"n": n})
    mid = j2.conn.execute("SELECT id FROM events WHERE run_id = ? ORDER BY id LIMIT 1 OFFSET 1", (run2,)).fetchone()[0]
    j2.conn.execute("UPDATE events SET data = '{}' WHERE id = ?", (mid,))
    assert any("altered" in p for p in j2.audit(run2).problems)
    last = j2.conn.execute("SELECT max(id) FROM events").fetchone()[0]
    j2.conn.execute("DELETE FROM events WHERE id = ?", (last,))
    assert any("newest events" in p or "no recorded history" in p or "differs" in p for p in j2.audit(run2).problems)


def test_end_run_never_overwrites_an_undo_status(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {})
    j.set_run_status(run, "rolled_back")
    assert not j.end_run(run)
    assert j.find_run(run).status == "rolled_back"


def test_two_deciders_resolve_one_way(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {})
    held, _ = j.hold(run, "s", "t", "irreversible", None, {"a": 1}, "why")
    other = Journal.open(j.path)
    assert j.decide(held.id, True, "ana") is True
    assert other.decide(held.id, False, "bo", "no") is False
    assert other.get_action(held.id).decided_by == "ana"


def test_audit_finds_altered_payloads_and_launch_lines(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {"fs": {"command": "node", "args": ["server.js"]}})
    text = "content long enough to be stored as a blob of its own. " * 100
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": text})
    assert j.audit(run).ok
    blob = j.conn.execute("SELECT hash FROM blobs WHERE size >= ?", (len(text),)).fetchone()[0]
    j.conn.execute("UPDATE blobs SET data = ?, codec = 'raw' WHERE hash = ?", (b"tampered", blob))
    assert any("altered" in p for p in j.audit(run).problems)
    j.conn.execute("UPDATE runs SET servers = ? WHERE id = ?", ('{"fs":{"command":"sh","args":["-c","x"]}}', run))
    assert any("launch lines were edited" in p for p in j.audit(run).problems)
    del a
