"""An undo stopped from another thread (the console's esc): it takes no further step, writes
nothing for the actions it did not reach, and leaves no server running."""

from __future__ import annotations

import json

from helpers import RawSession, kv_proxy, open_journal, own_descendants

from synartesis.journal import Journal
from synartesis.undo import UndoOptions, undo_run
from synartesis.undo.servers import SpawnedServers, Stop


def _two_puts(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "a"})
        s.call(2, "put", {"key": "k1", "value": "b"})
        s.close()
    return journal, state


def test_an_undo_stopped_before_it_starts_sends_nothing_and_writes_no_step(tmp_path):
    journal, state = _two_puts(tmp_path)
    agent = state.read_bytes()
    stop = Stop()
    stop.set()
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester", stop=stop))
    assert report.halted is not None and "stopped" in report.halted.reason
    assert report.sent == 0 and state.read_bytes() == agent
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert [a.status for a in j.actions(run.id)] == ["applied", "applied"]
        assert j.audit(run.id).ok
    assert own_descendants() == []


def test_a_stop_after_an_inverse_was_sent_leaves_it_rolling_back_and_the_older_action_untouched(tmp_path, monkeypatch):
    journal, state = _two_puts(tmp_path)
    stop = Stop()
    real_call = SpawnedServers.call

    def call(self, *a, **kw):  # the first inverse goes through; esc lands right after it
        result = real_call(self, *a, **kw)
        stop.set()  # kills the server: the re-read cannot happen
        return result

    monkeypatch.setattr(SpawnedServers, "call", call)
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester", stop=stop))
    assert [(s.seq, s.kind) for s in report.steps] == [(2, "halt")]
    assert "stopped" in report.halted.reason and report.halted.outcome == "sent, not read back"
    assert json.loads(state.read_text()) == {"k0": "a", "k1": "v1"}  # seq 2 undone, seq 1 not reached
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        statuses = {a.seq: a.status for a in j.actions(run.id)}
        # not "unrecoverable": nothing showed the inverse failed; the next undo reads it again
        assert statuses == {1: "applied", 2: "rolling_back"}
        assert j.audit(run.id).ok
    with Journal.open(journal) as j:
        again = undo_run(j, UndoOptions(by="tester"))
    assert again.status == "rolled_back", again.as_json()
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}
    assert own_descendants() == []
