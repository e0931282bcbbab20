"""Schema 8: the SQLite journal's CHECKs of three or more values are comparisons, not IN lists
(SQLite builds an ephemeral index for such a list on every row it checks: three on each write's
insert). The same constraints: upgraded journals keep every row and refuse what they refused."""

from __future__ import annotations

import re
import sqlite3

import pytest
from helpers import journal_of_schema, sqlite_defensive

from synartesis.journal import Journal, schema
from synartesis.journal.actions import _INSERT_ACTION

# Each CHECK of a list of three or more, as a statement that breaks it (on a row the test made)
_BAD = {
    "actions.class": "UPDATE actions SET class = 'harmless' WHERE tool = 'write_file'",
    "actions.status": "UPDATE actions SET status = 'done' WHERE tool = 'write_file'",
    "actions.reverted": "UPDATE actions SET reverted = 'maybe' WHERE tool = 'write_file'",
    "runs.status": "UPDATE runs SET status = 'over'",
    "sessions.kind": "UPDATE sessions SET kind = 'robot'",
    "undos.status": "UPDATE undos SET status = 'fine'",
    "undos.kind": "UPDATE undos SET kind = 'oops'",
    "reads.status": "UPDATE reads SET status = 'pending'",
    "actions.class (insert)": "INSERT INTO actions (id, run_id, seq, server, tool, class, call_key, args_ref, status, "
                              "idempotency_key, created_at, updated_at) SELECT 'x', id, 999, 's', 't', 'harmless', 'k', "
                              "'=1', 'pending', 'x', 'now', 'now' FROM runs LIMIT 1",
}
_LIST = re.compile(r"\b(\w+) IN \(('[^']*'\s*,\s*){2,}'[^']*'\)")


def _fill(j) -> str:
    """A run with a write (applied), a read and a finished undo attempt."""
    run = j.begin_run("t", {})
    w = j.record_action(run, "files", "write_file", "reversible", None, {"path": "/a", "content": "y"})
    j.mark_applied(w.id, result={"content": []}, inverse=None, verify=None, post=None, note=None)
    j.record_reads([{"run": run, "server": "files", "tool": "read_text_file", "args": {"path": "/a"}, "status": "applied"}])
    attempt = j.begin_attempt([run], "ana")
    j.finish_attempt(attempt, {run: "rolled_back"}, {"ok": True})
    return run


def _tables(conn) -> dict[str, str]:
    return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL"))


def _rows(conn) -> dict[str, list]:
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in ("runs", "sessions", "actions", "reads", "undos", "events", "blobs")}


def _ephemeral(conn, sql: str) -> int:
    """How many ephemeral tables the statement opens (an IN list of a CHECK is one)."""
    return [op for _, op, *_ in conn.execute("EXPLAIN " + sql, (None,) * sql.count("?"))].count("OpenEphemeral")


def _refuses_every_bad_value(conn) -> None:
    for what, sql in _BAD.items():
        conn.execute("BEGIN")
        try:
            with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
                conn.execute(sql)
        finally:
            conn.execute("ROLLBACK")


def test_a_schema_7_journal_keeps_its_rows_and_checks_by_comparisons(tmp_path, monkeypatch):
    path = tmp_path / "j" / "journal.db"
    with journal_of_schema(monkeypatch, path, 7) as old:
        run = _fill(old)
        assert {_LIST.search(old.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0])
                is not None for t in ("actions", "runs", "sessions", "undos")} == {True}
        assert _ephemeral(old.conn, _INSERT_ACTION) == 3  # class, status, reverted: what schema 8 takes away
        before = _rows(old.conn)
        old.close()
    other = sqlite3.connect(path, isolation_level=None)  # opened before the upgrade, used after it
    assert other.execute("SELECT count(*) FROM actions").fetchone()[0] == 1
    j = Journal.open(path)
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 8
    assert j.conn.execute("SELECT name FROM migrations WHERE version = 8").fetchone()[0] == \
        "every status and kind checked by comparisons"
    fresh = Journal.open(tmp_path / "new" / "journal.db", create=True)
    for conn in (j.conn, other, sqlite3.connect(path, isolation_level=None)):
        assert _rows(conn) == before
        tables = _tables(conn)
        assert not [t for t, sql in tables.items() if _LIST.search(sql)]
        assert tables == _tables(fresh.conn)  # the very text a new journal is made with
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert _ephemeral(conn, _INSERT_ACTION) == 0
        assert _ephemeral(conn, "UPDATE actions SET status = ?, updated_at = ? WHERE id = ?") == 0
        _refuses_every_bad_value(conn)
    fresh.close()
    assert j.audit(run).ok
    more = j.begin_run("after", {})
    w = j.record_action(more, "files", "write_file", "reversible", None, {"path": "/b", "content": "z"})
    j.mark_applied(w.id, result={"content": []}, inverse=None, verify=None, post=None, note=None)
    assert [a.status for a in j.actions(more)] == ["applied"] and j.audit(more).ok
    j.close()
    other.close()


