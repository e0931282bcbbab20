"""The two thin services the window uses: undo segments over several runs (newest first across
runs, each segment exactly an ``undo RUN --to SEQ``), and the wrapped launch of a policy server."""

from __future__ import annotations

import sys

import pytest

from synartesis.errors import UsageError
from synartesis.journal import ActionRow
from synartesis.policy import parse_policy
from synartesis.redact import SECRET_MARK
from synartesis.services.undoing import Segment, plan_targets, segments
from synartesis.services.wrapped import proxy_launch


def _row(run: str, seq: int, t: int, cls: str = "reversible", status: str = "applied") -> ActionRow:
    return ActionRow(id=f"{run}{seq}", run_id=run, seq=seq, server="s", tool="t", cls=cls, rule=None, call_key="k",
                     args_ref="a", prior=None, snapshot_ref=None, result_ref=None, inverse_ref=None, verify_ref=None,
                     post_ref=None, status=status, note=None, decided_by=None, decided_at=None, decision_note=None,
                     used_by=None, idempotency_key=f"{run}{seq}", created_at=f"2026-01-01T00:00:{t:02d}.000Z",
                     updated_at="x")


def test_interleaved_runs_are_undone_newest_first_in_stretches():
    rows = [_row("A", 1, 1), _row("B", 1, 2), _row("B", 2, 3), _row("A", 2, 4), _row("A", 3, 5, cls="readonly")]
    assert segments(rows) == [Segment("A", 2), Segment("B", None), Segment("A", None)]
    assert plan_targets(segments(rows)) == [Segment("A", None), Segment("B", None)]


def test_one_run_is_one_whole_undo():
    rows = [_row("A", 1, 1), _row("A", 2, 2), _row("A", 3, 3)]
    assert segments(rows) == [Segment("A", None)]


def test_reads_denials_and_undone_actions_do_not_split_a_stretch():
    rows = [_row("A", 1, 1), _row("B", 1, 2, cls="readonly"), _row("B", 2, 3, status="denied"),
            _row("B", 3, 4, status="rolled_back"), _row("A", 2, 5)]
    assert segments(rows) == [Segment("A", None)]


def test_back_to_an_action_keeps_everything_older_in_every_run():
    rows = [_row("A", 1, 1), _row("B", 1, 2), _row("A", 2, 3), _row("B", 2, 4), _row("A", 3, 5)]
    assert segments(rows, since=("A", 2)) == [Segment("A", 3), Segment("B", 2), Segment("A", 2)]
    assert segments(rows, since=("B", 2)) == [Segment("A", 3), Segment("B", 2)]
    assert plan_targets(segments(rows, since=("A", 2))) == [Segment("A", 2), Segment("B", 2)]


def test_nothing_to_undo_is_no_segment():
    assert segments([_row("A", 1, 1, cls="readonly"), _row("A", 2, 2, status="failed")]) == []


POLICY = """version: 1
servers:
  files:
    command: node
    args: ["server.js", "/data"]
    env: {NOTES_DIR: "${HOME}/notes"}
  remote: {}
  secret:
    command: tool
    args: ["--token", "%s"]
tools: []
""" % SECRET_MARK


def test_a_policy_server_is_started_through_the_proxy_with_its_journal_and_session(tmp_path):
    policy = parse_policy(POLICY, str(tmp_path / "synartesis.yaml"))
    launch = proxy_launch(policy, "files", manifest=tmp_path / "p.yaml", journal=tmp_path / "j.db",
                          environ={"HOME": "/home/alex", "PATH": "/bin"}, extra_env={"SYNARTESIS_SESSION": "c1"},
                          entry_env=lambda o: None)
    assert launch.argv == [sys.executable, "-m", "synartesis", "proxy", "--server", "files", "--manifest",
                           str(tmp_path / "p.yaml"), "--journal", str(tmp_path / "j.db"), "--", "node", "server.js", "/data"]
    assert launch.env["NOTES_DIR"] == "/home/alex/notes" and launch.env["SYNARTESIS_SESSION"] == "c1"


def test_a_server_that_cannot_be_started_here_says_why(tmp_path):
    policy = parse_policy(POLICY, str(tmp_path / "synartesis.yaml"))
    kw = dict(manifest=tmp_path / "p", journal=tmp_path / "j", environ={}, entry_env=lambda o: None)
    with pytest.raises(UsageError, match="no command"):
        proxy_launch(policy, "remote", **kw)
    with pytest.raises(UsageError, match="secret"):
        proxy_launch(policy, "secret", **kw)
    with pytest.raises(UsageError, match="not a server"):
        proxy_launch(policy, "nope", **kw)
