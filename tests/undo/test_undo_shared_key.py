"""Undo of a run of one client's ``memory`` never touches another client's graph.

Claude Code and Codex both run the real memory server, each with its own MEMORY_FILE_PATH. A
person made the same entity by hand in Claude Code's graph that the agent made through Codex.
Undoing the Codex run must delete it from Codex's graph only. An install from before keys told
env apart (both wrapped as `memory`) must refuse rather than guess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tomllib
from pathlib import Path

import helpers
from installkit import place

GRACE = {"type": "entity", "name": "Grace", "entityType": "person", "observations": ["navy"]}


async def _create(command: str, args: list[str], env: dict) -> None:
    from mcp import ClientSession, StdioServerParameters

    async with helpers.stdio_client(StdioServerParameters(command=command, args=args, env=env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await asyncio.wait_for(session.call_tool("create_entities", {"entities": [
                {k: v for k, v in GRACE.items() if k != "type"}]}), 60)
            assert not r.is_error, r


def _setup(fake_home: Path, tmp_path: Path, memory_server: list[str]):
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    claude_graph, codex_graph = graphs / "claude.jsonl", graphs / "codex.jsonl"
    claude_graph.write_text(json.dumps(GRACE) + "\n")  # the person's own Grace
    place(fake_home, "claude-code", json.dumps({"mcpServers": {"memory": {
        "command": memory_server[0], "args": memory_server[1:], "env": {"MEMORY_FILE_PATH": str(claude_graph)}}}}))
    codex = place(fake_home, "codex", f'[mcp_servers.memory]\ncommand = "{memory_server[0]}"\n'
                                      f'args = {json.dumps(memory_server[1:])}\n'
                                      f'env = {{ MEMORY_FILE_PATH = "{codex_graph}" }}\n')
    work = tmp_path / "work"
    work.mkdir()
    return claude_graph, codex_graph, codex, work


def _terminal() -> dict:
    return {k: v for k, v in os.environ.items() if k != "MEMORY_FILE_PATH"}


def _cli(*args: str, cwd: Path, env: dict | None = None):
    return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                       env=env or _terminal(), cwd=cwd, timeout=180)


def _agent_writes_through_codex(codex: Path) -> str:
    entry = tomllib.loads(codex.read_text())["mcp_servers"]["memory"]
    asyncio.run(_create(entry["command"], entry["args"], dict(_terminal(), **entry["env"])))
    return entry["args"][entry["args"].index("--server") + 1]


def test_undoing_the_codex_run_leaves_claude_codes_graph_alone(fake_home, tmp_path, memory_server):
    claude_graph, codex_graph, codex, work = _setup(fake_home, tmp_path, memory_server)
    before = claude_graph.read_bytes()
    done = _cli("install", "--yes", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr

    assert _agent_writes_through_codex(codex) == "memory-codex"
    assert "Grace" in codex_graph.read_text()

    undo = _cli("undo", cwd=work)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "Grace" not in codex_graph.read_text()
    assert claude_graph.read_bytes() == before


def _old_install(fake_home: Path, work: Path, monkeypatch) -> None:
    """The install of an earlier version: one key per command line, env not compared."""
    import synartesis.services.install as install_mod
    from synartesis.paths import Env
    from synartesis.services.install import InstallOptions, apply_install, plan_install

    exe = str(Path(sys.executable).parent / "synartesis")
    env = Env(home=fake_home, environ=_terminal(), platform="linux", cwd=work)
    with monkeypatch.context() as old:
        old.setattr(install_mod, "_ident", lambda entry, command, args, *_: install_mod._fp(command, args))
        apply_install(env, plan_install(env, InstallOptions(proxy_path=exe, start=False)))


def test_an_old_install_sharing_one_key_refuses_to_guess(fake_home, tmp_path, memory_server, monkeypatch):
    claude_graph, codex_graph, codex, work = _setup(fake_home, tmp_path, memory_server)
    before = claude_graph.read_bytes()
    _old_install(fake_home, work, monkeypatch)

    assert _agent_writes_through_codex(codex) == "memory"
    undo = _cli("undo", cwd=work)
    assert undo.returncode == 1, undo.stdout + undo.stderr
    said = undo.stdout + undo.stderr
    assert "Claude Code's memory and Codex's memory are both wrapped as `memory`" in said, said
    assert "MEMORY_FILE_PATH" in said and str(codex_graph) not in said and "Traceback" not in said
    assert "` again" in said  # the halt on a server not started does not stick: the same undo again
    assert claude_graph.read_bytes() == before and "Grace" in codex_graph.read_text()

    other = _cli("undo", cwd=work, env=dict(_terminal(), MEMORY_FILE_PATH=str(tmp_path / "neither.jsonl")))
    assert other.returncode == 1 and "it must be one of the entries' values" in other.stdout + other.stderr
    assert claude_graph.read_bytes() == before and "Grace" in codex_graph.read_text()

    told = _cli("undo", cwd=work, env=dict(_terminal(), MEMORY_FILE_PATH=str(codex_graph)))
    assert told.returncode == 0, told.stdout + told.stderr
    assert "using this shell's, which is one of them" in told.stdout + told.stderr
    assert "Grace" not in codex_graph.read_text() and claude_graph.read_bytes() == before


def test_an_old_shared_key_whose_other_entry_cannot_be_read_is_refused(fake_home, tmp_path, memory_server, monkeypatch):
    claude_graph, codex_graph, codex, work = _setup(fake_home, tmp_path, memory_server)
    before = claude_graph.read_bytes()
    _old_install(fake_home, work, monkeypatch)
    _agent_writes_through_codex(codex)
    codex.write_text(codex.read_text() + "\n[[[ broken\n")

    undo = _cli("undo", cwd=work)
    said = undo.stdout + undo.stderr
    assert undo.returncode == 1, said
    assert "Codex's memory (its client file cannot be read) is also wrapped as `memory`" in said
    assert claude_graph.read_bytes() == before and "Grace" in codex_graph.read_text()
