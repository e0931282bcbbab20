"""The Streamable HTTP / SSE upstream against real servers: server-everything in its
``streamableHttp`` and ``sse`` modes, and the toy CRM over HTTP (SDK server, bearer token).

A TCP relay (tests/netkit.py) stands between upstream and server where a test needs to see
the bytes on the wire or drop a connection on cue.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time

import netkit
import pytest

from synartesis.proxy.transport import RequestFailed
from synartesis.remote.http import HttpUpstream, is_unknown_answer

INIT = {"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}, "roots": {}},
        "clientInfo": {"name": "test", "version": "1"}}
TOKEN = "crm-test-token-0123456789abcdef"


class Inbox:
    """on_message/on_close recorder."""

    def __init__(self) -> None:
        self.frames: queue.Queue = queue.Queue()
        self.closed = threading.Event()

    def on_message(self, raw: bytes, msg) -> None:
        self.frames.put((raw, netkit.plain(msg)))

    def on_close(self) -> None:
        self.closed.set()

    def wait(self, pred, timeout: float = 20.0):
        end = time.monotonic() + timeout
        seen = []
        while time.monotonic() < end:
            try:
                raw, msg = self.frames.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            seen.append(msg)
            if pred(msg):
                return raw, msg
        raise AssertionError(f"no matching frame; saw {[m if not isinstance(m, dict) else m.get('method') or m.get('id') for m in seen]}")


def answer_to(mid):
    return lambda m: isinstance(m, dict) and m.get("id") == mid and "method" not in m


@pytest.fixture
def everything_http():
    server = netkit.everything("streamableHttp")
    yield server
    server.stop()


@pytest.fixture
def everything_sse():
    server = netkit.everything("sse")
    yield server
    server.stop()


@pytest.fixture
def crm(tmp_path):
    server = netkit.crm_http(tmp_path / "crm.json", TOKEN)
    yield server
    server.stop()


@pytest.fixture
def upstreams():
    made: list[HttpUpstream] = []

    def make(url: str, **kw) -> tuple[HttpUpstream, Inbox]:
        inbox = Inbox()
        up = HttpUpstream(url, label=kw.pop("label", "remote"), **kw)
        up.start(inbox.on_message, inbox.on_close)
        made.append(up)
        return up, inbox
    yield make
    for up in made:
        up.close(grace=1.0)


def handshake(up: HttpUpstream) -> dict:
    result = up.request("initialize", INIT, timeout=20)
    up.notify("notifications/initialized")
    return result


def test_streamable_http_handshake_opens_a_session_and_calls_tools(everything_http, upstreams):
    up, _ = upstreams(f"http://127.0.0.1:{everything_http.port}/mcp")
    init = handshake(up)
    assert init["serverInfo"]["name"] == "mcp-servers/everything"
    assert up.mode == "http" and up.session_id
    names = {t["name"] for t in up.request("tools/list", {}, timeout=20)["tools"]}
    assert {"echo", "trigger-sampling-request", "get-sum"} <= names
    result = up.request("tools/call", {"name": "echo", "arguments": {"message": "héllo"}}, timeout=20)
    assert result["content"][0]["text"] == "Echo: héllo"


def test_client_frames_go_out_as_their_bytes_and_answers_come_back_as_the_servers(everything_http, upstreams):
    relay = netkit.Relay(everything_http.port)
    try:
        up, inbox = upstreams(f"http://127.0.0.1:{relay.port}/mcp")
        up.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
        inbox.wait(answer_to(1))
        up.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        odd = b'{ "jsonrpc" : "2.0", "id" : "x-\\u00e9", "method":"tools/call", "params":{"name":"get-sum","arguments":{"a":2,"b":3}}}'
        up.send(odd)
        raw, msg = inbox.wait(answer_to("x-é"))
        assert odd in relay.up  # the client's bytes, spacing and escapes and all
        assert b"data: " + raw in relay.down  # the server's bytes, as its SSE event carried them
        assert "5" in json.dumps(msg["result"])
    finally:
        relay.close()


def test_session_id_and_protocol_version_ride_on_every_request_after_the_handshake(everything_http, upstreams):
    relay = netkit.Relay(everything_http.port)
    try:
        up, _ = upstreams(f"http://127.0.0.1:{relay.port}/mcp")
        handshake(up)
        up.request("tools/call", {"name": "echo", "arguments": {"message": "x"}}, timeout=20)
        sid = up.session_id
        up.close()
        requests = [m.group(0) for m in re.finditer(rb"(?:POST|GET|DELETE) /mcp HTTP/1\.1\r\n.*?\r\n\r\n",
                                                   bytes(relay.up), re.DOTALL)]
        first, *later = requests
        assert b"mcp-session-id" not in first.lower() and b"mcp-protocol-version" not in first.lower()
        assert b"accept: application/json, text/event-stream" in first.lower()
        for head in later:
            low = head.lower()
            assert f"mcp-session-id: {sid}".encode() in low, head
            assert b"mcp-protocol-version: 2025-06-18" in low, head
        assert any(h.startswith(b"GET") for h in later)  # the server→client stream
        assert later[-1].startswith(b"DELETE")  # the session is ended at close
    finally:
        relay.close()


def test_server_to_client_requests_and_notifications_reach_on_message(everything_http, upstreams):
    up, inbox = upstreams(f"http://127.0.0.1:{everything_http.port}/mcp")
    up.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
    inbox.wait(answer_to(1))
    up.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    up.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "trigger-sampling-request", "arguments": {"prompt": "hi", "maxTokens": 5}}}).encode())
    _, sampling = inbox.wait(lambda m: isinstance(m, dict) and m.get("method") == "sampling/createMessage")
    up.send(json.dumps({"jsonrpc": "2.0", "id": sampling["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "sampled-text"}, "model": "m"}}).encode())
    _, done = inbox.wait(answer_to(2))
    assert "sampled-text" in json.dumps(done)
    # a notification with no request behind it comes on the GET stream
    up.send(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"toggle-simulated-logging","arguments":{}}}')
    inbox.wait(lambda m: isinstance(m, dict) and m.get("method") == "notifications/message")


def test_sse_transport_when_asked_and_as_the_fallback(everything_sse, upstreams):
    for transport in ("sse", "auto"):
        up, inbox = upstreams(f"http://127.0.0.1:{everything_sse.port}/sse", transport=transport)
        handshake(up)
        assert up.mode == "sse"
        assert up.request("tools/call", {"name": "echo", "arguments": {"message": transport}},
                          timeout=20)["content"][0]["text"] == f"Echo: {transport}"
        up.send(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"p","maxTokens":3}}}')
        _, req = inbox.wait(lambda m: isinstance(m, dict) and m.get("method") == "sampling/createMessage")
        up.send(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}}).encode())
        inbox.wait(answer_to(9))


def test_a_broken_answer_stream_is_resumed_with_last_event_id(everything_http, upstreams):
    relay = netkit.Relay(everything_http.port)
    try:
        up, inbox = upstreams(f"http://127.0.0.1:{relay.port}/mcp")
        handshake(up)
        up.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6},
            "_meta": {"progressToken": "p1"}}}).encode())
        inbox.wait(lambda m: isinstance(m, dict) and m.get("method") == "notifications/progress")
        relay.cut()  # the answer's stream (and the GET stream) break mid-way
        _, done = inbox.wait(answer_to(5), timeout=30)
        assert "result" in done and not is_unknown_answer(done)
        assert b"last-event-id:" in bytes(relay.up).lower()
    finally:
        relay.close()


def test_nothing_listening_means_unsent(upstreams):
    up, inbox = upstreams(f"http://127.0.0.1:{netkit.free_port()}/mcp")
    with pytest.raises(RequestFailed) as err:
        up.request("initialize", INIT, timeout=20)
    assert err.value.kind == "unsent" and "could not connect" in err.value.message
    up.send(b'{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"x","arguments":{}}}')
    _, msg = inbox.wait(answer_to("c1"))
    assert msg["error"]["data"]["synartesis"]["outcome"] == "not sent" and not is_unknown_answer(msg)
    assert "could not connect" in up.describe_failure("failed")


def test_an_answer_lost_after_the_request_was_sent_is_unknown(crm, upstreams):
    relay = netkit.Relay(crm.port)
    try:
        up, inbox = upstreams(f"http://127.0.0.1:{relay.port}/mcp", headers={"Authorization": f"Bearer {TOKEN}"})
        handshake(up)
        relay.mode = "swallow"
        up.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"update_customer","arguments":{"id":"c_001","plan":"free"}}}')
        _, msg = inbox.wait(answer_to(7))
        assert is_unknown_answer(msg), msg
        assert "unknown" in msg["error"]["message"]
        with pytest.raises(RequestFailed) as err:
            up.request("tools/call", {"name": "update_customer", "arguments": {"id": "c_002", "plan": "free"}},
                       timeout=20)
        assert err.value.kind == "closed" and err.value.maybe_applied
        relay.mode = "pass"
        # it did happen: the server applied both while the answers were lost
        got = up.request("tools/call", {"name": "get_customer", "arguments": {"id": "c_001"}}, timeout=20)
        assert got["structuredContent"]["plan"] == "free"
    finally:
        relay.close()


def test_a_bearer_token_from_the_entry_is_sent_and_a_wrong_one_is_refused_clearly(crm, upstreams):
    good, _ = upstreams(crm.url, headers={"Authorization": f"Bearer {TOKEN}"}, label="crm")
    assert handshake(good)["serverInfo"]["name"] == "toy-crm"
    bad, inbox = upstreams(crm.url, headers={"Authorization": "Bearer wrong"}, label="crm")
    bad.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
    _, msg = inbox.wait(answer_to(1))
    assert "refused the credentials" in msg["error"]["message"] and "wrong" not in json.dumps(msg)
    none, inbox = upstreams(crm.url, label="crm")
    none.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
    _, msg = inbox.wait(answer_to(1))
    assert "synartesis login crm" in msg["error"]["message"]


def test_a_session_the_server_forgot_is_reopened_and_the_request_sent_again(tmp_path, upstreams):
    state = tmp_path / "crm.json"
    first = netkit.crm_http(state, TOKEN)
    port = first.port
    try:
        up, inbox = upstreams(first.url, headers={"Authorization": f"Bearer {TOKEN}"})
        up.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode())
        inbox.wait(answer_to(1))
        up.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        old = up.session_id
        first.stop()
        second = netkit.crm_http(state, TOKEN, port=port)
        try:
            up.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer","arguments":{"id":"c_002"}}}')
            _, msg = inbox.wait(answer_to(2))
            assert msg["result"]["structuredContent"]["name"] == "Grace Hopper"
            assert up.session_id and up.session_id != old
        finally:
            second.stop()
    finally:
        first.stop()


def test_tls_is_verified_and_https_proxy_and_no_proxy_are_honoured(tmp_path, upstreams, monkeypatch):
    certs = netkit.make_certs(tmp_path / "tls")
    server = netkit.crm_http(tmp_path / "crm.json", TOKEN,
                             extra=["--tls-cert", str(certs.cert), "--tls-key", str(certs.key)])
    proxy = netkit.ConnectProxy()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        assert server.url.startswith("https://")
        for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
                    "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
            monkeypatch.delenv(var, raising=False)
        untrusted, _ = upstreams(server.url, headers=auth)
        with pytest.raises(RequestFailed) as err:
            untrusted.request("initialize", INIT, timeout=20)
        assert err.value.kind == "unsent" and "certificate" in err.value.message.lower()
        monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        via_proxy, _ = upstreams(server.url, headers=auth)
        assert handshake(via_proxy)["serverInfo"]["name"] == "toy-crm"
        via_proxy.close()
        assert proxy.targets and set(proxy.targets) == {f"CONNECT 127.0.0.1:{server.port}"}
        seen = len(proxy.targets)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct, _ = upstreams(server.url, headers=auth)
        assert handshake(direct)["serverInfo"]["name"] == "toy-crm"
        assert len(proxy.targets) == seen
    finally:
        proxy.close()
        server.stop()


def test_close_is_idempotent_calls_on_close_once_and_refuses_later_frames(everything_http, upstreams):
    up, inbox = upstreams(f"http://127.0.0.1:{everything_http.port}/mcp")
    handshake(up)
    assert up.close() == 0 and up.close() == 0
    assert inbox.closed.is_set()
    with pytest.raises(RequestFailed) as err:
        up.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert err.value.kind == "unsent"
    assert not any(t.name.startswith("http-remote") and t.is_alive() for t in threading.enumerate())


def test_frames_can_be_sent_from_many_threads_at_once(everything_http, upstreams):
    up, _ = upstreams(f"http://127.0.0.1:{everything_http.port}/mcp")
    handshake(up)
    results: list = []

    def work(i: int) -> None:
        for j in range(5):
            r = up.request("tools/call", {"name": "get-sum", "arguments": {"a": i, "b": j}}, timeout=30)
            results.append((i + j, r))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 40
    for total, r in results:
        assert str(total) in json.dumps(r)



