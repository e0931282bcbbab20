"""Runs as a real client makes them (issue 10 items 1 and 2): the mcp SDK's own stdio client
drives the real proxy in front of the real filesystem and memory servers. A health check
leaves no run (and says so on stderr); the client's name from ``initialize`` labels the runs
and their agent session."""

from __future__ import annotations

import json
import os
from contextlib import AsyncExitStack

from helpers import (
    cli,
    open_journal,
    fs_and_memory,
    run_async,
    stdio_client,
)

async def _connect(stack: AsyncExitStack, argv: list[str], env: dict, errlog, name: str):
    """One SDK ClientSession over stdio to ``argv``, initialised as client ``name``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp_types import Implementation

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(
        ClientSession(read, write, client_info=Implementation(name=name, version="1.0")))
    await session.initialize()
    return session


def _world(tmp_path, fs_server, memory_server):
    return fs_and_memory(tmp_path, fs_server, memory_server)


def test_a_health_check_through_the_sdk_client_leaves_no_run_and_says_so_on_stderr(tmp_path, fs_server, memory_server):
    root, manifest, journal, env, fs, memory = _world(tmp_path, fs_server, memory_server)
    logs = [tmp_path / "fs.err", tmp_path / "memory.err"]

    async def probe():  # what `claude mcp list` or a status probe does: initialize, tools/list, exit
        async with AsyncExitStack() as stack:
            for argv, log in zip((fs, memory), logs):
                errlog = stack.enter_context(log.open("w"))
                session = await _connect(stack, argv, env, errlog, "health-check")
                assert (await session.list_tools()).tools
    run_async(probe())
    if journal.exists():
        with open_journal(journal) as j:
            assert j.list_runs() == [] and j.list_sessions() == []
    for log, server in zip(logs, ("files", "memory")):
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        ended = [line for line in lines if line["msg"] == "session ended without tool calls"]
        assert [(e["server"], e["client"]) for e in ended] == [(server, "health-check")], lines
        assert not any(line["msg"] == "run started" for line in lines)
    out = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert (root / "a.txt").read_text() == "before\n"


def test_the_client_name_from_initialize_labels_both_runs_and_their_session(tmp_path, fs_server, memory_server):
    root, manifest, journal, env, fs, memory = _world(tmp_path, fs_server, memory_server)

    async def agent():
        async with AsyncExitStack() as stack:
            files = await _connect(stack, fs, env, None, "trial-agent")
            graph = await _connect(stack, memory, env, None, "trial-agent")
            assert not (await files.call_tool("write_file", {"path": str(root / "a.txt"), "content": "x"})).is_error
            made = await graph.call_tool("create_entities", {"entities": [{"name": "A", "entityType": "t",
                                                                            "observations": []}]})
            assert not made.is_error
    run_async(agent())
    [session] = json.loads(cli("list", "--json", "--manifest", str(manifest), "--journal", str(journal)).stdout)
    assert (session["client"], session["clientPid"], session["kind"]) == ("trial-agent", os.getpid(), "client")
    assert sorted((r["label"], r["client"], r["servers"][0]) for r in session["runs"]) == [
        ("trial-agent", "trial-agent", "files"), ("trial-agent", "trial-agent", "memory")]
    with open_journal(journal) as j:
        [row] = j.list_sessions()
        assert (row.client, row.client_pid) == ("trial-agent", os.getpid())
        assert {r.label for r in j.session_runs(row.id)} == {"trial-agent"}
    text = cli("list", "--manifest", str(manifest), "--journal", str(journal)).stdout
    assert "trial-agent" in text and "2 runs" in text

    # bare undo names the session it picked and why, and marks what it could not check
    env_cli = ("--manifest", str(manifest), "--journal", str(journal))
    dry = cli("undo", "--dry-run", *env_cli, env=env)
    assert dry.returncode == 0 and "would end compensated (unverified: 1) (dry run)" in dry.stdout, dry.stdout
    done = cli("undo", *env_cli, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    picked = f"picked session {session['session'][:10]} (trial-agent, 2 runs: files, memory): the newest session with something to undo"
    assert picked in " ".join(done.stdout.split())
    assert "memory.create_entities" in done.stdout and "[unverified: no read declared]" in done.stdout
    assert (root / "a.txt").read_text() == "before\n"
    # the session by its id: redo, then undo again, and history has all three
    sid = session["session"]
    redone = cli("redo", sid[:10], *env_cli, env=env)
    assert redone.returncode == 0 and (root / "a.txt").read_text() == "x", redone.stdout + redone.stderr
    again = cli("undo", sid, *env_cli, env=env)
    assert again.returncode == 0 and (root / "a.txt").read_text() == "before\n", again.stdout + again.stderr
    entries = json.loads(cli("history", sid[:10], "--json", *env_cli).stdout)
    assert [(e["kind"], e["target"]) for e in entries] == [(kind, f"session {sid[:10]}") for kind in ("undo", "redo", "undo")]
