"""Shared fixtures: every test runs under a temporary HOME, every process it starts is reaped
when it ends, and a tripwire fails any test that wrote what synartesis writes into the real
home (its home, the client configs it edits, their temporary files)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import helpers
import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO / ".servers" / "node_modules"
_REAL_HOME = Path(os.path.expanduser("~")).resolve()
_REAL_ENV = dict(os.environ)
_ISOLATED_VARS = ("HOME", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "XDG_CONFIG_HOME",
                  "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CODEX_HOME",
                  "CLAUDE_CONFIG_DIR", "SYNARTESIS_HOME", "SYNARTESIS_JOURNAL", "PGPASSWORD", "PGPASSFILE")
# npm and uv keep caches under HOME; point them at a shared per-session folder so tests
# never touch the real one and do not refetch for every test.
_TOOL_CACHE_VARS = {"npm_config_cache": "npm-cache", "UV_CACHE_DIR": "uv-cache"}
_WATCH = helpers.HomeWatch(_REAL_HOME, _REAL_ENV)


def pytest_configure(config: pytest.Config) -> None:
    """Make this process the subreaper of everything the tests start (Linux): a process whose
    parent died (a server left behind by a killed proxy) becomes our child instead of init's,
    so the ``procs`` fixture still finds it when the test ends."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            pass


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tool-cache")


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool_cache: Path) -> Path:
    """A temporary HOME (and every other variable that moves a config) for each test.

    The tripwire: what synartesis would write under the real home (``helpers.HomeWatch``) is
    fingerprinted before the test and compared after it; any difference fails the test.
    """
    home = tmp_path / "home"
    home.mkdir()
    for var in _ISOLATED_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    # a bug in the CLI shows its traceback here (users get one line): "no traceback" checks
    # then still catch it
    monkeypatch.setenv("SYNARTESIS_DEBUG", "1")
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.setenv("LOCALAPPDATA", str(home / "AppData" / "Local"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("SYNARTESIS_HOME", str(home / ".synartesis"))
    for var, sub in _TOOL_CACHE_VARS.items():
        monkeypatch.setenv(var, str(tool_cache / sub))
    monkeypatch.setenv("NO_COLOR", "1")
    # OAuth sign-ins go to a file under the temporary home, never into the real keychain
    monkeypatch.setenv("SYNARTESIS_TOKEN_STORE", "file")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    helpers.TEST_PIDS.clear()
    before = _WATCH.snapshot()
    yield home
    changed = _WATCH.changes(before, _WATCH.snapshot(), helpers.TEST_PIDS)
    assert not changed, "test wrote into the real home directory:\n  " + "\n  ".join(changed)


@pytest.fixture(autouse=True)
def procs(fake_home: Path):
    """Every process the test starts through ``helpers`` (spawn, run, cli, RawSession,
    sdk_session, stdio_client) is registered here and reaped when the test ends, passed or
    failed: group and descendants, SIGTERM then SIGKILL, within a few seconds. A process
    the test did not start through helpers that is still alive under pytest is killed and
    fails the test (the code under test leaked it)."""
    registry = helpers.Procs()
    helpers._current = registry
    try:
        yield registry
    finally:
        helpers._current = None
        leaked = registry.reap()
    assert not leaked, "processes outlived the test (killed now):\n  " + "\n  ".join(leaked)


@pytest.fixture
def fs_server() -> list[str]:
    """argv prefix of the real @modelcontextprotocol/server-filesystem (append root dirs)."""
    entry = SERVERS_DIR / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing: run .ci/run (or npm ci --prefix .servers) first")
    return ["node", str(entry)]


@pytest.fixture
def memory_server() -> list[str]:
    """argv of the real @modelcontextprotocol/server-memory (set MEMORY_FILE_PATH)."""
    entry = SERVERS_DIR / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing: run .ci/run (or npm ci --prefix .servers) first")
    return ["node", str(entry)]


@pytest.fixture
def git_server() -> list[str]:
    """argv prefix of the real mcp-server-git (PyPI), run with this interpreter."""
    try:
        import mcp_server_git  # noqa: F401
    except ImportError:
        pytest.fail("mcp-server-git is not installed: pip install -e '.[test]' mcp-server-git")
    return [sys.executable, "-m", "mcp_server_git"]


@pytest.fixture
def synartesis_cmd() -> list[str]:
    """argv prefix that runs this checkout's CLI in a subprocess."""
    exe = shutil.which("synartesis")
    return [exe] if exe else [sys.executable, "-m", "synartesis"]


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the whole session (``tests/pgkit.py``), stopped at the end.
    Skips only when no PostgreSQL binaries exist on this machine (CI installs them)."""
    import pgkit
    bindir = pgkit.find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (initdb, postgres): install Debian's postgresql package, "
                    "or set SYNARTESIS_PG_BINDIR")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg is not installed: pip install -e '.[test]'")
    server = pgkit.PgServer.start(bindir)
    helpers.SESSION_PIDS.add(server.proc.pid)
    try:
        yield server
    finally:
        helpers.SESSION_PIDS.discard(server.proc.pid)
        server.stop()


@pytest.fixture
def pg_journal_url(pg_server, monkeypatch: pytest.MonkeyPatch):
    """A factory of fresh, empty PostgreSQL databases as journal URLs (the password in
    ``PGPASSWORD``, as a user would keep it); each is dropped when the test ends."""
    import pgkit
    monkeypatch.setenv("PGPASSWORD", pgkit.PASSWORD)
    made: list[str] = []

    def make() -> str:
        name = pg_server.new_database()
        made.append(name)
        return pg_server.url(name)

    yield make
    for name in made:
        pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def journal_backend(request) -> str:
    """Each journal test runs on both backends (issue 14)."""
    return request.param


@pytest.fixture
def journal_at(journal_backend: str, tmp_path: Path, request):
    """A factory of fresh journal locations on the backend under test: a file path on SQLite,
    a ``postgresql://`` URL of a new database on PostgreSQL."""
    count = iter(range(1000))
    if journal_backend == "postgresql":
        return request.getfixturevalue("pg_journal_url")
    return lambda: tmp_path / f"j{next(count)}" / "journal.db"


@pytest.fixture
def new_journal(journal_at):
    """A factory of new, empty journals on the backend under test (closed when the test ends)."""
    from synartesis.journal import Journal
    opened: list = []

    def make():
        j = Journal.open(journal_at(), create=True)
        opened.append(j)
        return j

    yield make
    for j in opened:
        j.close()
