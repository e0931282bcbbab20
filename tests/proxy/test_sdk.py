"""The mcp SDK's own client connects through the proxy to the real filesystem, memory and git
servers; the journal records each call correctly."""

from __future__ import annotations

import asyncio
import os

import helpers
from helpers import (
    FS_POLICY,
    MEMORY_POLICY,
    open_journal,
    proxy_argv,
    sdk_session,
    text_of,
)

GIT_POLICY = """version: 1
servers:
  git: {}
tools:
  - match: "git.git_status"
    class: readonly
  - match: "git.git_add"
    class: compensable
    inverse: {tool: git.git_reset, args: {repo_path: "$.repo_path"}}
"""


def test_sdk_client_through_proxy_to_filesystem(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("before")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(FS_POLICY)

    async def go():
        async with sdk_session(proxy_argv("files", manifest, journal, [*fs_server, str(root)])) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"read_text_file", "write_file", "move_file"} <= names
            r1 = await s.call_tool("read_text_file", {"path": str(root / "a.txt")})
            assert text_of(r1) == "before"
            r2 = await s.call_tool("write_file", {"path": str(root / "a.txt"), "content": "after"})
            assert not r2.is_error
            r3 = await s.call_tool("move_file", {"source": str(root / "a.txt"), "destination": str(root / "b.txt")})
            assert r3.is_error and "holding this call for approval" in text_of(r3)
    asyncio.run(go())
    assert (root / "a.txt").read_text() == "after" and not (root / "b.txt").exists()

    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.status == "complete" and run.label  # the SDK client's name
        acts = j.actions(run.id)
        assert [(a.seq, a.tool, a.cls, a.status) for a in acts] == [
            (1, "read_text_file", "readonly", "applied"),
            (2, "write_file", "reversible", "applied"),
            (3, "move_file", "irreversible", "gated")]
        w = acts[1]
        assert j.get_json(w.snapshot_ref) == {"content": "before"}
        assert j.get_json(w.inverse_ref) == [{"server": "files", "tool": "write_file",
                                             "args": {"path": str(root / "a.txt"), "content": "before"}}]
        assert j.get_json(w.post_ref) == {"present": True, "value": {"content": "after"}}
        assert acts[0].snapshot_ref is None and acts[0].inverse_ref is None
        assert j.audit(run.id).ok


def test_sdk_client_through_proxy_to_memory(tmp_path, memory_server):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(MEMORY_POLICY)
    env = dict(os.environ, MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))

    async def go():
        async with sdk_session(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
            r = await s.call_tool("create_entities", {"entities": [
                {"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]})
            assert not r.is_error
            g = await s.call_tool("read_graph", {})
            assert "Ada" in text_of(g)
    asyncio.run(go())
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [a.status for a in acts] == ["applied", "applied"]
        assert j.get_json(acts[0].inverse_ref) == [
            {"server": "memory", "tool": "delete_entities", "args": {"entityNames": ["Ada"]}}]


def test_sdk_client_through_proxy_to_git(tmp_path, git_server):
    repo = tmp_path / "repo"
    repo.mkdir()
    helpers.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("x")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(GIT_POLICY)

    async def go():
        async with sdk_session(proxy_argv("git", manifest, journal, [*git_server, "--repository", str(repo)])) as s:
            st = await s.call_tool("git_status", {"repo_path": str(repo)})
            assert "f.txt" in text_of(st)
            add = await s.call_tool("git_add", {"repo_path": str(repo), "files": ["f.txt"]})
            assert not add.is_error
            commit = await s.call_tool("git_commit", {"repo_path": str(repo), "message": "m"})
            assert commit.is_error and "holding this call" in text_of(commit)
    asyncio.run(go())
    staged = helpers.run(["git", "-C", str(repo), "diff", "--cached", "--name-only"], capture_output=True, text=True)
    assert staged.stdout.strip() == "f.txt"
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [(a.tool, a.status) for a in acts] == [("git_status", "applied"), ("git_add", "applied"),
                                                     ("git_commit", "gated")]
        assert j.get_json(acts[1].inverse_ref)[0]["tool"] == "git_reset"


def test_proxy_stdout_is_protocol_only_and_logs_are_json(tmp_path, fs_server):
    import json

    from helpers import RawSession
    root = tmp_path / "root"
    root.mkdir()
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY)
    with RawSession(proxy_argv("files", manifest, tmp_path / "j.db", [*fs_server, str(root)])) as s:
        s.handshake()
        s.call(1, "write_file", {"path": str(root / "new.txt"), "content": "x"})
        s.close()
        err = s.stderr_text()
    for line in s.lines:
        assert isinstance(json.loads(line), dict)
    ours = [ln for ln in err.splitlines() if ln.startswith("{")]
    assert ours and all(json.loads(ln)["name"] == "synartesis" for ln in ours)
    assert any(json.loads(ln)["msg"] == "run started" for ln in ours)
