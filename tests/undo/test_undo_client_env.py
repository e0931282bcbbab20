"""Undo starts a server with the environment its client entry gives it: a memory server
installed with MEMORY_FILE_PATH in Claude Code's config is undone against the same graph file
from a terminal where that variable is not set."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import helpers
from installkit import place


async def _create(command: str, args: list[str], env: dict) -> None:
    from mcp import ClientSession, StdioServerParameters

    async with helpers.stdio_client(StdioServerParameters(command=command, args=args, env=env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("create_entities", {"entities": [
                {"name": "Grace", "entityType": "person", "observations": ["navy"]}]})
            assert not r.is_error, r


def test_undo_uses_the_env_of_the_client_entry(fake_home, tmp_path, memory_server):
    graph = tmp_path / "graphs" / "memory.jsonl"
    graph.parent.mkdir()
    config = {"mcpServers": {"memory": {"command": memory_server[0], "args": memory_server[1:],
                                        "env": {"MEMORY_FILE_PATH": str(graph)}}}}
    cfg = place(fake_home, "claude-code", json.dumps(config, indent=2) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    terminal = {k: v for k, v in os.environ.items() if k != "MEMORY_FILE_PATH"}

    def cli(*args):
        return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                              env=terminal, cwd=work, timeout=180)

    done = cli("install", "--yes", "--client", "claude-code")
    assert done.returncode == 0, done.stdout + done.stderr
    entry = json.loads(cfg.read_text())["mcpServers"]["memory"]
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert str(graph) not in policy  # the value stays in the client config only

    client_env = dict(terminal, **entry["env"])  # what Claude Code gives the server
    asyncio.run(_create(entry["command"], entry["args"], client_env))
    assert "Grace" in graph.read_text()

    undo = cli("undo")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "Grace" not in graph.read_text()
    assert not (Path(memory_server[1]).parent / "memory.jsonl").exists() or "Grace" not in (
        Path(memory_server[1]).parent / "memory.jsonl").read_text()
