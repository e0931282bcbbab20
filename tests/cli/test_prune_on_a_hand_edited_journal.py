"""A journal edited by hand (audit says BROKEN) must not make `prune` fail with an internal
error, nor delete a run it would keep on an intact journal (stop 28's left-outs):
- a staying write's ``snapshot_ref`` that is not JSON (``get_json`` raised JSONDecodeError);
- a ``gseq`` stored as text (``OtherRuns.after`` compared str with int: TypeError);
- every ``gseq`` NULL (writes of unknown order were taken as "not after": the later run went);
- a run whose payload is missing can still be pruned by naming it."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def _two_runs(tmp_path, fs_server, texts=("one", "two")):
    """Run 1 then run 2 write a.txt (each its own session); returns (flags, first, second)."""
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    (root / "a.txt").write_text("a0")
    for n, text in enumerate(texts):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=f"s{n}")) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": text}).get("isError")
    with open_journal(tmp_path / "j.db") as j:
        first, second = sorted(j.list_runs(), key=lambda r: r.started_at)
    return flags, first, second


def _edit(tmp_path, sql, params=()):
    with sqlite3.connect(tmp_path / "j.db") as c:
        c.execute(sql, params)


def _prune(flags, *refs):
    p = cli("prune", *refs, "--yes", "--json", *flags)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr.lower(), p.stderr[-800:]
    return p


def test_intact_journal_keeps_the_later_run(tmp_path, fs_server):
    flags, first, second = _two_runs(tmp_path, fs_server)
    p = _prune(flags, second.id[:8])
    assert p.returncode == 1 and json.loads(p.stdout)["deleted"] == [], p.stdout


def test_a_staying_snapshot_that_is_not_json(tmp_path, fs_server):
    flags, first, second = _two_runs(tmp_path, fs_server)
    _edit(tmp_path, "UPDATE actions SET snapshot_ref = '=not json{' WHERE run_id = ? AND class != 'readonly'", (first.id,))
    p = _prune(flags, second.id[:8])
    assert p.returncode == 1 and json.loads(p.stdout)["deleted"] == [], (p.stdout, p.stderr)


@pytest.mark.parametrize("value", ["'7'", "'x'", "NULL"], ids=["digit-text", "text", "null"])
def test_writes_of_unknown_order_keep_the_run(tmp_path, fs_server, value):
    flags, first, second = _two_runs(tmp_path, fs_server)
    _edit(tmp_path, f"UPDATE actions SET gseq = {value} WHERE run_id = ?", (second.id,))
    if value == "NULL":
        _edit(tmp_path, "UPDATE actions SET gseq = NULL")
    p = _prune(flags, second.id[:8])
    assert p.returncode == 1 and json.loads(p.stdout)["deleted"] == [], (p.stdout, p.stderr)
    assert "after" in json.loads(p.stdout)["kept"][0]["why"] or "order" in json.loads(p.stdout)["kept"][0]["why"]


def test_a_run_whose_payloads_are_missing_can_be_pruned(tmp_path, fs_server):
    flags, first, second = _two_runs(tmp_path, fs_server, texts=("one " * 200, "two " * 200))
    with sqlite3.connect(tmp_path / "j.db") as c:
        gone = c.execute("DELETE FROM blobs").rowcount
        c.execute("DELETE FROM chunks") if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks'").fetchone() else None
    assert gone, "the writes stored no blobs to lose"
    p = _prune(flags, second.id[:8])
    assert p.returncode == 1 and json.loads(p.stdout)["deleted"] == [], (p.stdout, p.stderr)
    p = _prune(flags, first.id[:8], second.id[:8])
    assert p.returncode == 0 and sorted(json.loads(p.stdout)["deleted"]) == sorted([first.id, second.id]), (p.stdout, p.stderr)
    assert cli("audit", *flags).returncode == 0


def test_a_going_write_whose_call_cannot_be_read_is_kept_unless_pruned_with_the_rest(tmp_path, fs_server):
    flags, first, second = _two_runs(tmp_path, fs_server)
    _edit(tmp_path, "UPDATE actions SET verify_ref = '=not json{', inverse_ref = '=[' WHERE run_id = ?", (second.id,))
    p = _prune(flags, second.id[:8])
    assert p.returncode == 1 and json.loads(p.stdout)["deleted"] == [], (p.stdout, p.stderr)
    p = _prune(flags, first.id[:8], second.id[:8])
    assert p.returncode == 0 and len(json.loads(p.stdout)["deleted"]) == 2, (p.stdout, p.stderr)


def test_undo_over_a_damaged_payload_says_the_journal_is_damaged(tmp_path, fs_server):
    # run 2 wrote back what run 1 left: no drift, so the undo looks for other runs' later writes
    flags, first, second = _two_runs(tmp_path, fs_server, texts=("one", "one"))
    _edit(tmp_path, "UPDATE actions SET verify_ref = '=not json{' WHERE run_id = ?", (second.id,))
    p = cli("undo", first.id[:8], *flags)
    assert "Traceback" not in p.stderr and p.returncode == 2, (p.returncode, p.stdout, p.stderr[-800:])
    assert "damaged" in p.stderr and "synartesis audit" in p.stderr, p.stderr
    assert (tmp_path / "root" / "a.txt").read_text() == "one"  # nothing was put back


def test_a_run_whose_last_undo_halted_points_at_history(tmp_path, fs_server):
    """A new user's round 22, #4: the reason named `show d5bdd9b1-1` (10 characters, cut at the
    dash), and `show` lists actions, not the halted attempt; `history` shows it."""
    flags, first, second = _two_runs(tmp_path, fs_server, texts=("one", "one"))
    assert cli("undo", first.id[:8], *flags).returncode == 1  # another session's later write
    p = _prune(flags, first.id[:8])
    why = json.loads(p.stdout)["kept"][0]["why"]
    assert f"`synartesis history {first.id[:8]}` says why" in why, why
    shown = cli("history", first.id[:8], *flags)
    assert shown.returncode == 0 and "halted" in shown.stdout, shown.stdout