def test_a_new_journal_is_made_with_comparisons_that_allow_what_the_lists_allowed(tmp_path):
    j = Journal.open(tmp_path / "j" / "journal.db", create=True)
    run = _fill(j)
    assert not [t for t, sql in _tables(j.conn).items() if _LIST.search(sql)]
    assert "prior IN ('captured','absent')" in _tables(j.conn)["actions"]  # two: compared in place already
    assert _ephemeral(j.conn, _INSERT_ACTION) == 0
    _refuses_every_bad_value(j.conn)
    # each column is checked for the values its lists in the migrations allowed, no more, no fewer
    listed: dict[str, set[str]] = {}
    for m in schema.MIGRATIONS:
        for col, values in re.findall(r"CHECK \((\w+) IN \(([^()]*)\)\)", m.sql):
            if values.count(",") >= 2:
                listed.setdefault(col, set()).update(re.findall(r"'([^']*)'", values))
    compared: dict[str, set[str]] = {}
    for sql in _tables(j.conn).values():
        for check in re.findall(r"CHECK \((\w+ = '[^']*'(?: OR \w+ = '[^']*')*)\)", sql):
            for col, value in re.findall(r"(\w+) = '([^']*)'", check):
                compared.setdefault(col, set()).add(value)
    assert compared == listed and set(listed) == {"class", "status", "reverted", "kind"}
    assert j.audit(run).ok
    j.close()


def test_as_comparisons_agrees_with_the_in_list_on_every_value_null_and_a_stranger():
    conn = sqlite3.connect(":memory:")
    found = 0
    for m in schema.MIGRATIONS:
        for check in re.findall(r"CHECK \(\w+ IN \([^()]*\)\)", m.sql):
            col = check[len("CHECK ("):].split(" ", 1)[0]
            values = re.findall(r"'([^']*)'", check)
            rewritten = schema._as_comparisons(check)
            assert ("IN (" in rewritten) == (len(values) < 3), rewritten
            for probe in [*values, None, "stranger", values[0].upper(), values[0] + " "]:
                both = conn.execute(f"SELECT {check[7:-1]}, {rewritten[7:-1]} FROM (SELECT ? AS {col})",
                                    (probe,)).fetchone()
                assert both[0] == both[1], (check, probe, both)
            found += 1
    assert found >= 10


def test_in_defensive_mode_a_new_journal_has_comparisons_and_an_old_one_keeps_its_lists(tmp_path, monkeypatch):
    # SQLite refuses writable_schema in its defensive mode: a new journal is made with the
    # comparisons anyway; an old one upgrades with its IN lists (the same constraints, slower)
    path = tmp_path / "old" / "journal.db"
    with journal_of_schema(monkeypatch, path, 7) as old:
        run = _fill(old)
        listed = _tables(old.conn)
        old.close()
    sqlite_defensive(monkeypatch)
    j = Journal.open(path)
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    assert _tables(j.conn) == listed and j.audit(run).ok
    _refuses_every_bad_value(j.conn)
    w = j.record_action(run, "files", "write_file", "reversible", None, {"path": "/b", "content": "z"})
    j.mark_applied(w.id, result={"content": []}, inverse=None, verify=None, post=None, note=None)
    assert j.get_action(w.id).status == "applied" and j.audit(run).ok
    j.close()
    new = Journal.open(tmp_path / "new" / "journal.db", create=True)
    assert not [t for t, sql in _tables(new.conn).items() if _LIST.search(sql)]
    _fill(new)
    _refuses_every_bad_value(new.conn)
    new.close()


def test_a_postgresql_journal_is_at_schema_8_and_refuses_a_bad_class_or_status(pg_journal_url):
    # PostgreSQL checks an IN list cheaply: its constraints stay as they were
    j = Journal.open(pg_journal_url(), create=True)
    assert [v for (v,) in j.conn.execute("SELECT version FROM migrations ORDER BY version")] == \
        list(range(1, schema.SCHEMA_VERSION + 1))
    run = j.begin_run("t", {})
    w = j.record_action(run, "files", "write_file", "reversible", None, {"path": "/a", "content": "y"})
    for sql in ("UPDATE actions SET class = 'harmless' WHERE id = ?", "UPDATE actions SET status = 'done' WHERE id = ?"):
        with pytest.raises(Exception, match="check constraint"):
            j.conn.execute(sql, (w.id,))
    j.mark_applied(w.id, result={"content": []}, inverse=None, verify=None, post=None, note=None)
    assert j.get_action(w.id).status == "applied" and j.audit(run).ok
    j.close()
