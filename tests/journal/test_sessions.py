"""Runs and agent sessions: grouping by the client process, SYNARTESIS_SESSION, and closing
runs whose proxy is gone (pending calls become unknown)."""

from __future__ import annotations

import os
import sys

import helpers

from synartesis.journal import Journal, RunOrigin
from synartesis.journal.liveness import host_name, start_token



def _origin(client_pid=4000, client_started="linux:boot:100", session=None, pid=None, started=None):
    return RunOrigin(pid=pid or os.getpid(), started=started or start_token(os.getpid()), host=host_name(),
                     client_pid=client_pid, client_started=client_started, session=session)


def test_runs_of_one_client_process_form_one_session(new_journal):
    j = new_journal()
    a = j.begin_run("claude-code", {"files": {}}, origin=_origin())
    b = j.begin_run("claude-code", {"memory": {}}, origin=_origin())
    other = j.begin_run("cursor", {"files": {}}, origin=_origin(client_pid=4001))
    reused = j.begin_run("claude-code", {"files": {}}, origin=_origin(client_started="linux:boot:999"))  # pid reused
    sessions = {r.id: r.session_id for r in j.list_runs()}
    assert sessions[a] == sessions[b]
    assert len({sessions[a], sessions[other], sessions[reused]}) == 3
    s = j.get_session(sessions[a])
    assert (s.kind, s.client, s.client_pid) == ("client", "claude-code", 4000)
    assert [r.id for r in j.session_runs(s.id)] == [b, a]
    listed = {x.id: x.last_at for x in j.list_sessions()}
    assert s.last_at == j.find_session(s.id[:8]).last_at == listed[s.id] is not None  # show says what list says


def test_an_explicit_session_wins_over_the_client_process(new_journal):
    j = new_journal()
    a = j.begin_run("desktop", {}, origin=_origin(session="conversation-1"))
    b = j.begin_run("desktop", {}, origin=_origin(client_pid=5555, session="conversation-1"))
    c = j.begin_run("desktop", {}, origin=_origin(session="conversation-2"))
    runs = {r.id: r.session_id for r in j.list_runs()}
    assert runs[a] == runs[b] != runs[c]
    found = j.find_session("conversation-1")
    assert found.id == runs[a] and found.kind == "explicit" and found.name == "conversation-1"
    assert j.find_session(runs[a][:6]).id == runs[a]


def test_a_run_with_no_parent_to_group_by_is_a_session_of_its_own(new_journal):
    j = new_journal()
    a = j.begin_run("x", {}, origin=_origin(client_pid=None, client_started=None))
    b = j.begin_run("x", {}, origin=_origin(client_pid=None, client_started=None))
    runs = {r.id: r.session_id for r in j.list_runs()}
    assert runs[a] != runs[b] and all(s.kind == "run" for s in j.list_sessions())


def test_the_proxy_records_its_client_process_and_the_environment_session(journal_at):
    journal = journal_at()
    code = ("import sys; from synartesis.journal import Journal; j = Journal.open(sys.argv[1], create=True); "
            "print(j.begin_run('t', {}))")
    # two 'proxies' started by this process, one through `sh -c`: both belong to it
    direct = helpers.run([sys.executable, "-c", code, str(journal)], text=True, check=True)
    shell = helpers.run(["sh", "-c", f'"{sys.executable}" -c "{code}" "{journal}"'], text=True,
                           check=True)
    named = helpers.run([sys.executable, "-c", code, str(journal)], text=True, check=True,
                           env=dict(os.environ, SYNARTESIS_SESSION="chat-42"))
    with Journal.open(journal) as j:
        runs = {r.id: r for r in j.list_runs()}
        one, two, three = (runs[p.stdout.strip()] for p in (direct, shell, named))
        assert one.session_id == two.session_id != three.session_id
        s = j.get_session(one.session_id)
        assert s.client_pid == os.getpid() and s.client_started == start_token(os.getpid())
        assert j.get_session(three.session_id).name == "chat-42"
        assert one.proxy_started and one.stale  # those proxies have exited


def test_end_and_close_turn_pending_calls_into_unknown(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    j.record_action(run, "s", "w", "reversible", None, {})
    assert j.end_run(run)
    assert j.find_run(run).counts == {"unknown": 1}
    other = j.begin_run("t", {})
    j.record_action(other, "s", "w", "reversible", None, {})
    assert j.close_run(other, "closed by hand")
    closed = j.find_run(other)
    assert closed.counts == {"unknown": 1} and closed.unknown == 1 and closed.end_note == "closed by hand"
    assert j.audit(run).ok and j.audit(other).ok


def test_end_run_never_overwrites_an_undo_status(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    j.set_run_status(run, "compensated", 2)
    assert not j.end_run(run)
    r = j.find_run(run)
    assert (r.status, r.unverified, r.shown_status) == ("compensated", 2, "compensated (unverified: 2)")


def test_a_cli_connection_closes_runs_whose_proxy_is_gone_on_its_first_write(new_journal):
    proxy = new_journal()
    dead = helpers.spawn([sys.executable, "-c", "pass"])
    dead.wait()
    gone = proxy.begin_run("t", {}, origin=_origin(pid=dead.pid, started="linux:boot:1"))
    reused = proxy.begin_run("t", {}, origin=_origin(pid=os.getpid(), started="linux:not-this-boot:1"))
    alive = proxy.begin_run("t", {}, origin=_origin())
    for rid in (gone, reused, alive):
        proxy.record_action(rid, "s", "w", "reversible", None, {})
    proxy.record_action(alive, "s", "w2", "reversible", None, {})  # the proxy's own writes reap nothing
    assert {r.id: r.status for r in proxy.list_runs()} == {gone: "active", reused: "active", alive: "active"}
    cli = Journal.open(proxy.path)  # the CLI's connection
    runs = {r.id: r for r in cli.list_runs()}
    assert runs[gone].stale and runs[reused].stale and not runs[alive].stale  # reading changes nothing
    assert runs[gone].status == "active" and runs[gone].shown_status == "complete"
    held, _ = cli.hold(alive, "s", "x", "irreversible", None, {}, "why")  # any write
    runs = {r.id: r for r in cli.list_runs()}
    assert (runs[gone].status, runs[reused].status, runs[alive].status) == ("complete", "complete", "active")
    assert runs[gone].counts == {"unknown": 1} and runs[alive].counts == {"pending": 2, "gated": 1}
    assert "is gone" in runs[gone].end_note
    assert all(cli.audit(r).ok for r in (gone, reused, alive))
