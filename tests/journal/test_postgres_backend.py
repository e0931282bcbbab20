"""What is specific to the PostgreSQL backend: the URL shown never holds a password, journals
made by many processes at once, a database that is not a journal, lost connections retried
without recording anything twice."""

from __future__ import annotations

import sys

import helpers
import pytest

from synartesis.errors import JournalConfigError, NoJournalError
from synartesis.journal import SCHEMA_VERSION, Journal
from synartesis.paths import JournalURL


@pytest.mark.parametrize(("given", "shown"), [
    ("postgresql://ana:s3cret@db.example:5432/team", "postgresql://ana@db.example:5432/team"),
    ("postgresql://ana:${TEAM_PW}@db/team", "postgresql://ana:${TEAM_PW}@db/team"),
    ("postgres://db/team?sslmode=require&password=s3cret", "postgres://db/team?sslmode=require"),
    ("postgresql://ana@db/team", "postgresql://ana@db/team"),
])
def test_a_journal_url_is_shown_without_its_password(given, shown):
    url = JournalURL(given)
    assert str(url) == shown and f"{url}" == shown and url.secret_url() == given
    assert "s3cret" not in repr(url)


def test_journals_made_by_many_processes_at_once_get_one_schema(pg_journal_url):
    url = pg_journal_url()
    code = "import sys; from synartesis.journal import Journal; Journal.open(sys.argv[1], create=True).close()"
    procs = [helpers.spawn([sys.executable, "-c", code, url]) for _ in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    with Journal.open(url) as j:
        assert [v for (v,) in j.conn.execute("SELECT version FROM migrations ORDER BY version")] == \
            list(range(1, SCHEMA_VERSION + 1))


def test_an_empty_database_is_no_journal_and_a_foreign_one_is_refused(pg_server, pg_journal_url):
    url = pg_journal_url()
    with pytest.raises(NoJournalError, match="no journal"):
        Journal.open(url)
    with pg_server.admin(url.rsplit("/", 1)[1]) as c:
        c.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(JournalConfigError, match="not a Synartesis journal"):
        Journal.open(url, create=True)


def _kill_connection(pg_server, j) -> None:
    pid = j.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    with pg_server.admin() as c:
        c.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_connection_lost_between_operations_is_made_again_and_the_operation_runs_once(pg_server, pg_journal_url):
    j = Journal.open(pg_journal_url(), create=True)
    run = j.begin_run("t", {})
    j.record_action(run, "s", "w", "reversible", None, {"n": 1})
    _kill_connection(pg_server, j)
    second = j.record_action(run, "s", "w", "reversible", None, {"n": 2})  # retried on a new connection
    _kill_connection(pg_server, j)
    assert [a.seq for a in j.actions(run)] == [1, 2] and second.seq == 2
    assert j.audit(run).ok
    j.close()


def test_a_connection_lost_inside_a_transaction_commits_nothing_of_it(pg_server, pg_journal_url):
    from synartesis.journal.postgres import RetryableJournalError
    j = Journal.open(pg_journal_url(), create=True)
    run = j.begin_run("t", {})
    with pytest.raises(RetryableJournalError, match="nothing of it was committed"):
        with j._guard("test"), j._tx():
            j._q("UPDATE runs SET label = 'half' WHERE id = ?", (run,))
            _kill_connection(pg_server, j)
            j._q("UPDATE runs SET client = 'half' WHERE id = ?", (run,))
    assert j.find_run(run).label == "t" and j.audit(run).ok
    j.close()


def test_a_commit_whose_answer_was_lost_is_settled_by_asking_the_server(pg_journal_url):
    from synartesis.journal.postgres import RetryableJournalError, _Committed
    j = Journal.open(pg_journal_url(), create=True)
    db = j.db
    db._raw.execute("BEGIN")
    xid = db._raw.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
    db._raw.execute("COMMIT")
    assert isinstance(db._lost(OSError("the answer to COMMIT never came"), xid), _Committed)
    db._raw.execute("BEGIN")
    aborted = db._raw.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
    db._raw.execute("ROLLBACK")
    assert isinstance(db._lost(OSError("lost"), aborted), RetryableJournalError)
    j.close()


def test_a_proxy_on_a_sqlite_journal_never_imports_psycopg(tmp_path):
    from helpers import FAKE_POLICY, FAKE_SERVER, imported_modules, proxy_argv
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    state.write_text('{"k": "v"}')
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
    frames = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
              b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
              b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put","arguments":{"key":"k","value":"w"}}}\n')
    imported = imported_modules(argv, frames)
    assert "sqlite3" in imported and "psycopg" not in imported  # the call was journalled, on SQLite only
