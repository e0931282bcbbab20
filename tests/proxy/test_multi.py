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


def test_a_server_that_dies_ends_the_multi_form_and_says_which(tmp_path):
    """Adversarial review 19, F11: killing one child ended the proxy and its other servers with
    nothing on stderr above debug. The form still follows any of its servers out (as the
    single-server form does), and stderr names the one that ended it."""
    import signal
    import time

    from helpers import RawSession
    states = {n: tmp_path / f"{n}.json" for n in ("a", "b")}
    for p in states.values():
        p.write_text(json.dumps({"k": "v"}))
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    servers = "".join(f"  {n}:\n    command: {json.dumps(sys.executable)}\n"
                      f"    args: {json.dumps([*FAKE_SERVER[1:], '--state', str(p)])}\n" for n, p in states.items())
    manifest.write_text(f"version: 1\nservers:\n{servers}tools:\n  - match: \"*.get\"\n    class: readonly\n")
    with RawSession(synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal))) as s:
        s.handshake()
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent_of(int(p)) == s.proc.pid]
        victim = next(p for p in children if str(states["a"]) in _cmdline(p))
        os.kill(victim, signal.SIGKILL)
        s.proc.wait(20)
        err = s.proc.stderr.read().decode()
    lines = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    assert any(x.get("server") == "a" and "exited" in x["msg"] and x["level"] == "error" and x.get("others") == ["b"]
               for x in lines), err


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
