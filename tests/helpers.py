"""Test helpers: run the real proxy as a subprocess, talk raw JSON-RPC or the mcp SDK client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FAKE_SERVER = [sys.executable, str(REPO / "tests" / "fake_server.py")]

FAKE_POLICY = """version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: readonly
  - match: "kv.put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
  - match: "kv.slow_put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
"""

# The filesystem server's reversible writes (the shipped policy has more; tests keep theirs small).
FS_POLICY = """version: 1
servers:
  files: {}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.list_*"
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"], refuse_when: ["\\ufffd"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
  - match: "files.edit_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"], refuse_when: ["\\ufffd"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
"""

# The memory server's compensable create (inverse from what the server says it created).
MEMORY_POLICY = """version: 1
servers:
  memory: {}
tools:
  - match: "memory.read_graph"
    class: readonly
  - match: "memory.create_entities"
    class: compensable
    inverse: {tool: memory.delete_entities, args: {entityNames: "$result.entities[].name"}}
"""


def synartesis_argv(*args: str) -> list[str]:
    """argv that runs this checkout's CLI."""
    return [sys.executable, "-m", "synartesis", *args]


def proxy_argv(server: str, manifest: Path, journal: Path, command: list[str], *extra: str) -> list[str]:
    return synartesis_argv("proxy", "--server", server, "--manifest", str(manifest), "--journal", str(journal),
                           *extra, "--", *command)


def files_proxy(tmp_path: Path, fs_server: list[str], policy: str = "version: 1\nservers:\n  files: {}\ntools: []\n"
                ) -> tuple[Path, list[str]]:
    """A root folder for the filesystem server and the argv of a proxy in front of it
    (journal ``j.db`` in ``tmp_path``); ``policy`` defaults to one holding every call."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(policy)
    return root, proxy_argv("files", manifest, tmp_path / "j.db", [*fs_server, str(root)])


def cli(*args: str, env: dict | None = None, cwd: str | Path | None = None, timeout: float = 120,
        input: str | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; return the completed process (text mode)."""
    return subprocess.run(synartesis_argv(*args), capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout, input=input)


class RawSession:
    """A subprocess spoken to with newline-delimited JSON-RPC, reading replies by id."""

    def __init__(self, argv: list[str], env: dict | None = None, cwd: str | Path | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd)
        self.lines: list[bytes] = []

    def send(self, obj: Any) -> None:
        assert self.proc.stdin is not None
        data = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 30) -> bytes:
        assert self.proc.stdout is not None
        import select
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    raise EOFError("the process closed its stdout")
                self.lines.append(line.rstrip(b"\n"))
                return line.rstrip(b"\n")
        raise TimeoutError("no line within timeout")

    def wait_for(self, mid: Any, timeout: float = 30) -> tuple[bytes, dict]:
        """Read lines until the response with ``id == mid``; returns (raw bytes, parsed)."""
        while True:
            line = self.read_line(timeout)
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == mid and "method" not in msg:
                return line, msg

    def request(self, mid: Any, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            body["params"] = params
        self.send(body)
        return self.wait_for(mid, timeout)[1]

    def handshake(self, name: str = "test-client", capabilities: dict | None = None) -> dict:
        init = self.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities or {},
                                              "clientInfo": {"name": name, "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def call(self, mid: Any, name: str, arguments: dict, timeout: float = 30) -> dict:
        return self.request(mid, "tools/call", {"name": name, "arguments": arguments}, timeout)["result"]

    def close(self, timeout: float = 15) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.stderr and not self.proc.stderr.closed and self.proc.poll() is not None:
                self._stderr = self.proc.stderr.read()
            for f in (self.proc.stdout, self.proc.stderr):
                if f:
                    f.close()

    _stderr: bytes = b""

    def stderr_text(self) -> str:
        """Everything the process wrote to stderr (after :meth:`close`)."""
        return self._stderr.decode("utf-8", "replace")

    def __enter__(self) -> "RawSession":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@asynccontextmanager
async def sdk_session(argv: list[str], env: dict | None = None, cwd: str | None = None):
    """The mcp SDK's own ClientSession over stdio, connected to ``argv``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(env or os.environ), cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    """The text blocks of an SDK CallToolResult or a raw result dict."""
    content = result.get("content") if isinstance(result, dict) else result.content
    parts = []
    for block in content or []:
        parts.append(block.get("text", "") if isinstance(block, dict) else getattr(block, "text", ""))
    return " ".join(parts)


def open_journal(path: Path):
    from synartesis.journal import Journal
    return Journal.open(path)
