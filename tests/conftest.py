"""Shared fixtures: every test runs under a temporary HOME, and a tripwire fails any test
that writes into the real home directory (or any client config location under it)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO / ".servers" / "node_modules"
_REAL_HOME = Path(os.path.expanduser("~")).resolve()
_ISOLATED_VARS = ("HOME", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "XDG_CONFIG_HOME",
                  "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CODEX_HOME",
                  "CLAUDE_CONFIG_DIR", "SYNARTESIS_HOME")
# npm and uv keep caches under HOME; point them at a shared per-session folder so tests
# never touch the real one and do not refetch for every test.
_TOOL_CACHE_VARS = {"npm_config_cache": "npm-cache", "UV_CACHE_DIR": "uv-cache"}


def _snapshot_home() -> dict[str, float]:
    """mtimes of the real home's top level and of the client config locations in it."""
    seen: dict[str, float] = {}
    watch = [_REAL_HOME, _REAL_HOME / ".claude", _REAL_HOME / ".cursor", _REAL_HOME / ".codex",
             _REAL_HOME / ".config", _REAL_HOME / ".config" / "Claude", _REAL_HOME / ".synartesis"]
    for d in watch:
        if not d.is_dir():
            continue
        try:
            for entry in os.scandir(d):
                if entry.name in (".cache", ".npm", ".pyenv", ".cargo", ".rustup", ".bash_history"):
                    continue
                try:
                    seen[entry.path] = entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    pass
        except OSError:
            pass
    return seen


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tool-cache")


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool_cache: Path) -> Path:
    """A temporary HOME (and every other variable that moves a config) for each test.

    The tripwire: the real home's top level and client config folders are fingerprinted
    before the test and compared after it; any new or modified entry fails the test.
    """
    home = tmp_path / "home"
    home.mkdir()
    for var in _ISOLATED_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.setenv("LOCALAPPDATA", str(home / "AppData" / "Local"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("SYNARTESIS_HOME", str(home / ".synartesis"))
    for var, sub in _TOOL_CACHE_VARS.items():
        monkeypatch.setenv(var, str(tool_cache / sub))
    monkeypatch.setenv("NO_COLOR", "1")
    # OAuth sign-ins go to a file under the temporary home, never into the real keychain
    monkeypatch.setenv("SYNARTESIS_TOKEN_STORE", "file")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    before = _snapshot_home()
    yield home
    after = _snapshot_home()
    changed = sorted(p for p, m in after.items() if before.get(p) != m)
    assert not changed, f"test wrote into the real home directory: {changed}"


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
