"""A new user's finding (round 22, #7): bare undo said "the newest session with something to
undo: 1 action across 2 runs" when one of the two runs had only read. It counts the runs that
hold something to undo. One client process, two real proxies (filesystem, memory)."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, MEMORY_POLICY, cli, proxy_argv, run_async, sdk_session

POLICY = FS_POLICY + MEMORY_POLICY.split("tools:\n", 1)[1].replace("servers:\n  memory: {}\n", "")
POLICY = POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  memory: {}\n")


def test_bare_undo_counts_only_the_runs_that_hold_something_to_undo(tmp_path, fs_server, memory_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(POLICY)
    env = dict(os.environ, MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))
    fs = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    memory = proxy_argv("memory", manifest, journal, memory_server)

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
