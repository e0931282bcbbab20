"""Schema and migrations: one transaction, recorded, never dropping history; the file's modes."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers import cli

from synartesis.errors import JournalConfigError, NoJournalError
from synartesis.journal import SCHEMA_VERSION, Journal

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "journals" / "schema1.db"


def _journal(tmp_path):
    return Journal.open(tmp_path / "j" / "journal.db", create=True)


def _schema1(tmp_path) -> Path:
    """A copy of a journal written by synartesis 0.1 (schema 1; see make_schema1.py)."""
    p = tmp_path / "old" / "journal.db"
    p.parent.mkdir(mode=0o700)
    shutil.copyfile(FIXTURE, p)
    os.chmod(p, 0o600)
    return p


def test_new_journal_is_private_wal_and_versioned(tmp_path):
    j = _journal(tmp_path)
    assert os.stat(j.path).st_mode & 0o777 == 0o600
    assert os.stat(j.path.parent).st_mode & 0o777 == 0o700
    assert j.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    versions = [r[0] for r in j.conn.execute("SELECT version FROM migrations ORDER BY version")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    j.close()


def test_folders_made_for_a_journal_are_0700_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        j = Journal.open(tmp_path / "a" / "b" / "c" / "journal.db", create=True)
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert os.stat(d).st_mode & 0o777 == 0o700, d
    assert os.stat(j.path).st_mode & 0o777 == 0o600
    j.close()


def test_a_journal_open_to_others_is_tightened_and_said_so(tmp_path):
    j = _journal(tmp_path)
    j.close()
    os.chmod(j.path, 0o666)
    os.chmod(j.path.parent, 0o777)  # a folder holding only the journal is ours
    again = Journal.open(j.path)
    assert os.stat(j.path).st_mode & 0o777 == 0o600
    assert os.stat(j.path.parent).st_mode & 0o777 == 0o700
    assert any("0666" in w and "now 0600" in w for w in again.warnings)
    assert any("0777" in w and "now 0700" in w for w in again.warnings)
    again.close()
    os.chmod(j.path, 0o644)
    out = cli("list", "--journal", str(j.path))  # the CLI says so on stderr
    assert out.returncode == 0 and "now 0600" in out.stderr
    assert os.stat(j.path).st_mode & 0o777 == 0o600


def test_a_folder_that_is_not_ours_is_left_alone_and_reported_only_when_others_can_write(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("the user's own file")
    Journal.open(project / "journal.db", create=True).close()
    os.chmod(project, 0o755)
    assert Journal.open(project / "journal.db").warnings == []
    os.chmod(project, 0o777)
    warned = Journal.open(project / "journal.db").warnings
    assert os.stat(project).st_mode & 0o777 == 0o777  # not ours: never changed
    assert any("can be written by others" in w for w in warned)


def test_commands_never_create_a_journal(tmp_path):
    with pytest.raises(NoJournalError):
        Journal.open(tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()


def test_not_a_journal_and_newer_schema_are_configuration_errors(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database at all" * 100)
    with pytest.raises(JournalConfigError) as info:
        Journal.open(text)
    assert "not a Synartesis journal" in str(info.value) and str(text) in str(info.value)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE x (a)").connection.commit()
    with pytest.raises(JournalConfigError) as info:
        Journal.open(other)
    assert "not a Synartesis journal" in str(info.value)
    j = _journal(tmp_path)
    j.conn.execute("PRAGMA user_version = 99")
    j.close()
    with pytest.raises(JournalConfigError) as info:
        Journal.open(tmp_path / "j" / "journal.db")
    assert "newer synartesis" in str(info.value) and "keep this one" in str(info.value)
    with pytest.raises(JournalConfigError):
        Journal.open(tmp_path)  # a directory


def test_a_corrupt_journal_exits_2_naming_the_file(tmp_path):
    j = _journal(tmp_path)
    run = j.begin_run("t", {})
    for n in range(200):
        j.record_action(run, "s", "t", "readonly", None, {"n": n, "pad": "x" * 300})
    j.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    j.close()
    data = bytearray(j.path.read_bytes())
    damaged = bytearray(data)
    damaged[4096:4096 * 6] = b"\xa5" * (4096 * 5)  # pages after the header trashed
    j.path.write_bytes(bytes(damaged))
    header = tmp_path / "header.db"
    data[0:16] = b"garbage garbage!"  # the header itself
    header.write_bytes(bytes(data))
    for path in (j.path, header):
        out = cli("show", "--journal", str(path))
        assert out.returncode == 2, (path, out.stdout, out.stderr)
        assert str(path) in out.stderr and "Traceback" not in out.stderr


def test_a_schema_1_journal_upgrades_in_place_keeping_everything(tmp_path):
    path = _schema1(tmp_path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = ("runs", "actions", "undos", "events", "blobs", "shapes")
    before = {t: raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    order = [r[0] for r in raw.execute("SELECT id FROM actions ORDER BY created_at, run_id, seq")]
    raw.close()

    j = Journal.open(path)
    assert j.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [r[0] for r in j.conn.execute("SELECT version FROM migrations ORDER BY version")] == list(range(1, SCHEMA_VERSION + 1))
    assert {t: j.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} == before
    runs = j.list_runs()
    assert len(runs) == 3 and all(j.audit(r.id).ok for r in runs)
    # every old run is a session of its own; actions get journal-wide numbers in recorded order
    assert len({r.session_id for r in runs}) == 3 and all(s.kind == "run" for s in j.list_sessions())
    gseqs = dict(j.conn.execute("SELECT id, gseq FROM actions").fetchall())
    assert [gseqs[i] for i in order] == list(range(1, len(order) + 1))
    written = next(a for r in runs for a in j.actions(r.id) if a.tool == "write_file" and a.prior == "captured")
    assert j.get_json(written.snapshot_ref)["content"].startswith("line of a file")
    [undo] = [u for r in runs for u in j.undos(r.id)]
    assert (undo.kind, undo.status, undo.by) == ("undo", "rolled_back", "ana") and j.get_json(undo.report_ref)
    # the run its dead proxy left active is stale, and the first write closes it
    stale = next(r for r in runs if r.status == "active")
    assert stale.stale and stale.shown_status == "complete"
    new = j.begin_run("next", {})
    j.record_action(new, "s", "t", "readonly", None, {})
    closed = j.find_run(stale.id)
    assert closed.status == "complete" and closed.counts == {"unknown": 1} and "is gone" in closed.end_note
    assert j.actions(new)[0].gseq == len(order) + 1
    # reads recorded now chain one batch event after the old run's per-read events; both audit
    old = runs[0].id
    j.record_reads([{"run": old, "server": "s", "tool": "read", "args": {"n": n}, "status": "applied"} for n in range(2)])
    assert j.conn.execute("SELECT kind FROM events WHERE run_id = ? ORDER BY id DESC LIMIT 1", (old,)).fetchone()[0] == "reads.record"
    assert j.conn.execute("SELECT count(*) FROM events WHERE run_id = ? AND kind = 'action.record'", (old,)).fetchone()[0]
    assert all(j.audit(r.id).ok for r in j.list_runs())
    j.close()
    reopened = Journal.open(path)
    assert reopened.conn.execute("SELECT count(*) FROM migrations").fetchone()[0] == SCHEMA_VERSION  # a no-op now
    reopened.close()


def test_an_upgrade_that_fails_changes_nothing(tmp_path):
    path = _schema1(tmp_path)
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE sessions (x)")  # makes migration 2 fail part-way
    raw.commit()
    dump = list(raw.iterdump())
    raw.close()
    with pytest.raises(Exception):
        Journal.open(path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    assert list(raw.iterdump()) == dump  # every table, row and index as it was
    raw.close()


def test_the_cli_reads_a_schema_1_journal(tmp_path):
    path = _schema1(tmp_path)
    listed = cli("list", "--json", "--journal", str(path))
    assert listed.returncode == 0, listed.stderr
    audit = cli("audit", "--journal", str(path))
    assert audit.returncode == 0 and audit.stdout.count("intact") == 3, audit.stdout
    history = cli("history", "--journal", str(path))
    assert history.returncode == 0, history.stderr
    assert "undo of run" in history.stdout and "denied by bo" in history.stdout


def test_a_home_holding_the_policy_cache_is_tightened_too(tmp_path):
    """~/.synartesis holds the compiled policy cache (policy-<hash>.json) beside the journal:
    `list` and `undo` tighten that folder as `status` and `install` do (new user round 31, 10e)."""
    home = tmp_path / "home"
    j = Journal.open(home / "journal.db", create=True)
    j.close()
    for name in ("synartesis.yaml", "installed.json", "policy-97847c82f33d2ed3.json", "serve-token", "desktop.json"):
        (home / name).write_text("{}")
    for name in ("backups", "oauth", "spool"):
        (home / name).mkdir()
    os.chmod(home, 0o755)
    again = Journal.open(home / "journal.db")
    assert os.stat(home).st_mode & 0o777 == 0o700
    assert any("now 0700" in w for w in again.warnings)
    again.close()
    os.chmod(home, 0o755)
    (home / "policy-notahash.json").write_text("{}")  # not a name synartesis writes: not ours
    Journal.open(home / "journal.db").close()
    assert os.stat(home).st_mode & 0o777 == 0o755
