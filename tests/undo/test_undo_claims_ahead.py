"""An undo of several writes to one file claims the next step while this step's re-read is at
the server (issue 11 item 5): the claim is given back when the step halts, and an undo killed
after it leaves the journal saying no more than it knows (the next undo reads and finishes).

Real proxy, real filesystem server; the undo runs in this process (or in a child that kills
itself) so a test can act between
its calls."""

from __future__ import annotations

import json
import signal
import sys

from helpers import FS_POLICY, cli, files_run, open_journal, own_descendants, run

from synartesis.journal import Journal
from synartesis.undo import UndoOptions, undo_run
from synartesis.undo.servers import SpawnedServers


def _three_writes(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "v0"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "v1"}),
        ("write_file", {"path": "{root}/a.txt", "content": "v2"}),
        ("write_file", {"path": "{root}/a.txt", "content": "v3"})], policy=FS_POLICY)
    return root / "a.txt", tmp_path / "j.db"


def _statuses(journal):
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert j.audit(run.id).ok
        return {a.seq: a.status for a in j.actions(run.id) if a.cls != "readonly"}


def test_an_undo_of_one_file_claims_the_next_step_during_the_re_read_and_ends_all_rolled_back(tmp_path, fs_server):
    path, journal = _three_writes(tmp_path, fs_server)
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester"))
    assert report.status == "rolled_back", report.as_json()
    assert path.read_text() == "v0"
    assert _statuses(journal) == {1: "rolled_back", 2: "rolled_back", 3: "rolled_back"}
    with open_journal(journal) as j:  # seq 2 was claimed before seq 3's outcome was written
        run = j.list_runs()[0]
        order = [(kind, seq) for kind, seq in j._all(
            "SELECT e.kind, a.seq FROM events e JOIN actions a ON a.id = e.action_id WHERE e.run_id = ? "
            "AND e.kind IN ('action.rolling_back', 'action.rolled_back') ORDER BY e.id", (run.id,))]
    assert order.index(("action.rolling_back", 2)) < order.index(("action.rolled_back", 3)), order
    assert own_descendants() == []


def test_a_step_whose_re_read_shows_another_edit_halts_and_gives_the_next_steps_claim_back(tmp_path, fs_server, monkeypatch):
    path, journal = _three_writes(tmp_path, fs_server)
    real_call = SpawnedServers.call

    def call(self, *a, **kw):  # someone edits the file right after seq 3's inverse
        result = real_call(self, *a, **kw)
        path.write_text("someone else")
        return result

    monkeypatch.setattr(SpawnedServers, "call", call)
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester"))
    assert [(s.seq, s.kind) for s in report.steps] == [(3, "halt")], report.as_json()
    assert "did not restore" in report.halted.reason
    # seq 2 was claimed while seq 3's re-read was in flight; nothing of it was sent, so it is
    # back to applied, not left rolling_back
    assert _statuses(journal) == {1: "applied", 2: "applied", 3: "unrecoverable"}
    assert path.read_text() == "someone else"
    assert own_descendants() == []


# the undo process SIGKILLs itself right after its first claim ahead is committed (seq 3's
# inverse sent, its re-read in flight, seq 2 claimed, seq 3's outcome not yet written)
_KILLED_AFTER_CLAIM = """
import os, signal, sys
from synartesis.undo import engine
real = engine._Walk.preclaim
def preclaim(self, a, read):
    real(self, a, read)
    if self.preclaimed is not None:
        os.kill(os.getpid(), signal.SIGKILL)
engine._Walk.preclaim = preclaim
from synartesis.cli import main
main(sys.argv[1:])
"""


def test_an_undo_killed_after_claiming_ahead_leaves_the_next_undo_to_read_and_finish(tmp_path, fs_server):
    path, journal = _three_writes(tmp_path, fs_server)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]
    killed = run([sys.executable, "-c", _KILLED_AFTER_CLAIM, "undo", *flags], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert path.read_text() == "v2"  # seq 3's inverse was sent; seq 2's was not
    # seq 3: sent, its outcome not written; seq 2: claimed, nothing sent. Both say "an inverse
    # may have been sent", which the next undo settles by reading
    assert _statuses(journal) == {1: "applied", 2: "rolling_back", 3: "rolling_back"}
    again = cli("undo", "--json", *flags)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads(again.stdout)
    assert report["status"] == "rolled_back", report
    assert {s["seq"]: s["kind"] for s in report["steps"]} == {3: "already-reverted", 2: "revert", 1: "revert"}, report
    assert path.read_text() == "v0"
    assert _statuses(journal) == {1: "rolled_back", 2: "rolled_back", 3: "rolled_back"}
    assert own_descendants() == []


def _two_files(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "a0", "b.txt": "b0"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "a1"}),
        ("write_file", {"path": "{root}/b.txt", "content": "b1"})], policy=FS_POLICY)
    return root, tmp_path / "j.db"


