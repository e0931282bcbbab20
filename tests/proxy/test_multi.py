"""The policy form with several servers: `synartesis proxy --manifest P` serves every server of
the policy with SERVER__tool names, journals under the real server and tool names."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from helpers import FAKE_SERVER, open_journal, sdk_session, synartesis_argv, text_of


def test_several_servers_behind_one_proxy(tmp_path, fs_server, memory_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("before")
    state = tmp_path / "kv.json"
    state.write_text(json.dumps({"k": "v"}))
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(f"""version: 1
servers:
  files:
    command: {json.dumps(fs_server[0])}
    args: {json.dumps([*fs_server[1:], str(root)])}
  memory:
    command: {json.dumps(memory_server[0])}
    args: {json.dumps(memory_server[1:])}
    env: {{MEMORY_FILE_PATH: "${{SYN_TEST_MEMORY}}"}}
  kv:
    command: {json.dumps(sys.executable)}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(state)])}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {{tool: files.read_text_file, args: {{path: "$.path"}}, absent_when: ["ENOENT"]}}
    inverse: {{tool: files.write_file, args: {{path: "$.path", content: "$snapshot.content"}}}}
  - match: "memory.create_entities"
    class: compensable
    inverse: {{tool: memory.delete_entities, args: {{entityNames: "$result.entities[].name"}}}}
  - match: "kv.get"
    class: readonly
""")
    env = dict(os.environ, SYN_TEST_MEMORY=str(tmp_path / "memory.jsonl"))

    async def go():
        async with sdk_session(synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal)), env=env) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"files__write_file", "memory__create_entities", "kv__put"} <= names
            assert not any("__" not in n for n in names)
            r = await s.call_tool("files__write_file", {"path": str(root / "a.txt"), "content": "after"})
            assert not r.is_error
            r = await s.call_tool("memory__create_entities", {"entities": [{"name": "N", "entityType": "t", "observations": []}]})
            assert not r.is_error
            r = await s.call_tool("kv__get", {"key": "k"})
            assert "v" in text_of(r)
            r = await s.call_tool("kv__put", {"key": "k", "value": "w"})  # no rule: held
            assert r.is_error and "holding this call" in text_of(r)
            bad = None
            try:
                await s.call_tool("write_file", {"path": "x", "content": "y"})
            except Exception as exc:  # the SDK raises on a JSON-RPC error
                bad = str(exc)
            assert bad and "no configured server provides tool write_file" in bad
    asyncio.run(go())
    assert (root / "a.txt").read_text() == "after"
    assert (tmp_path / "memory.jsonl").exists()
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [(a.server, a.tool, a.status) for a in acts] == [
            ("files", "write_file", "applied"), ("memory", "create_entities", "applied"),
            ("kv", "get", "applied"), ("kv", "put", "gated")]
