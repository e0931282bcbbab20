"""`synartesis` with no command, as a process: one plain frame when piped, the console on a
real pseudo-terminal, and the typer group still answering --help and every subcommand."""

from __future__ import annotations

import os
import re
import select
import struct
import sys
import time

import helpers
import pytest
from helpers import cli, open_journal, synartesis_argv
from test_tui import World

ESC = "\x1b"


def _world_with_runs_and_a_held_call(tmp_path) -> tuple[World, str, str]:
    w = World(tmp_path)
    w.session([("put", {"key": "k0", "value": "agent"})], "first-agent")
    w.session([("get", {"key": "k0"}), ("delete", {"key": "k1"})], "second-agent")
    with open_journal(w.journal) as j:
        runs = j.list_runs()
        held = j.list_gated()
    assert len(runs) == 2 and len(held) == 1
    return w, runs[0].id, held[0].id


def test_piped_output_is_one_plain_frame_with_runs_and_held_calls(tmp_path):
    w, newest, held = _world_with_runs_and_a_held_call(tmp_path)
    out = cli("--manifest", str(w.manifest), "--journal", str(w.journal))
    assert out.returncode == 0, out.stderr
    assert ESC not in out.stdout and ESC not in out.stderr
    text = out.stdout
    assert text.count("SESSIONS (newest first)") == 1 and text.count("HELD CALLS") == 1  # one frame
    lines = text.splitlines()
    rows = [ln for ln in lines if "action" in ln and ("-agent" in ln or "└" in ln)]
    # each agent's session, newest first, its run folded in below it
    assert "second-agent" in rows[0] and newest[:8] in rows[1] and "first-agent" in rows[2]
    assert "2 actions · 1 held" in rows[0] and "2 actions · 1 held" in rows[1]
    assert f'{held[:8]} run {newest[:8]}  kv.delete {{"key":"k1"}}' in text  # the held call and its arguments
    assert "why: no rule matches this tool" in text  # and its reason
    assert "2 sessions,  2 runs, 0 live · 1 awaiting approval" in lines[0]


def test_console_as_a_command_is_the_console_with_no_command(tmp_path):
    # new user round 11: `synartesis console --help` said "No such command 'console'"
    w, newest, held = _world_with_runs_and_a_held_call(tmp_path)
    bare = cli("--manifest", str(w.manifest), "--journal", str(w.journal))
    named = cli("console", "--manifest", str(w.manifest), "--journal", str(w.journal))
    assert named.returncode == 0, named.stderr
    strip = lambda text: [ln for ln in text.splitlines() if "ago" not in ln]  # noqa: E731 - ages may tick
    assert strip(named.stdout) == strip(bare.stdout) and "SESSIONS (newest first)" in named.stdout
    helped = cli("console", "--help")
    assert helped.returncode == 0 and "--journal" in helped.stdout and "--by" in helped.stdout, helped.stdout


def test_piped_output_without_a_journal_says_where_it_looks_and_creates_nothing(tmp_path, fake_home):
    out = cli()
    assert out.returncode == 0, out.stderr
    expected = fake_home / ".synartesis" / "journal.db"
    assert f"no journal at {expected} yet" in out.stdout and ESC not in out.stdout
    assert not expected.exists() and not expected.parent.exists()
    given = tmp_path / "elsewhere" / "j.db"
    out = cli("--journal", str(given))
    assert out.returncode == 0 and f"no journal at {given} yet" in out.stdout
    assert not given.exists()


def test_help_and_subcommands_still_work(tmp_path):
    w, newest, held = _world_with_runs_and_a_held_call(tmp_path)
    for flag in ("--help", "-h"):
        out = cli(flag)
        assert out.returncode == 0 and "Usage: synartesis" in out.stdout
        assert "undo" in out.stdout and "With no command, synartesis opens the console" in out.stdout
    listed = cli("list", "--journal", str(w.journal))
    assert listed.returncode == 0 and newest[:8] in listed.stdout
    gates = cli("gates", "--journal", str(w.journal), "--json")
    assert gates.returncode == 0 and held in gates.stdout
    # group options belong to the console; before a command they would be silently ignored
    misplaced = cli("--journal", str(w.journal), "list")
    assert misplaced.returncode == 2 and "--journal goes after the command" in misplaced.stderr
    assert cli("no-such-command").returncode == 2


def _read_screen(fd: int, want: str, timeout: float = 30.0) -> str:
    """Read from the pty until the text (escape sequences removed) contains ``want``."""
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            plain = re.sub(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07", "",
                           buf.decode("utf-8", "replace"))
            if want in plain:
                return plain
    raise AssertionError(f"{want!r} never appeared on the terminal; got {buf[-2000:]!r}")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_on_a_terminal_the_console_runs_and_q_quits(tmp_path):
    import fcntl
    import pty
    import termios

    w, newest, held = _world_with_runs_and_a_held_call(tmp_path)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    proc = helpers.spawn(synartesis_argv("--manifest", str(w.manifest), "--journal", str(w.journal), "--by", "pty-user"),
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    try:
        _read_screen(master, newest[:8])
        os.write(master, b"g")
        _read_screen(master, "a approve")
        os.write(master, b"a")
        _read_screen(master, "approved kv.delete")
        os.write(master, b"q")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    with open_journal(w.journal) as j:
        row = j.get_action(held)
    assert row.status == "approved" and row.decided_by == "pty-user"