def test_an_edit_made_after_an_inverse_is_seen_by_the_next_steps_drift_read_sent_ahead(tmp_path, fs_server, monkeypatch):
    # seq 1's drift read (a.txt) goes out while seq 2's re-read (b.txt) is at the server: still
    # after seq 2's inverse was answered, so it shows what happened before it
    root, journal = _two_files(tmp_path, fs_server)
    real_call = SpawnedServers.call

    def call(self, *a, **kw):
        result = real_call(self, *a, **kw)
        (root / "a.txt").write_text("someone else")
        return result

    from synartesis.undo import engine
    real_preclaim, ahead = engine._Walk.preclaim, []

    def preclaim(self, a, read):
        real_preclaim(self, a, read)
        ahead.append(self.ahead is not None and self.preclaimed is not None)

    monkeypatch.setattr(SpawnedServers, "call", call)
    monkeypatch.setattr(engine._Walk, "preclaim", preclaim)
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester"))
    assert ahead == [True]  # read and claimed during seq 2's re-read
    assert [(s.seq, s.kind) for s in report.steps] == [(2, "revert"), (1, "halt")], report.as_json()
    assert report.halted.reason == "drift detected" and report.halted.actual == {"present": True, "value": {"content": "someone else"}}
    assert _statuses(journal) == {1: "unrecoverable", 2: "rolled_back"}
    assert (root / "b.txt").read_text() == "b0" and (root / "a.txt").read_text() == "someone else"
    assert own_descendants() == []


def test_a_halt_after_a_drift_read_was_sent_ahead_gives_the_claim_back_and_leaves_no_answer_behind(tmp_path, fs_server, monkeypatch):
    root, journal = _two_files(tmp_path, fs_server)
    real_call = SpawnedServers.call

    def call(self, *a, **kw):  # seq 2's own file edited right after its inverse: its re-read halts
        result = real_call(self, *a, **kw)
        (root / "b.txt").write_text("someone else")
        return result

    monkeypatch.setattr(SpawnedServers, "call", call)
    with Journal.open(journal) as j:
        report = undo_run(j, UndoOptions(by="tester"))
    assert [(s.seq, s.kind) for s in report.steps] == [(2, "halt")], report.as_json()
    assert _statuses(journal) == {1: "applied", 2: "unrecoverable"}
    assert (root / "a.txt").read_text() == "a1"
    monkeypatch.undo()
    (root / "b.txt").write_text("b0")  # the person puts it back by hand; the next undo goes on
    with Journal.open(journal) as j:
        again = undo_run(j, UndoOptions(by="tester", replan=True))
    assert again.halted is None, again.as_json()
    assert (root / "a.txt").read_text() == "a0" and (root / "b.txt").read_text() == "b0"
    assert own_descendants() == []


_KV_TOO = FS_POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  kv: {}\n") + """  - match: "kv.put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key", delay: 2}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
"""


def test_a_drift_read_sent_ahead_during_a_slow_re_read_is_sent_again_and_sees_a_persons_edit(tmp_path, fs_server):
    # adversarial review 11: one session on two servers; the kv step's re-read takes 2 s, and
    # the file's drift read sent ahead at its start was used after it: a person's edit of the
    # file made meanwhile was overwritten as "state matches". Now that read is sent again.
    import threading
    import time

    from helpers import FAKE_SERVER, RawSession, proxy_argv
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    man, jp, st = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    man.write_text(_KV_TOO)
    st.write_text(json.dumps({"k": "v0"}))
    with RawSession(proxy_argv("files", man, jp, [*fs_server, str(root)])) as f, \
            RawSession(proxy_argv("kv", man, jp, [*FAKE_SERVER, "--state", str(st)])) as k:
        f.handshake()
        k.handshake()
        assert not f.call(1, "write_file", {"path": str(root / "a.txt"), "content": "a1"}).get("isError")
        assert not k.call(1, "put", {"key": "k", "value": "x"}, timeout=60).get("isError")

    def person() -> None:  # edits a.txt once kv's inverse is in, while kv's re-read is at its server
        deadline = time.monotonic() + 60
        while json.loads(st.read_text())["k"] != "v0" and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.7)
        (root / "a.txt").write_text("person's edit")

    t = threading.Thread(target=person, daemon=True)
    t.start()
    out = cli("undo", "--json", "--manifest", str(man), "--journal", str(jp), timeout=120)
    t.join(70)
    assert out.stdout, out.stderr
    report = json.loads(out.stdout)
    assert (root / "a.txt").read_text() == "person's edit"
    assert report["status"] == "partial", report
    assert [s["kind"] for s in report["steps"]] == ["revert", "halt"]
    assert "drift" in report["steps"][1]["reason"]
    assert json.loads(st.read_text())["k"] == "v0"
