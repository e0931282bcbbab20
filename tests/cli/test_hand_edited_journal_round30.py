"""A journal edited by hand (adversarial review 30): no command may end in an internal error,
and ``audit`` must say what was removed.

- F2: a ``seq`` or ``gseq`` typed in as text or bytes (SQLite's INTEGER columns keep them):
  ``show SESSION`` and ``show --live`` sorted them against numbers (TypeError);
- F3: a negative ``gseq``: ``show --live`` looked for the newest write of a resource at
  ``(0, 0)`` (KeyError);
- F4: an undo attempt's ``scope`` that is not JSON: ``history``, ``undo``, ``redo`` and
  ``prune`` all failed reading the row (JSONDecodeError);
- F5: a run row deleted (its actions and events left behind), or a run's session row deleted:
  ``audit`` said every run was intact."""

from __future__ import annotations

import os
import sqlite3

import pytest
from helpers import RawSession, cli, kv_proxy

BIG = "big value line\n" * 200


def _journal(tmp_path):
    """Session s0 writes k0 and k1, session s1 writes k0 again, then s1 is undone and redone:
    returns the CLI's journal flags."""
    manifest, journal, state, argv = kv_proxy(tmp_path)
    for n, calls in enumerate([[("k0", BIG), ("k1", "b")], [("k0", "c" + BIG)]]):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=f"s{n}")) as s:
            s.handshake()
            for i, (key, value) in enumerate(calls, 1):
                assert not s.call(i, "put", {"key": key, "value": value}).get("isError")
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    assert cli("undo", "s1", *flags).returncode == 0
    assert cli("redo", "s1", *flags).returncode == 0
    return flags


def _edit(flags, sql):
    with sqlite3.connect(flags[-1]) as c:
        c.execute(sql)


def _run(flags, *args):
    p = cli(*args, *flags)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, (args, p.stderr[-1500:])
    assert p.returncode in (0, 1, 2), (args, p.returncode)
    return p


@pytest.mark.parametrize("sql", ["UPDATE actions SET seq = 'x' WHERE seq = 2",
                                 "UPDATE actions SET gseq = x'00' WHERE seq = 2",
                                 "UPDATE actions SET gseq = 'x' WHERE seq = 2",
                                 "UPDATE actions SET gseq = -5 WHERE seq = 2",
                                 "UPDATE actions SET gseq = -gseq"],
                         ids=["seq-text", "gseq-bytes", "gseq-text", "gseq-negative", "gseq-all-negative"])
def test_show_and_show_live_of_an_edited_order(tmp_path, sql):
    flags = _journal(tmp_path)
    _edit(flags, sql)
    assert _run(flags, "show", "s0").returncode == 0
    _run(flags, "show", "s0", "--live")
    assert _run(flags, "audit").returncode == 1
    assert _run(flags, "undo", "s0").returncode == 1  # a tampered run is not undone


def test_an_undo_scope_that_is_not_json(tmp_path):
    flags = _journal(tmp_path)
    _edit(flags, "UPDATE undos SET scope = 'garbage'")
    for args in (["history"], ["history", "--json"], ["undo", "--dry-run"], ["redo", "--dry-run"], ["redo"],
                 ["prune", "--older-than", "0", "--yes"]):
        _run(flags, *args)


def test_audit_finds_what_is_left_of_a_removed_run(tmp_path):
    flags = _journal(tmp_path)
    assert _run(flags, "audit").returncode == 0
    with sqlite3.connect(flags[-1]) as c:
        (gone,) = c.execute("SELECT run_id FROM actions ORDER BY gseq LIMIT 1").fetchone()
        c.execute("DELETE FROM runs WHERE id = ?", (gone,))  # sqlite3's foreign_keys are off: nothing cascades
    p = _run(flags, "audit")
    assert p.returncode == 1 and gone[:8] in p.stdout and "removed" in p.stdout, p.stdout


def test_audit_finds_a_removed_session(tmp_path):
    flags = _journal(tmp_path)
    _edit(flags, "DELETE FROM sessions WHERE name = 's0'")
    p = _run(flags, "audit")
    assert p.returncode == 1 and "session" in p.stdout, p.stdout


def test_audit_finds_a_removed_undo_attempt(tmp_path):
    """F11: the undos rows are what `history`, `redo` and prune's "its last undo halted" read;
    deleted, audit said intact."""
    flags = _journal(tmp_path)
    _edit(flags, "DELETE FROM undos")
    p = _run(flags, "audit")
    assert p.returncode == 1 and "attempt" in p.stdout, p.stdout
