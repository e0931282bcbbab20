"""Adversarial review 19, F2: SQLite keeps writing to the files it opened. A journal moved over
by an older copy while a proxy ran took its next 30 writes into a file no one reads again (and
left the journal damaged); one deleted with its write-ahead log took them nowhere; the proxy
answered success every time. A write transaction now checks that the journal and its log are
the files it opened, and the proxy fails closed: the call is not sent, and the agent is told."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import RawSession, kv_proxy, open_journal


@pytest.mark.parametrize("how", ["deleted", "swapped"])
def test_a_write_after_the_journal_was_swapped_or_deleted_is_not_sent(tmp_path, how):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "A"}).get("isError")
        if how == "deleted":
            for suffix in ("", "-wal", "-shm"):
                os.unlink(f"{journal}{suffix}")
        else:  # an older copy moved over it, as a restore from a backup would
            with open_journal(journal) as j:
                j.conn.execute("PRAGMA wal_checkpoint(FULL)")
            shutil.copy(journal, tmp_path / "old.db")
            os.replace(tmp_path / "old.db", journal)
        refused = s.call(2, "put", {"key": "k1", "value": "B"})
        assert refused.get("isError"), refused
        assert "replaced or deleted" in json.dumps(refused)
        assert json.loads(state.read_text())["k1"] == "v1"  # never sent
        s.close()


def test_a_journal_that_is_a_symlink_is_written_through(tmp_path):
    # adversarial review 20, F6: its -wal was looked for beside the link (SQLite puts it beside
    # the file the link points at), and every write was refused as "replaced or deleted"
    real = tmp_path / "real"
    real.mkdir()
    manifest, journal, state, argv = kv_proxy(tmp_path)
    os.symlink(real / "journal.db", journal)
    with RawSession(argv) as s:
        s.handshake()
        for n in range(1, 4):
            reply = s.call(n, "put", {"key": "k0", "value": f"v{n}"})
            assert not reply.get("isError"), reply
        s.close()
    with open_journal(journal) as j:
        assert len([a for r in j.list_runs() for a in j.actions(r.id)]) == 3


def test_a_journal_with_two_names_is_refused_before_anything_is_written(tmp_path):
    # adversarial review 20, F7: two proxies writing through two hard links of one journal
    # corrupted it ("malformed"), every write answered success
    from helpers import cli

    from synartesis.journal import Journal
    with Journal.open(tmp_path / "j.db", create=True) as j:
        j.begin_run("t", {})
    os.link(tmp_path / "j.db", tmp_path / "other.db")
    done = cli("list", "--journal", str(tmp_path / "j.db"))
    assert done.returncode == 2 and "hard links" in done.stderr, done.stdout + done.stderr
