"""`synartesis serve`'s HTTP side: every check happens before anything is forwarded, sessions
open, route and end as the Streamable HTTP transport says, and the mcp SDK's own HTTP client
works against it.

The backend here relays each session's frames to its own session of server-everything over
Streamable HTTP (the remote upstream): a real server behind a real transport, without the
tools/call pipeline, which the engine-backed tests cover.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx2
import pytest

import netkit
from synartesis.remote.http import HttpUpstream
from synartesis.serve.app import ServeConfig
from synartesis.serve.runner import Listen

TOKEN = "t" * 43
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "1"}}}


class RelayBackend:
    """Each MCP session gets its own upstream session of server-everything."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.fed: list[bytes] = []
        self.closed = 0
        self.opened = 0

    def open(self, server, send, ended):
        up = HttpUpstream(self.url, label=server)
        up.start(lambda raw, msg: send(raw), ended)
        self.opened += 1
        backend = self

        class Session:
            def feed(self, frame: bytes) -> None:
                backend.fed.append(frame)
                up.send(frame)

            def close(self, drain: float) -> None:
                backend.closed += 1
                up.close(grace=min(drain, 2.0))
        return Session()


@pytest.fixture
def everything():
    server = netkit.everything("streamableHttp")
    yield f"http://127.0.0.1:{server.port}/mcp"
    server.stop()


@pytest.fixture
def served(everything):
    backend = RelayBackend(everything)
    ready = threading.Event()
    where: dict = {}
    config = ServeConfig(token=TOKEN, servers=["ev"], max_body=1 << 16, idle_timeout=60)

    def on_ready(url: str) -> None:
        where["url"] = url
        ready.set()

    holder: dict = {}

    def main() -> None:
        import uvicorn
        from synartesis.serve import runner
        original = uvicorn.Server.run

        def run_no_signals(self, sockets=None):  # a thread cannot install signal handlers
            holder["server"] = self
            self.install_signal_handlers = lambda: None
            return original(self, sockets=sockets)
        uvicorn.Server.run = run_no_signals
        try:
            runner.run(config, backend, Listen("127.0.0.1", 0), on_ready)
        finally:
            uvicorn.Server.run = original
    t = threading.Thread(target=main, daemon=True)
    t.start()
    assert ready.wait(20)
    time.sleep(0.2)
    yield where["url"], backend, config
    server = holder.get("server")
    if server is not None:
        server.should_exit = True
    t.join(15)


def post(url, body, *, token=TOKEN, session=None, headers=None, timeout=20):
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if token:
        h["authorization"] = f"Bearer {token}"
    if session:
        h["mcp-session-id"] = session
    h.update(headers or {})
    return httpx2.post(url, content=body if isinstance(body, bytes) else json.dumps(body).encode(), headers=h,
                       timeout=timeout)


def events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_checks_come_before_anything_is_forwarded(served):
    base, backend, _ = served
    url = base + "/servers/ev/mcp"
    assert post(url, INIT, token=None).status_code == 401
    r = post(url, INIT, token="x" * 43)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert post(base + "/servers/nope/mcp", INIT).status_code == 404
    assert post(url, INIT, headers={"host": "evil.example"}).status_code == 403
    assert post(url, INIT, headers={"host": "evil.example:80"}).status_code == 403
    assert post(url, INIT, headers={"origin": "https://evil.example"}).status_code == 403
    assert post(url, b"x" * (1 << 17)).status_code == 413
    chunked = httpx2.post(url, content=iter([b"[" + b" " * (1 << 16), b"]"]), timeout=20, headers={
        "authorization": f"Bearer {TOKEN}", "content-type": "application/json",
        "accept": "application/json, text/event-stream"})
    assert chunked.status_code == 413
    assert httpx2.put(url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=20).status_code == 405
    assert backend.opened == 0 and backend.fed == []


def test_health_answers_without_a_token_but_not_to_a_foreign_host(served):
    base, _, _ = served
    r = httpx2.get(base + "/health", timeout=20)
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert httpx2.get(base + "/health", headers={"host": "evil.example"}, timeout=20).status_code == 403


def test_a_session_opens_at_initialize_answers_over_sse_and_ends_with_delete(served):
    base, backend, _ = served
    url = base + "/servers/ev/mcp"
    r = post(url, INIT)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    sid = r.headers["mcp-session-id"]
    assert len(sid) >= 32 and events(r.text)[-1]["result"]["serverInfo"]["name"] == "mcp-servers/everything"
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid).status_code == 202
    r = post(url, {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"message": "hi"}}}, session=sid)
    assert events(r.text)[-1]["result"]["content"][0]["text"] == "Echo: hi"
    assert post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).status_code == 400  # no session id
    assert post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session="nope").status_code == 404
    d = httpx2.delete(url, headers={"authorization": f"Bearer {TOKEN}", "mcp-session-id": sid}, timeout=20)
    assert d.status_code == 200 and backend.closed == 1
    assert post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session=sid).status_code == 404


def test_an_empty_batch_is_answered_with_one_error_object_and_nothing_is_forwarded(served):
    """JSON-RPC 2.0 §6: an empty array is answered with a single Response object, not an array
    (new user round 31, 10g); it was fed to the session, its answer lost on the GET stream."""
    base, backend, _ = served
    url = base + "/servers/ev/mcp"
    sid = post(url, INIT).headers["mcp-session-id"]
    fed = len(backend.fed)
    for session in (sid, None):
        r = post(url, b"[ ]", session=session)
        assert r.status_code == 400 and r.headers["content-type"].startswith("application/json"), (r.status_code, r.text)
        body = r.json()
        assert isinstance(body, dict) and body["id"] is None and body["error"]["code"] == -32600, body
    assert len(backend.fed) == fed


def test_the_sdk_http_client_works_against_serve_with_sampling(served):
    base, _, _ = served

    async def main() -> str:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import CreateMessageResult, TextContent

        async def sampling(context, params):
            return CreateMessageResult(role="assistant", content=TextContent(type="text", text="from-sampler"),
                                       model="m")
        client = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with client, streamable_http_client(base + "/servers/ev/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write, sampling_callback=sampling) as session:
                await session.initialize()
                tools = await session.list_tools()
                assert any(t.name == "echo" for t in tools.tools)
                result = await session.call_tool("trigger-sampling-request", {"prompt": "p", "maxTokens": 5})
                return json.dumps(result.model_dump(mode="json"))
    assert "from-sampler" in asyncio.run(asyncio.wait_for(main(), 60))


def test_idle_sessions_are_closed(served):
    base, backend, config = served
    config.idle_timeout = 1.0
    url = base + "/servers/ev/mcp"
    sid = post(url, INIT).headers["mcp-session-id"]
    for _ in range(100):
        if backend.closed:
            break
        time.sleep(0.1)
    assert backend.closed == 1
    assert post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session=sid).status_code == 404
