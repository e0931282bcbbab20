"""Every LIVE shipped policy against its real server (issue 5 item 2, first half): the server
is started, and every tool a rule names — match, snapshot, inverse, verify — is in its
tools/list; the shipped policy is then adopted by plan_server_policy from that real list, and
every advertised tool is covered by a rule.

The perform-and-undo half of the proof is tests/test_shipped_proofs.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import helpers
import pytest

from synartesis.proxy.client import introspect
from synartesis.services.policies import (
    load_shipped,
    named_tools,
    plan_server_policy,
    shipped_ids,
)

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / ".servers" / "node_modules" / "@modelcontextprotocol"
SQLITE_BIN = REPO / ".servers" / "sqlite-venv" / "bin" / "mcp-server-sqlite"


def sqlite_server_argv() -> list[str]:
    """mcp-server-sqlite needs the 1.x mcp SDK, so it lives in its own venv
    (.servers/sqlite-venv: pip install mcp-server-sqlite==2025.4.25 'mcp>=1.6,<2'),
    or wherever $SYNARTESIS_TEST_SQLITE_SERVER points."""
    given = os.environ.get("SYNARTESIS_TEST_SQLITE_SERVER")
    if given:
        return given.split()
    if not SQLITE_BIN.exists():
        pytest.fail(f"{SQLITE_BIN} is missing: python -m venv .servers/sqlite-venv && "
                    ".servers/sqlite-venv/bin/pip install mcp-server-sqlite==2025.4.25 'mcp>=1.6,<2'")
    return [str(SQLITE_BIN)]


def _node(pkg: str) -> list[str]:
    entry = NODE / pkg / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing: run npm ci --prefix .servers")
    return ["node", str(entry)]


def _git_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    helpers.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def server_argv(pid: str, tmp: Path) -> tuple[list[str], dict[str, str] | None]:
    """argv (and extra env) that starts the real server for shipped policy ``pid``."""
    if pid == "filesystem":
        root = tmp / "root"
        root.mkdir(exist_ok=True)
        return _node("server-filesystem") + [str(root)], None
    if pid == "memory":
        return _node("server-memory"), {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")}
    if pid == "everything":
        return _node("server-everything") + ["stdio"], None
    if pid == "sequential-thinking":
        return _node("server-sequential-thinking"), None
    if pid == "git":
        return [sys.executable, "-m", "mcp_server_git", "--repository", str(_git_repo(tmp))], None
    if pid == "sqlite":
        return sqlite_server_argv() + ["--db-path", str(tmp / "t.db")], None
    if pid == "time":
        return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Etc/UTC"], None
    if pid == "fetch":
        return [sys.executable, "-m", "mcp_server_fetch"], None
    if pid == "crm":
        return [sys.executable, "-m", "synartesis.demo.crm_server", "--state", str(tmp / "crm.json")], None
    raise AssertionError(f"no way to start a real server for the live policy {pid}")


LIVE = [pid for pid in shipped_ids() if load_shipped(pid).provenance == "live"]


def test_the_live_set_is_what_issue_5_promises() -> None:
    assert {"filesystem", "memory", "git", "sqlite", "time", "fetch", "sequential-thinking",
            "everything"} <= set(LIVE)
    assert "github" not in LIVE


@pytest.mark.parametrize("pid", LIVE)
def test_live_policy_against_the_real_server(pid: str, tmp_path: Path) -> None:
    argv, extra_env = server_argv(pid, tmp_path)
    env = dict(os.environ, **(extra_env or {}))
    info = introspect(argv[0], argv[1:], env=env, timeout=60.0)
    advertised = {t["name"] for t in info.tools}
    shipped = load_shipped(pid)
    needed = named_tools(shipped.rules, shipped.key)
    missing = {t: where for t, where in needed.items() if t not in advertised}
    assert not missing, f"{pid}: rules name tools the real server does not advertise: {missing}"

    plan = plan_server_policy(f"my-{pid}", argv[0], argv[1:], tools=info.tools,
                              server_info=info.server_info, origin=None)
    assert (plan.source, plan.policy_id, plan.checked) == ("shipped", pid, True), plan.reason
    assert plan.uncovered == [], f"{pid}: advertised tools the shipped policy does not cover"
    assert plan.provenance == "live"
