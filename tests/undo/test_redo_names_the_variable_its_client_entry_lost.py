"""A new user's round 7: a memory entry installed with ``MEMORY_FILE_PATH`` in Claude Code's
config, written through, undone; then the variable deleted from the client file. Redo (and
undo) halted with "the read memory.open_nodes failed", without naming the variable; the dry run
and the ``--force`` preview said the session would end ``partial`` where the real redo keeps
its status; the ``--force`` preview said "nothing has drifted" under that halt; and the drift
menu ("Three ways on", with ``--force``) followed a halt whose way on is to set the variable.
Real install, real memory server, real proxy, real mcp stdio client."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys

import helpers
from installkit import place


async def _create(command: str, args: list[str], env: dict) -> None:
    from mcp import ClientSession, StdioServerParameters

    async with helpers.stdio_client(StdioServerParameters(command=command, args=args, env=env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await asyncio.wait_for(session.call_tool("create_entities", {"entities": [
                {"name": "Grace", "entityType": "person", "observations": ["navy"]}]}), 60)
            assert not r.is_error, r


def terminal_without_it() -> dict:
    return {k: v for k, v in os.environ.items() if k != "MEMORY_FILE_PATH"}


def _written(fake_home, tmp_path, memory_server):
    """Claude Code's memory entry installed, written through by the agent; returns
    (graph, the client file, cli) where cli runs synartesis from a terminal without the variable."""
    graph = tmp_path / "graphs" / "memory.jsonl"
    graph.parent.mkdir()
    cfg = place(fake_home, "claude-code", json.dumps({"mcpServers": {"memory": {
        "command": memory_server[0], "args": memory_server[1:], "env": {"MEMORY_FILE_PATH": str(graph)}}}}) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    terminal = terminal_without_it()

    def cli(*args: str, env: dict | None = None):
        return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                           env=env or terminal, cwd=work, timeout=180)

    assert cli("install", "--yes", "--client", "claude-code").returncode == 0
    entry = json.loads(cfg.read_text())["mcpServers"]["memory"]
    asyncio.run(_create(entry["command"], entry["args"], dict(terminal, **entry["env"])))
    return graph, cfg, cli


def _drop_the_variable(cfg) -> dict:
    """The person's edit of the client file; returns the config as it was."""
    config = json.loads(cfg.read_text())
    was = json.loads(json.dumps(config))
    del config["mcpServers"]["memory"]["env"]["MEMORY_FILE_PATH"]
    cfg.write_text(json.dumps(config, indent=2) + "\n")
    return was


def test_redo_names_the_variable_the_client_entry_no_longer_sets(fake_home, tmp_path, memory_server):
    graph, cfg, cli = _written(fake_home, tmp_path, memory_server)
    assert cli("undo").returncode == 0
    _drop_the_variable(cfg)
    before = hashlib.md5(graph.read_bytes()).hexdigest()

    dry, force, real = cli("redo", "--dry-run", "--json"), cli("redo", "--force"), cli("redo", "--json")
    plan, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == 1 and done["halted"]["cause"] == "launch", real.stdout
    assert "MEMORY_FILE_PATH" in done["halted"]["detail"] and "not started" in done["halted"]["detail"]
    assert plan["halted"]["detail"] == done["halted"]["detail"]
    # the preview says what the real redo does: it keeps the session's status
    assert plan["stays"] == done["stays"] == "compensated (unverified: 1)", (plan["stays"], done["stays"])
    said = " ".join(force.stdout.split())
    assert force.returncode == 1 and "nothing has drifted" not in said, said
    assert "--force --yes would halt at sequence" in said and "could not read current state" in said, said
    assert "the session stays compensated (unverified: 1) (dry run)" in said, said

    text = " ".join(cli("redo").stdout.split())
    assert "MEMORY_FILE_PATH" in text and "Three ways on" not in text, text
    assert "the server was not started, for the reason above. Do what it says, then run `synartesis redo" in text, text
    assert "the session stays compensated (unverified: 1)" in text, text

    # a shell that sets it instead: used, with a warning (its value cannot be checked)
    other = cli("redo", "--dry-run", env=dict(terminal_without_it(), MEMORY_FILE_PATH=str(tmp_path / "other.jsonl")))
    assert ("memory: this run's server was given MEMORY_FILE_PATH by its client entry, which no longer sets it"
            in " ".join(other.stdout.split())), other.stdout
    assert hashlib.md5(graph.read_bytes()).hexdigest() == before and not (tmp_path / "other.jsonl").exists()


def test_undo_names_the_variable_and_its_way_on_is_the_same_undo_again(fake_home, tmp_path, memory_server):
    graph, cfg, cli = _written(fake_home, tmp_path, memory_server)
    was = _drop_the_variable(cfg)
    undo = cli("undo")
    text = " ".join(undo.stdout.split())
    assert undo.returncode == 1 and "MEMORY_FILE_PATH" in text and "Three ways on" not in text, text
    assert "then run `synartesis undo s-" in text and "` again" in text, text
    assert "Grace" in graph.read_text()

    cfg.write_text(json.dumps(was, indent=2) + "\n")  # the way on it named
    # a halt on a read that failed does not stick: the same undo reads again (new user 17, #4:
    # it said "halted here on an earlier attempt" until --replan)
    again = cli("undo")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Grace" not in graph.read_text()
