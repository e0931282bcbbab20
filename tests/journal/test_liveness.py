"""A live proxy is never taken for dead: the pid and its start time, checked directly."""

from __future__ import annotations

import os
import sys

import helpers
import pytest

from synartesis.journal.liveness import (
    host_name,
    pid_alive,
    process_state,
    start_token,
)


def test_a_running_process_is_live_with_its_own_start_token():
    token = start_token(os.getpid())
    assert token and start_token(os.getpid()) == token
    assert process_state(os.getpid(), token) == "live"
    assert process_state(os.getpid(), token, host_name()) == "live"


def test_the_same_pid_with_another_start_time_is_a_different_process():
    # a pid cannot be made to be reused on cue, so the recorded start is what differs
    token = start_token(os.getpid())
    scheme, rest = token.split(":", 1)
    if scheme != "linux":
        assert process_state(os.getpid(), f"{scheme}:{rest}0") == "gone"
    else:  # linux:<boot>:<ticks>:<pid namespace>
        _, boot, ticks, *ns = token.split(":")
        assert process_state(os.getpid(), ":".join(["linux", boot, ticks + "0", *ns])) == "gone"
        # another boot: the machine restarted since
        assert process_state(os.getpid(), ":".join(["linux", "another-boot", ticks, *ns])) == "gone"


def test_a_dead_pid_is_gone_and_what_cannot_be_told_is_not():
    child = helpers.spawn([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    assert process_state(child.pid, None) == "gone"
    assert process_state(os.getpid(), None) == "live"          # no start recorded: the pid decides
    assert process_state(os.getpid(), "ct:123.00") == "live"   # another platform's token: cannot compare
    assert process_state(child.pid, None, "another-host") == "unknown"
    assert process_state(None, None) == "unknown"


def test_a_child_sees_its_launcher_through_shell_wrappers():
    code = "from synartesis.journal.liveness import client_process as c; p = c(); print(p.pid, p.started)"
    direct = helpers.run([sys.executable, "-c", code], text=True, check=True).stdout.split()
    wrapped = helpers.run(["sh", "-c", f"exec env sh -c '\"{sys.executable}\" -c \"{code}\"'"],
                          text=True, check=True).stdout.split()
    # (not compared with os.getppid(): pytest itself may run under a shell wrapper, as in CI)
    assert direct == wrapped == [str(os.getpid()), start_token(os.getpid())]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zombies are read from /proc")
def test_a_killed_proxy_its_client_has_not_reaped_yet_is_gone(tmp_path):
    import signal
    import time

    child = helpers.spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    token = start_token(child.pid)
    assert process_state(child.pid, token) == "live"
    os.kill(child.pid, signal.SIGKILL)  # and not waited for: its pid stays taken (a zombie)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process_state(child.pid, token) != "gone":
        time.sleep(0.02)
    assert pid_alive(child.pid)  # the pid still answers signal 0 ...
    assert process_state(child.pid, token) == "gone"  # ... but the proxy is gone
    child.wait()


def test_env_given_by_client_names_what_the_entry_set_but_not_terminal_or_identity_variables():
    from synartesis.journal.liveness import (
        _environ_of,
        client_process,
        env_given_by_client,
    )

    client = client_process()
    theirs = _environ_of(client.pid) if client.pid else None
    if theirs is None:
        pytest.skip("the client's environment cannot be read here")
    mine = {k: v for k, v in theirs.items() if v}
    mine.update({"MEMORY_FILE_PATH": "/data/graph.json", "NO_COLOR": "1", "FORCE_COLOR": "0",
                 "USER": "someone-else", "TERM": "dumb", "LOGNAME": "someone-else"})
    assert env_given_by_client(mine) == ["MEMORY_FILE_PATH"]
