"""A new user's finding (round 22, #7): bare undo said "the newest session with something to
undo: 1 action across 2 runs" when one of the two runs had only read. It counts the runs that
hold something to undo. One client process, two real proxies (filesystem, memory)."""

from __future__ import annotations

import json

from helpers import cli, fs_and_memory, run_async, sdk_session

def test_bare_undo_counts_only_the_runs_that_hold_something_to_undo(tmp_path, fs_server, memory_server):
    root, manifest, journal, env, fs, memory = fs_and_memory(tmp_path, fs_server, memory_server, "one\n")

    async def agent():
        async with sdk_session(fs, env=env) as files, sdk_session(memory, env=env) as graph:
            await graph.call_tool("read_graph", {})
            await files.call_tool("write_file", {"path": str(root / "a.txt"), "content": "two\n"})
    run_async(agent())

    flags = ("--manifest", str(manifest), "--journal", str(journal))
    [session] = json.loads(cli("list", "--json", *flags, env=env).stdout)
    assert len(session["runs"]) == 2, session
    plan = json.loads(cli("undo", "--dry-run", "--json", *flags, env=env).stdout)
    assert plan["picked"] == "the newest session with something to undo: 1 action across 1 run", plan["picked"]
