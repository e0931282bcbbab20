"""Helpers for the window's tests: a scripted model endpoint (the one fake: no real model can be
reached from these machines) that streams the real wire formats, and the window itself started
as a subprocess (``synartesis desktop --no-browser``) with every process reaped.

The scripted endpoint speaks both OpenAI-compatible ``POST /v1/chat/completions`` and Anthropic
``POST /v1/messages``, streamed as server-sent events exactly as those APIs frame them. Each
request takes the next turn of the script: text (sent in several chunks) and tool calls (their
arguments sent in fragments). A tool named by suffix (``"write_file"``) is resolved against the
tools the request offered (``files__write_file``), so the script does not depend on naming.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
FS_ENTRY = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    step = max(1, len(text) // n)
    return [text[i:i + step] for i in range(0, len(text), step)]


class ScriptedModel:
    """A model endpoint on 127.0.0.1 that answers from a script.

    ``turns``: a list of ``{"text": str, "tool_calls": [{"name", "arguments" | "raw_arguments"}],
    "status": int, "error": dict, "error_event": dict, "wait": threading.Event}``; each request
    takes the next one (the last repeats).
    ``requests``: every request body received, with its headers (``_headers``).
    """

    def __init__(self, turns: list[dict], pace: float = 0.005) -> None:
        self.turns = list(turns)
        self.pace = pace  # seconds between stream frames (0 for benchmarks)
        self.requests: list[dict] = []
        self.times: list[float] = []  # time.perf_counter() at each request's arrival
        self._n = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                outer.times.append(time.perf_counter())
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_headers"] = {k.lower(): v for k, v in self.headers.items()}
                body["_path"] = self.path
                with outer._lock:
                    outer.requests.append(body)
                    turn = outer.turns[min(outer._n, len(outer.turns) - 1)]
                    outer._n += 1
                if turn.get("status"):
                    data = json.dumps(turn.get("error") or {"error": {"message": "scripted failure"}}).encode()
                    self.send_response(turn["status"])
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    if self.path.endswith("/messages"):
                        outer._anthropic(self, body, turn)
                    else:
                        outer._openai(self, body, turn)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _resolve(name: str, body: dict) -> str:
        offered = [t.get("function", t).get("name") for t in body.get("tools") or []]
        if name in offered:
            return name
        hits = [o for o in offered if o and o.endswith("__" + name)]
        return hits[0] if hits else name

    def _send(self, handler: BaseHTTPRequestHandler, data: str, event: str | None = None) -> None:
        frame = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
        handler.wfile.write(frame.encode())
        handler.wfile.flush()
        if self.pace:
            time.sleep(self.pace)

    def _openai(self, h: BaseHTTPRequestHandler, body: dict, turn: dict) -> None:
        base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1, "model": body.get("model")}

        def chunk(delta: dict, finish: str | None = None) -> None:
            self._send(h, json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))

        chunk({"role": "assistant", "content": ""})
        for piece in _pieces(turn.get("text", "")):
            chunk({"content": piece})
        if turn.get("wait") is not None:
            turn["wait"].wait(30)
        calls = turn.get("tool_calls") or []
        for i, call in enumerate(calls):
            args = call["raw_arguments"] if "raw_arguments" in call else json.dumps(call.get("arguments", {}))
            chunk({"tool_calls": [{"index": i, "id": f"call_{self._n}_{i}", "type": "function",
                                   "function": {"name": self._resolve(call["name"], body), "arguments": ""}}]})
            for piece in _pieces(args):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        chunk({}, "tool_calls" if calls else "stop")
        self._send(h, "[DONE]")

    def _anthropic(self, h: BaseHTTPRequestHandler, body: dict, turn: dict) -> None:
        self._send(h, json.dumps({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "content": [], "model": body.get("model"),
            "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 0}}}), "message_start")
        idx = 0
        if turn.get("text"):
            self._send(h, json.dumps({"type": "content_block_start", "index": idx,
                                      "content_block": {"type": "text", "text": ""}}), "content_block_start")
            self._send(h, json.dumps({"type": "ping"}), "ping")
            for piece in _pieces(turn["text"]):
                self._send(h, json.dumps({"type": "content_block_delta", "index": idx,
                                          "delta": {"type": "text_delta", "text": piece}}), "content_block_delta")
            self._send(h, json.dumps({"type": "content_block_stop", "index": idx}), "content_block_stop")
            idx += 1
        if turn.get("error_event"):
            self._send(h, json.dumps({"type": "error", "error": turn["error_event"]}), "error")
            return
        calls = turn.get("tool_calls") or []
        for call in calls:
            self._send(h, json.dumps({"type": "content_block_start", "index": idx, "content_block": {
                "type": "tool_use", "id": f"toolu_{self._n}_{idx}", "name": self._resolve(call["name"], body),
                "input": {}}}), "content_block_start")
            for piece in _pieces(json.dumps(call.get("arguments", {}))):
                self._send(h, json.dumps({"type": "content_block_delta", "index": idx,
                                          "delta": {"type": "input_json_delta", "partial_json": piece}}),
                           "content_block_delta")
            self._send(h, json.dumps({"type": "content_block_stop", "index": idx}), "content_block_stop")
            idx += 1
        self._send(h, json.dumps({"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn"},
                                  "usage": {"output_tokens": 5}}), "message_delta")
        self._send(h, json.dumps({"type": "message_stop"}), "message_stop")


def tool_messages(request: dict) -> list[str]:
    """The tool results a chat-completions request carried back to the model, in order."""
    return [m["content"] for m in request.get("messages", []) if m.get("role") == "tool"]


FS_POLICY_SERVER = "files"
MEMORY_ENTRY = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def write_shipped_policy(home: Path, servers: dict[str, tuple[str, list[str]]]) -> Path:
    """``$SYNARTESIS_HOME/synartesis.yaml`` from shipped policies, the way ``synartesis init``
    writes them (nothing started): ``{name: (shipped policy id, command line)}``."""
    import yaml
    policy: dict = {"version": 1, "servers": {}, "tools": []}
    for name, (pid, argv) in servers.items():
        shipped = yaml.safe_load((REPO / "policies" / f"{pid}.yaml").read_text())
        spec = shipped["servers"][pid]
        spec.update(command=argv[0], args=argv[1:])
        policy["servers"][name] = spec
        for rule in shipped["tools"]:
            policy["tools"].append(json.loads(json.dumps(rule).replace(f'"{pid}.', f'"{name}.')))
    path = home / ".synartesis" / "synartesis.yaml"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


def write_fs_policy(home: Path, root: Path) -> Path:
    """The shipped filesystem policy for a server named ``files`` serving ``root``."""
    return write_shipped_policy(home, {FS_POLICY_SERVER: ("filesystem", ["node", str(FS_ENTRY), str(root)])})


def start(argv: list[str], **kwargs: Any) -> subprocess.Popen:
    """Start a process in its own session: inside a test through ``helpers.spawn`` (registered,
    so the ``procs`` fixture reaps it), outside one (the benchmark) as a plain Popen."""
    import helpers
    if helpers._current is not None:
        return helpers.spawn(argv, **kwargs)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen(argv, start_new_session=True, **kwargs)


class Desktop:
    """``synartesis desktop --no-browser`` as a subprocess; ``url`` (with the token), ``base``,
    and an httpx client that has traded the token for the cookie."""

    def __init__(self, *args: str, env: dict | None = None, cwd: str | Path | None = None) -> None:
        self.proc = start([sys.executable, "-m", "synartesis", "desktop", "--no-browser", *args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or dict(os.environ), cwd=cwd)
        self.lines: list[str] = []
        self.url = self._wait_url()
        m = re.match(r"(http://[^/]+)/\?token=(\S+)", self.url)
        assert m, self.url
        self.base, self.token = m.group(1), m.group(2)
        self.client = httpx.Client(base_url=self.base, timeout=60, follow_redirects=True)
        r = self.client.get(self.url)
        assert r.status_code == 200, r.text

    def _wait_url(self, timeout: float = 60) -> str:
        assert self.proc.stdout is not None
        end = time.monotonic() + timeout
        import select
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"desktop exited {self.proc.returncode}: {self.proc.stderr.read() if self.proc.stderr else ''}")
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                self.lines.append(line)
                m = re.search(r"(http://\S+/\?token=\S+)", line)
                if m:
                    return m.group(1)
        raise AssertionError("synartesis desktop printed no address")

    # -- API ---------------------------------------------------------------------------------
    def get(self, path: str) -> Any:
        r = self.client.get(path)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def post(self, path: str, body: dict | None = None, expect: int | tuple = (200, 201, 202)) -> Any:
        r = self.client.post(path, json=body or {}, headers={"origin": self.base})
        assert r.status_code in ((expect,) if isinstance(expect, int) else expect), (path, r.status_code, r.text)
        return r.json()

    def put(self, path: str, body: dict) -> Any:
        r = self.client.put(path, json=body, headers={"origin": self.base})
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def wait(self, cid: str, pred, timeout: float = 60) -> dict:
        """Poll the conversation until ``pred(conv)``; returns it."""
        end = time.monotonic() + timeout
        conv = None
        while time.monotonic() < end:
            conv = self.get(f"/api/conversations/{cid}")
            if pred(conv):
                return conv
            time.sleep(0.1)
        raise AssertionError(f"timed out; last state: {json.dumps(conv, indent=1)[:4000]}")

    def stop(self, timeout: float = 20) -> tuple[int, str]:
        """SIGINT (Ctrl+C), then wait; kill the group if it hangs. Returns (code, stderr).
        Calling it again returns the same."""
        if getattr(self, "_stopped", None) is not None:
            return self._stopped
        self.client.close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
        self._stopped = (self.proc.returncode, err)
        return self._stopped


def cards(conv: dict) -> list[dict]:
    """The conversation's cards in transcript order."""
    return [conv["cards"][i["card"]] for i in conv["items"] if i["kind"] == "card"]
