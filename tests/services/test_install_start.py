"""install starts servers (in parallel, with a timeout) to choose or draft their policy."""

from __future__ import annotations

import json
import sys

import yaml

from installkit import make_env, place
from synartesis.services.install import Progress


class Recorder(Progress):
    def __init__(self) -> None:
        self.total = None
        self.done: list[tuple[str, bool]] = []

    def start(self, total: int) -> None:
        self.total = total

    def advance(self, key: str, ok: bool) -> None:
        self.done.append((key, ok))


def test_started_servers_get_a_checked_shipped_or_drafted_policy_and_failures_a_catch_all(
        fake_home, tmp_path, memory_server):
    script = tmp_path / "tiny_server.py"
    script.write_text(
        "from mcp.server import MCPServer\n"
        "app = MCPServer('tiny')\n"
        "@app.tool(annotations={'readOnlyHint': True})\n"
        "def peek() -> str:\n    return 'x'\n"
        "@app.tool()\n"
        "def poke(v: str) -> str:\n    return v\n"
        "app.run()\n")
    place(fake_home, "cursor", json.dumps({"mcpServers": {
        "memory": {"command": memory_server[0], "args": memory_server[1:],
                   "env": {"MEMORY_FILE_PATH": str(tmp_path / "mem.jsonl")}},
        "tiny": {"command": sys.executable, "args": [str(script)]},
        "broken": {"command": "definitely-not-a-command-xyz"},
    }}, indent=2))
    from synartesis.services.install import InstallOptions, apply_install, plan_install
    from installkit import fake_proxy

    rec = Recorder()
    env = make_env(fake_home)
    plan = plan_install(env, InstallOptions(start=True, timeout=30, proxy_path=fake_proxy(tmp_path),
                                            system_root=tmp_path / "system"), progress=rec)
    apply_install(env, plan)
    assert rec.total == 3 and sorted(rec.done) == [("broken", False), ("memory", True), ("tiny", True)]
    assert "broken" in plan.start_errors
    by = {p.name: p for p in plan.policy_plans}
    assert by["memory"].source == "shipped" and by["memory"].checked
    assert by["tiny"].source == "drafted" and by["tiny"].todo_count == 1
    assert by["broken"].source == "drafted" and not by["broken"].checked
    policy = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())
    rules = {r["match"]: r for r in policy["tools"]}
    assert rules["tiny.peek"]["class"] == "readonly" and rules["tiny.poke"]["class"] == "irreversible"
    assert rules["broken.*"]["class"] == "irreversible"
    assert policy["servers"]["memory"].get("env", {}) in ({}, {"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"})
    assert str(tmp_path / "mem.jsonl") not in (fake_home / ".synartesis" / "synartesis.yaml").read_text()
