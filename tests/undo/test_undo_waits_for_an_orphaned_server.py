"""Adversarial review 16, F1 (data loss): the proxy was SIGKILLed while a slow write was at the
server; the server, orphaned, went on. An undo run at once read the resource unchanged, called
the call "outcome unknown, but the resource is as it was before the call: nothing to undo" and
said rolled_back; seconds later the server applied the write, and nothing could undo it. The
run's launch line now records the server's pid and start token: while that server still runs,
undo halts on the call instead of settling it by a read, and once it has exited the next undo
settles and reverts it."""

from __future__ import annotations

import json
import os
import signal
import time

from helpers import RawSession, cli, kv_proxy, open_journal, start_slow_put
from test_undo_settles_unknown_by_a_read import DECLARED  # slow_put's post-state declared: a found write is reverted


def test_undo_halts_while_the_server_that_received_the_call_still_runs(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=DECLARED)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        server_pid = _kill_proxy_mid_slow_put(s, journal)
        halted = cli("undo", *flags)
        assert json.loads(state.read_text()).get("k1") == "v1", "the slow write landed before the check"
        assert halted.returncode == 1, halted.stdout + halted.stderr
        assert f"still running (pid {server_pid})" in halted.stdout, halted.stdout
        # its own way on, not the drift menu (new user 17, #3: "put the resource back the way the run left it")
        assert "Three ways on" not in halted.stdout and "Once what stopped it (above) is dealt with" in halted.stdout
        assert json.loads(state.read_text()) == {"k0": "agent", "k1": "v1"}  # nothing was undone
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (json.loads(state.read_text()).get("k1") != "x" or _alive(server_pid)):
            time.sleep(0.1)
    assert json.loads(state.read_text()).get("k1") == "x"  # the orphan applied it
    done = cli("undo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}


def test_undo_force_steps_over_a_call_whose_server_still_runs_and_never_settles_it_by_a_read(tmp_path):
    """Adversarial review 19, F1: `undo --force --yes` skipped the server-still-running check,
    read k1 unchanged, called the slow write "nothing to undo" and the run rolled_back; the
    write landed after, and nothing could undo it. --force steps over such a call, as it says:
    left as it is (still unknown), the older ones undone, the run partial."""
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=DECLARED)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        server_pid = _kill_proxy_mid_slow_put(s, journal)
        preview = cli("undo", "--force", *flags)
        assert "stepped over because of --force" in preview.stdout and "already-reverted" not in preview.stdout, \
            preview.stdout
        assert preview.returncode == 1 and "would leave 1 action in place" in preview.stdout  # why it exits 1
        forced = cli("undo", "--force", "--yes", *flags)
        assert json.loads(state.read_text()).get("k1") == "v1", "the slow write landed before the check"
        assert forced.returncode == 1 and f"still runs (pid {server_pid})" in forced.stdout, forced.stdout + forced.stderr
        with open_journal(journal) as j:
            [run] = j.list_runs()
            assert {a.tool: a.status for a in j.actions(run.id)} == {"put": "rolled_back", "slow_put": "unknown"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(server_pid):
            time.sleep(0.1)
    # its write stays, as --force said (the orphan writes its whole store from memory, so k0 is
    # its old value again: the fake server's doing, not the undo's)
    assert json.loads(state.read_text())["k1"] == "x"


def _kill_proxy_mid_slow_put(s: RawSession, journal) -> int:
    """Start a 6 s slow_put, SIGKILL the proxy while it is at the server; the server's pid as
    the run recorded it (with its start token)."""
    start_slow_put(s, journal, delay=6)
    with open_journal(journal) as j:
        [run] = j.list_runs()
    pid = run.servers["kv"]["pid"]
    assert isinstance(pid, int) and run.servers["kv"]["started"], run.servers
    os.kill(s.proc.pid, signal.SIGKILL)
    s.proc.wait(10)
    return pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_server_behind_a_launcher_is_waited_for_as_its_process_group(tmp_path):
    """Adversarial review 17, F1: the server was started by a shell script without `exec`; the
    halt named the shell's pid, killing the shell left the real server running (now a child of
    init), and the next undo settled the call as nothing done before the write landed. The
    whole process group is waited for, and the advice kills the group."""
    from helpers import FAKE_SERVER, proxy_argv
    manifest, journal, state, _ = kv_proxy(tmp_path, policy=DECLARED)
    wrapper = tmp_path / "launch.sh"
    wrapper.write_text("#!/bin/sh\n" + " ".join(FAKE_SERVER) + ' "$@"\n')  # no exec: sh stays the parent
    argv = proxy_argv("kv", manifest, journal, ["/bin/sh", str(wrapper), "--state", str(state)])
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        leader = _kill_proxy_mid_slow_put(s, journal)
        os.kill(leader, signal.SIGTERM)  # the shell only: the server it started goes on
        deadline = time.monotonic() + 10
        while _alive(leader) and time.monotonic() < deadline:
            time.sleep(0.05)
        halted = cli("undo", *flags)
        assert json.loads(state.read_text()).get("k1") == "v1", "the slow write landed before the check"
        assert halted.returncode == 1 and f"kill -- -{leader}" in halted.stdout, halted.stdout + halted.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and json.loads(state.read_text()).get("k1") != "x":
            time.sleep(0.1)
        try:
            os.killpg(leader, signal.SIGKILL)  # the orphan has done its write; end it
        except ProcessLookupError:
            pass
        time.sleep(0.5)
    done = cli("undo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}


def test_a_server_that_left_its_process_group_is_found_by_its_mark(tmp_path):
    """Adversarial review 18, F3: the server ran in a session of its own (``setsid``, as a daemon
    would put its worker), so killing the proxy's process group as advised left it running, and
    the next undo settled the call before the write landed. Every server the proxy starts gets
    SYNARTESIS_SERVER_MARK in its environment, recorded in the run's launch line; undo halts
    while any process carrying it runs, names it, and finishes once it has exited."""
    from helpers import FAKE_SERVER, proxy_argv
    manifest, journal, state, _ = kv_proxy(tmp_path, policy=DECLARED)
    wrapper = tmp_path / "launch.sh"
    wrapper.write_text("#!/bin/sh\nexec setsid -w " + " ".join(FAKE_SERVER) + ' "$@"\n')
    argv = proxy_argv("kv", manifest, journal, ["/bin/sh", str(wrapper), "--state", str(state)])
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        leader = _kill_proxy_mid_slow_put(s, journal)
        with open_journal(journal) as j:
            [run] = j.list_runs()
        mark = run.servers["kv"]["mark"]
        assert mark and mark not in json.dumps(dict(os.environ))
        os.killpg(leader, signal.SIGKILL)  # the group, as the advice says: the server is not in it
        deadline = time.monotonic() + 10
        while _alive(leader) and time.monotonic() < deadline:
            time.sleep(0.05)
        server = [int(p) for p in os.listdir("/proc") if p.isdigit() and _environ_has(int(p), mark)]
        assert server, "the detached server should still run"
        try:
            halted = cli("undo", *flags)
            assert json.loads(state.read_text()).get("k1") == "v1", "the slow write landed before the check"
            assert halted.returncode == 1, halted.stdout + halted.stderr
            assert f"pid {server[0]}, outside the server's process group" in halted.stdout, halted.stdout
            assert f"kill {server[0]}" in halted.stdout
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and json.loads(state.read_text()).get("k1") != "x":
                time.sleep(0.1)
        finally:
            for pid in server:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in server) and time.monotonic() < deadline:
            time.sleep(0.05)
    done = cli("undo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}


def _environ_has(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"SYNARTESIS_SERVER_MARK={mark}".encode() in f.read().split(b"\0")
    except OSError:
        return False
