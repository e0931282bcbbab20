"""Adversarial review 14: a --journal that is not a journal file. Every command given a FIFO,
or a symlink to a file that is not a journal, must exit 2 (a configuration error, as a
directory or a file that is not a database) and must leave the file it was pointed at as it
found it: the mode tightening ran before anything knew the path was a journal, and through a
symlink it chmodded the target (run as root against ``--journal link-to-/dev/zero`` it left
/dev/zero 0600 for the whole machine)."""

from __future__ import annotations

import os
import stat

from helpers import cli

COMMANDS = (["list"], ["show"], ["gates"], ["audit"], ["history"], ["undo", "--dry-run"], ["redo", "--dry-run"])


def test_a_fifo_given_as_the_journal_exits_2_and_keeps_its_mode(tmp_path):
    fifo = tmp_path / "journal.db"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o644)
    for args in COMMANDS:
        res = cli(*args, "--journal", str(fifo), timeout=60)
        assert res.returncode == 2, (args, res.returncode, res.stderr)  # was 1: "disk I/O error"
        assert "Traceback" not in res.stderr and str(fifo) in res.stderr, res.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert stat.S_IMODE(fifo.stat().st_mode) == 0o644  # was 0600: chmodded before it was known to be a journal


def test_a_symlink_to_a_file_that_is_not_a_journal_leaves_the_file_and_its_mode_alone(tmp_path):
    other = tmp_path / "notes.txt"  # someone's file, readable by others on purpose
    other.write_text("not a journal\n")
    os.chmod(other, 0o644)
    link = tmp_path / "journal.db"
    link.symlink_to(other)
    for args in COMMANDS:
        res = cli(*args, "--journal", str(link), timeout=60)
        assert res.returncode == 2, (args, res.returncode, res.stderr)
        assert "Traceback" not in res.stderr, res.stderr
    assert other.read_text() == "not a journal\n"
    assert stat.S_IMODE(other.stat().st_mode) == 0o644, oct(other.stat().st_mode)  # was 0600


def test_another_programs_sqlite_database_given_as_the_journal_keeps_its_mode(tmp_path):
    import sqlite3

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (x)")
    os.chmod(other, 0o644)
    res = cli("list", "--journal", str(other), timeout=60)
    assert res.returncode == 2 and "not a Synartesis journal" in res.stderr, res.stderr
    assert stat.S_IMODE(other.stat().st_mode) == 0o644, oct(other.stat().st_mode)  # was 0600


def test_an_empty_file_given_as_the_journal_is_no_journal_yet_and_stays_empty(tmp_path):
    empty = tmp_path / "journal.db"
    empty.write_bytes(b"")
    for args in COMMANDS:
        res = cli(*args, "--journal", str(empty), timeout=60)
        assert res.returncode == 2 and "there is no journal at" in res.stderr, (args, res.returncode, res.stderr)
    assert empty.stat().st_size == 0  # was: `list` made a 27 KB journal of it
