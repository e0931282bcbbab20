"""One end-to-end test per client, across the process boundary (STYLE habit 10, issue 4):

install into a fixture config → read back the command exactly as written → start it as the
client would (that argv, that environment) → MCP handshake and a write through the real
filesystem server → the journal has the action → undo → uninstall → the config is
byte-identical to the original.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import helpers
import pytest
from installkit import place

# What Codex passes to a stdio server (codex-rs/rmcp-client/src/utils.rs, CLIENTS.md §1.4); a GUI
# app such as Claude Desktop does not pass the shell's environment either.
_MINIMAL_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
FULL_ENV_CLIENTS = {"claude-code", "cursor"}


def _config(client: str, argv: list[str], root: Path) -> str:
    command, args = argv[0], [*argv[1:], str(root)]
    if client == "codex":
        return ("# my codex config\nmodel = \"gpt-5\"\n\n[mcp_servers.files]   # the notes folder\n"
                f"command = {json.dumps(command)}\nargs = {json.dumps(args)}\nenv = {{ NOTE = \"kept\" }}\n")
    body = {"files": {"command": command, "args": args, "env": {"NOTE": "kept"}}}
    if client == "claude-code":
        return json.dumps({"numStartups": 4, "mcpServers": body, "projects": {}}, indent=2) + "\n"
    return json.dumps({"mcpServers": body, "globalShortcut": ""}, indent="\t")


def _read_entry(client: str, cfg: Path) -> dict:
    if client == "codex":
        return tomllib.loads(cfg.read_text())["mcp_servers"]["files"]
    return json.loads(cfg.read_text())["mcpServers"]["files"]


def _client_env(client: str, entry: dict) -> dict:
    base = dict(os.environ) if client in FULL_ENV_CLIENTS else {k: os.environ[k] for k in _MINIMAL_ENV
                                                                if k in os.environ}
    base.update({k: str(v) for k, v in (entry.get("env") or {}).items()})
    return base


async def _write_through(command: str, args: list[str], env: dict, target: Path) -> str:
    from mcp import ClientSession, StdioServerParameters

    params = StdioServerParameters(command=command, args=args, env=env)
    async with helpers.stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            assert "write_file" in {t.name for t in tools.tools}
            result = await asyncio.wait_for(session.call_tool(
                "write_file", {"path": str(target), "content": "changed through the proxy"}), 60)
            assert not result.is_error, result
            return init.server_info.name


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=180)


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop", "cursor", "codex"])
def test_install_run_journal_undo_uninstall(client, fake_home, tmp_path, fs_server):
    root = tmp_path / "notes"
    root.mkdir()
    target = root / "todo.txt"
    target.write_text("original text\n")
    original = _config(client, fs_server, root.resolve()).encode()
    cfg = place(fake_home, client, original)
    work = tmp_path / "work"
    work.mkdir()

    p = _cli("install", "--yes", "--client", client, cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr

    entry = _read_entry(client, cfg)
    exe = str(Path(sys.executable).parent / "synartesis")
    assert entry["command"] == exe
    assert entry["args"] == ["proxy", "--server", "files", "--", *fs_server, str(root.resolve())]
    assert entry["env"] == {"NOTE": "kept"}
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert "shipped filesystem policy" in policy

    name = asyncio.run(_write_through(entry["command"], entry["args"], _client_env(client, entry), target))
    assert "filesystem" in name  # the handshake went through to the real server
    assert target.read_text() == "changed through the proxy"

    from synartesis.journal import Journal

    with Journal.open(fake_home / ".synartesis" / "journal.db") as journal:
        runs = journal.list_runs()
        assert len(runs) == 1
        acts = journal.actions(runs[0].id)
    assert [(a.server, a.tool, a.cls, a.status) for a in acts if a.tool == "write_file"] == [
        ("files", "write_file", "reversible", "applied")]

    p = _cli("undo", cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    assert target.read_text() == "original text\n"

    p = _cli("uninstall", "--yes", "--client", client, cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    assert cfg.read_bytes() == original
