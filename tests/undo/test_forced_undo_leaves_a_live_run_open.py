"""The seventh adversarial review: `undo SESSION --force --yes` of a live session marked its run
ended and `partial` while the proxy went on journalling into it (an ended run looks closed to
prune, to the proxy's own end and to every view). A forced undo now leaves a live run active;
the report and `history` say what was undone. The fake key-value server behind the real proxy."""

from __future__ import annotations

import json
import os

from helpers import RawSession, cli, kv_proxy, open_journal


def test_a_forced_undo_of_a_live_session_leaves_its_run_open(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="live")) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "agent"}).get("isError")
        forced = cli("undo", "live", "--force", "--yes", "--json", *flags)
        assert forced.returncode == 0, forced.stdout + forced.stderr
        report = json.loads(forced.stdout)
        assert json.loads(state.read_text())["k0"] == "v0"
        [rid] = report["openRuns"]
        assert report["runs"] == {rid: "rolled_back"} and report["statusText"] == "rolled_back"
        with open_journal(journal) as j:
            run = j.find_run(rid)
            assert run.live and run.status == "active" and run.ended_at is None, run
        assert "it is still active" in cli("prune", rid[:8], *flags).stdout
        # the agent goes on: its next call is journalled in the same, still open run
        assert not s.call(2, "put", {"key": "k1", "value": "later"}).get("isError")
        with open_journal(journal) as j:
            assert [a.seq for a in j.actions(rid)] == [1, 2] and j.find_run(rid).status == "active"
        again = cli("undo", "live", "--force", "--yes", *flags)
        text = " ".join(again.stdout.split())
        assert again.returncode == 0, text
        assert f"R E S U L T rolled_back (so far: run {rid[:8]} is still active and left open" in text, text
        assert not s.call(3, "put", {"key": "k0", "value": "after"}).get("isError")  # still in effect at the end
        s.close()
    with open_journal(journal) as j:  # ended by its proxy, with a status that says what was undone
        run = j.find_run(rid)
        assert run.status == "partial" and run.ended_at is not None and j.audit(rid).ok
        assert [a.status for a in j.actions(rid)] == ["rolled_back", "rolled_back", "applied"]
    history = cli("history", "live", *flags).stdout
    assert history.count("rolled_back") >= 2, history
