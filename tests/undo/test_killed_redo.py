"""A redo killed mid-way (adversarial review #13): its attempt is found dead as a stale run is,
and every view says what is in effect right afterwards, before any command writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from helpers import RawSession, cli, kv_proxy, open_journal, spawn


def test_after_a_killed_redo_nothing_says_rolled_back_or_running_and_redo_halts_on_the_unknown_call(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "A"})
        s.call(2, "slow_put", {"key": "k1", "value": "B", "delay": 0})
    assert cli("undo", *j).returncode == 0
    # redo re-applies k0, then its second call hangs (FAKE_HANG) and redo is SIGKILLed
    redo = spawn([sys.executable, "-m", "synartesis", "redo", *j], env={**os.environ, "FAKE_HANG": "slow_put"},
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        with open_journal(journal) as jj:
            if [a.status for a in jj.actions(jj.list_runs()[0].id)] == ["applied", "pending"]:
                break
        time.sleep(0.1)
    os.kill(redo.pid, signal.SIGKILL)
    redo.wait(10)
    assert json.loads(state.read_text())["k0"] == "A"  # the redone call is in effect

    # reads only: nothing has swept the journal yet
    (session,) = json.loads(cli("list", "--json", *j).stdout)
    assert session["status"] == "partial", session
    history = json.loads(cli("history", "--json", *j).stdout)
    assert [(h["kind"], h["status"]) for h in history] == [("undo", "rolled_back"), ("redo", "abandoned")], history

    again = cli("redo", *j)  # writes: the dead attempt is abandoned, its call in flight is unknown
    assert again.returncode == 1 and "nothing to redo" not in again.stdout, again.stdout
    assert "outcome unknown: an earlier redo sent this call" in again.stdout, again.stdout
    # its menu offers what can be done, not "put the resource back the way the undo left it":
    # redo halts on this call every time (adversarial review 10)
    out = " ".join(again.stdout.split())
    assert "the way the undo left it" not in out and "Redo never sends this call again" in out, out
    with open_journal(journal) as jj:
        run = jj.list_runs()[0]
        assert run.status == "partial"
        assert [a.status for a in jj.actions(run.id)] == ["applied", "unknown"]
        assert [u.status for u in jj.undos(run.id)] == ["rolled_back", "abandoned", "halted"]
