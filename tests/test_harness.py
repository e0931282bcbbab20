"""The suite's own safety nets (issue 9 items 13 and 14): a test that fails while its processes
are alive still finishes, and the real-home tripwire sees what synartesis would write there and
nothing else."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from helpers import HomeWatch, own_descendants

TESTS = Path(__file__).resolve().parent

# Run by an inner pytest (in a subprocess) with this suite's conftest and helpers.
INNER = '''
import os, subprocess, sys
import pytest
import helpers

PIDS = os.environ["HARNESS_PIDS"]

def note(name, pid):
    with open(PIDS, "a") as f:
        f.write(f"{name} {pid}\\n")

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"

def test_fails_while_a_child_that_ignores_sigterm_holds_its_pipes():
    p = helpers.spawn([sys.executable, "-c", STUBBORN], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"up\\n"
    note("stubborn", p.pid)
    assert False, "deliberate failure with a live child"

def test_fails_after_its_child_left_an_orphan_behind():
    code = ("import subprocess, sys; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
            "start_new_session=True); print(g.pid, flush=True)")
    p = helpers.spawn([sys.executable, "-c", code], stdout=subprocess.PIPE)
    note("orphan", int(p.stdout.readline()))
    p.wait()
    assert False, "deliberate failure with an orphaned grandchild"

def test_a_timeout_kills_a_grandchild_that_holds_the_pipe():
    # subprocess.run(timeout=…) would kill the child, then wait for ever on the pipe the
    # grandchild still holds; helpers.run kills the whole tree
    code = ("import subprocess, sys; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            "print(g.pid, flush=True); g.wait()")
    with pytest.raises(subprocess.TimeoutExpired) as info:
        helpers.run([sys.executable, "-c", code], timeout=2)
    note("holder", int(info.value.output.split()[0]))

def test_a_process_started_behind_the_helpers_back_is_a_leak():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    note("leak", p.pid)
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_failing_test_never_hangs_the_suite_and_leaves_no_process(pytester, monkeypatch, tmp_path):
    pids = tmp_path / "pids.txt"
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("HARNESS_PIDS", str(pids))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-o", "addopts=", timeout=240)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2 and outcomes.get("passed") == 2, result.stdout.str()
    out = result.stdout.str()
    assert "deliberate failure with a live child" in out
    # the leaked processes are named, with their command lines, and the tests that leaked fail
    assert outcomes.get("errors") == 2 and "processes outlived the test" in out
    started = dict(line.split() for line in pids.read_text().splitlines())
    assert set(started) == {"stubborn", "orphan", "holder", "leak"}
    assert not [name for name, pid in started.items() if _alive(int(pid))]
    assert own_descendants() == []


# -- the tripwire ---------------------------------------------------------------------------

def _home(tmp_path: Path) -> tuple[Path, HomeWatch]:
    home = tmp_path / "realhome"
    (home / ".codex").mkdir(parents=True)
    (home / ".synartesis" / "backups").mkdir(parents=True)
    (home / ".claude.json").write_text(json.dumps({"numStartups": 1, "mcpServers": {}}))
    (home / ".codex" / "config.toml").write_text("[mcp_servers.x]\ncommand = \"npx\"\n")
    (home / ".synartesis" / "synartesis.yaml").write_text("version: 1\n")
    (home / ".synartesis" / "journal.db").write_bytes(b"x")
    return home, HomeWatch(home, {"HOME": str(home)}, platform="linux")


def test_other_programs_writing_to_the_home_do_not_trip_it(tmp_path):
    home, watch = _home(tmp_path)
    before = watch.snapshot()
    # Claude Code rewrites its file, Codex writes its sqlite state, npm fills its cache,
    # and a real proxy of the user's writes the real journal
    (home / ".claude.json").write_text(json.dumps({"numStartups": 2, "mcpServers": {}, "tipsHistory": {}}))
    (home / ".codex" / "state_5.sqlite").write_bytes(b"sqlite")
    (home / ".codex" / "state_5.sqlite-wal").write_bytes(b"wal")
    (home / ".npm" / "_cacache").mkdir(parents=True)
    (home / ".npm" / "_cacache" / "index").write_text("x")
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {}}')  # Cursor creating its own file
    (home / ".synartesis" / "journal.db").write_bytes(b"xy")
    (home / ".synartesis" / "journal.db-wal").write_bytes(b"wal")
    (home / ".bash_history").write_text("ls\n")
    assert HomeWatch.changes(before, watch.snapshot()) == []


def test_what_synartesis_would_write_trips_it(tmp_path):
    home, watch = _home(tmp_path)
    cases = [
        lambda: (home / ".claude.json").write_text(json.dumps({"mcpServers": {"f": {
            "command": "/usr/bin/synartesis", "args": ["proxy", "--server", "f", "--", "npx"]}}})),
        lambda: (home / ".codex" / ".config.toml.abc.synartesis-tmp").write_text("partial"),
        lambda: (home / ".synartesis" / "backups" / "claude.json.1").write_text("{}"),
        lambda: (home / ".synartesis" / "installed.json").write_text("{}"),
        lambda: (home / ".synartesis" / "synartesis.yaml").write_text("version: 1\nservers: {}\n"),
        lambda: (home / ".config" / "Claude").mkdir(parents=True)
        or (home / ".config" / "Claude" / "claude_desktop_config.json").write_text('{"command": "synartesis"}'),
    ]
    for write in cases:
        before = watch.snapshot()
        write()
        assert HomeWatch.changes(before, watch.snapshot()), write


def test_the_tripwire_follows_the_homes_own_variables(tmp_path):
    home, _ = _home(tmp_path)
    elsewhere = tmp_path / "claude-config"
    watch = HomeWatch(home, {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(elsewhere),
                             "SYNARTESIS_HOME": str(tmp_path / "synhome")}, platform="linux")
    assert elsewhere / ".claude.json" in watch.configs and home / ".claude.json" in watch.configs
    assert watch.syn_home == tmp_path / "synhome"
    before = watch.snapshot()
    (tmp_path / "synhome").mkdir()
    (tmp_path / "synhome" / "installed.json").write_text("{}")
    assert HomeWatch.changes(before, watch.snapshot())


def test_every_test_runs_under_a_temporary_home(fake_home):
    for var in ("HOME", "USERPROFILE", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                "CODEX_HOME", "CLAUDE_CONFIG_DIR", "SYNARTESIS_HOME", "APPDATA", "LOCALAPPDATA"):
        assert os.environ[var].startswith(str(fake_home)), var
    assert Path(os.path.expanduser("~")) == fake_home



# -- scripts/test (issue 9 item 15) ----------------------------------------------------------

STUB = """#!/bin/sh
# stands in for {name}: logs what it was asked to do; real python only for -c
if [ "{name}" = python ] && [ "$1" = "-c" ]; then exec "{real}" "$@"; fi
echo "STUB {name} $*"
if [ "{name}" = python ] && [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
fi
exit 0
"""


def test_scripts_test_says_what_it_installs_before_each_install(tmp_path):
    """Runs a copy of scripts/test in a scratch checkout with python and npm replaced by
    stubs (never in the worktree: npm ci would wipe the shared node_modules)."""
    import shutil

    from helpers import run

    repo = tmp_path / "checkout"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".servers").mkdir()
    shutil.copy(TESTS.parent / "scripts" / "test", repo / "scripts" / "test")
    shutil.copy(TESTS.parent / ".servers" / "package.json", repo / ".servers" / "package.json")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python", "npm"):
        (bin_dir / name).write_text(STUB.format(name=name, real=sys.executable))
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = run(["bash", str(repo / "scripts" / "test"), "-q"], env=env, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    installs = [i for i, line in enumerate(lines)
                if line.startswith("STUB") and (" install " in line or " ci " in line or " venv " in line)]
    assert len(installs) == 4, lines  # pip (ours), npm ci, the sqlite venv, pip in it
    # each step is announced on the line just before it (the sqlite venv's pip is part of
    # the step that creates the venv)
    assert all(lines[i - 1].startswith("scripts/test: ") for i in installs[:3]), lines
    assert " -m venv " in lines[installs[3] - 1], lines
    said = [ln for ln in lines if ln.startswith("scripts/test: ")]
    assert "mcp-server-git" in said[0] and "@modelcontextprotocol/server-filesystem" in said[1]
    assert "mcp-server-sqlite" in said[2] and said[-1] == "scripts/test: running the tests: python -m pytest -q"
    assert lines[-1] == "STUB python -m pytest -q"


def test_a_journal_that_appears_trips_it_only_when_a_process_of_the_test_made_it(tmp_path):
    """A new user's finding (round 16, #4): their own agent's first tool call, made in the same
    HOME while the suite ran, created ~/.synartesis/journal.db and failed an unrelated test. A
    journal that appears counts when one of its runs came from a process the test started (or
    from pytest itself), or when it cannot be read."""
    import sqlite3
    home, watch = _home(tmp_path)
    journal = home / ".synartesis" / "journal.db"

    def appear(pid: int, client_pid: int) -> dict:
        journal.unlink(missing_ok=True)
        before = watch.snapshot()
        with sqlite3.connect(journal) as db:
            db.execute("CREATE TABLE runs (id TEXT, pid INTEGER)")
            db.execute("CREATE TABLE sessions (id TEXT, client_pid INTEGER)")
            db.execute("INSERT INTO runs VALUES ('r', ?)", (pid,))
            db.execute("INSERT INTO sessions VALUES ('s', ?)", (client_pid,))
        return before

    before = appear(999_999_1, 999_999_2)
    assert HomeWatch.changes(before, watch.snapshot(), {12345}) == []  # someone else's client
    before = appear(12345, 999_999_2)
    assert HomeWatch.changes(before, watch.snapshot(), {12345})  # a proxy this test started
    before = appear(999_999_1, os.getpid())
    assert HomeWatch.changes(before, watch.snapshot(), set())  # launched by pytest itself
    journal.unlink()
    before = watch.snapshot()
    journal.write_bytes(b"not a database")
    assert HomeWatch.changes(before, watch.snapshot(), set())  # cannot be told: counted
