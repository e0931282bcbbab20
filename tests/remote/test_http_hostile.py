"""The upstream against servers that misbehave on cue (redirects, broken answers, huge error
bodies, foreign ids) — a small stdlib server stands in, since no real server misbehaves on
demand — and the 2026-07-28 request headers against the CRM (the mcp SDK's server checks
them)."""

from __future__ import annotations

import http.server
import json
import queue
import threading

import netkit
import pytest

from synartesis.proxy.transport import RequestFailed
from synartesis.remote.http import UNKNOWN_CODE, HttpUpstream, is_unknown_answer


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    other_port = 0
    seen: list = []

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", ctype: str = "application/json", headers: dict | None = None):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Hostile.seen.append((self.path, body))
        msg = json.loads(body)
        mid = msg.get("id")
        ok = json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"path": self.path}}).encode()
        path = self.path
        if path == "/307":
            self._send(307, headers={"location": "/ok"})
        elif path == "/302":
            self._send(302, headers={"location": "/ok"})
        elif path == "/bad-location":
            self._send(307, headers={"location": "http://[::1/x"})
        elif path == "/cross":
            self._send(307, headers={"location": f"http://127.0.0.1:{Hostile.other_port}/ok"})
        elif path == "/slow":
            threading.Event().wait(0.8)
            self._send(200, ok)
        elif path == "/ok":
            self._send(200, ok)
        elif path == "/not-jsonrpc":
            self._send(200, b'{"hello": 1}')
        elif path == "/err500json":
            self._send(500, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad params"}}')
        elif path == "/err500":
            self._send(500)
        elif path == "/err400":
            self._send(400, b"bad thing", "text/plain")
        elif path == "/huge":
            self._send(400, b"x" * (5 << 20), "text/plain")
        elif path == "/html":
            self._send(200, b"<html>login page</html>", "text/html")
        elif path == "/pretty":
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"a": [1, 2]}}, indent=2).encode())
        elif path == "/sse-odd":
            foreign = json.dumps({"jsonrpc": "2.0", "id": "syn-deadbeef-1", "result": {}}).encode()
            events = b"data: not json\n\n" + b"data: " + foreign + b"\n\n" + b"event: other\ndata: {}\n\n" \
                + b"data: " + ok + b"\n\n"
            self._send(200, events, "text/event-stream")
        else:
            self._send(404)


@pytest.fixture(scope="module")
def hostile():
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    Hostile.other_port = servers[1].server_address[1]
    yield f"http://127.0.0.1:{servers[0].server_address[1]}"
    for s in servers:
        s.shutdown()
        s.server_close()


def ask(base: str, path: str, mid=1):
    got: queue.Queue = queue.Queue()
    up = HttpUpstream(base + path, label="odd", transport="http")
    up.start(lambda raw, msg: got.put((raw, netkit.plain(msg))), None)
    try:
        up.send(json.dumps({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
                            "params": {"name": "t", "arguments": {}}}).encode())
        frames = []
        while True:
            raw, msg = got.get(timeout=20)
            frames.append((raw, msg))
            if isinstance(msg, dict) and msg.get("id") == mid:
                return frames, up.describe_failure("x")
    finally:
        up.close(grace=0.5)


def test_a_307_within_the_origin_is_followed_with_its_body(hostile):
    frames, _ = ask(hostile, "/307")
    assert frames[-1][1]["result"]["path"] == "/ok"
    assert [p for p, b in Hostile.seen[-2:]] == ["/307", "/ok"] and Hostile.seen[-1][1] == Hostile.seen[-2][1]


@pytest.mark.parametrize("path,why", [("/302", "not followed"), ("/cross", "another origin")])
def test_redirects_that_change_the_method_or_the_origin_are_not_followed(hostile, path, why):
    before = len(Hostile.seen)
    frames, _ = ask(hostile, path)
    msg = frames[-1][1]
    assert why in msg["error"]["message"] and msg["error"]["data"]["synartesis"]["outcome"] == "not sent"
    assert [p for p, _ in Hostile.seen[before:]] == [path]


@pytest.mark.parametrize("path,why", [("/bad-location", "unparsable location"), ("/\r\nx", "bad URL")])
def test_an_unparsable_url_or_redirect_location_is_answered_not_sent_never_left_waiting(hostile, path, why):
    # a ${VAR} URL that expands to a line break, or a server's 307 to a Location that does not parse
    frames, _ = ask(hostile, path)
    msg = frames[-1][1]
    assert why in msg["error"]["message"] and msg["error"]["data"]["synartesis"]["outcome"] == "not sent"


@pytest.mark.parametrize("path", ["/not-jsonrpc", "/err500", "/html"])
def test_an_answer_that_does_not_answer_is_unknown(hostile, path):
    frames, _ = ask(hostile, path)
    assert is_unknown_answer(frames[-1][1]) and frames[-1][1]["error"]["code"] == UNKNOWN_CODE


def test_a_json_rpc_error_in_a_5xx_body_is_the_answer_with_its_id_put_back(hostile):
    frames, _ = ask(hostile, "/err500json", mid="r-7")
    msg = frames[-1][1]
    assert msg["id"] == "r-7" and msg["error"] == {"code": -32602, "message": "bad params"}


def test_a_4xx_is_not_sent_and_a_huge_error_body_is_capped(hostile):
    frames, problem = ask(hostile, "/err400")
    assert "HTTP 400" in frames[-1][1]["error"]["message"] and "bad thing" in frames[-1][1]["error"]["message"]
    assert "HTTP 400" in problem
    frames, _ = ask(hostile, "/huge")
    assert len(frames[-1][0]) < 2000


def test_a_pretty_printed_answer_becomes_one_frame_with_the_same_value(hostile):
    frames, _ = ask(hostile, "/pretty")
    raw, msg = frames[-1]
    assert b"\n" not in raw and msg["result"] == {"a": [1, 2]}


def test_odd_events_are_delivered_as_is(hostile):
    frames, _ = ask(hostile, "/sse-odd")
    raws = [r for r, _ in frames]
    assert raws[0] == b"not json" and frames[0][1] is None
    assert b"syn-deadbeef-1" in raws[1]  # not one of ours: the client's business
    assert frames[-1][1]["result"]["path"] == "/sse-odd" and len(frames) == 3


def test_a_late_answer_to_our_own_timed_out_request_is_never_forwarded(hostile):
    got: queue.Queue = queue.Queue()
    up = HttpUpstream(hostile + "/slow", label="odd", transport="http")
    up.start(lambda raw, msg: got.put(raw), None)
    try:
        with pytest.raises(RequestFailed) as err:
            up.request("tools/call", {"name": "t", "arguments": {}}, timeout=0.3)
        assert err.value.kind == "timeout"
        threading.Event().wait(1.5)  # the answer arrives after the wait gave up
        assert got.empty()
    finally:
        up.close(grace=0.5)


def test_2026_requests_carry_method_and_name_headers_the_sdk_server_checks(tmp_path):
    token = "crm-token-0123456789abcdef"
    crm = netkit.crm_http(tmp_path / "crm.json", token)
    relay = netkit.Relay(crm.port)
    got: queue.Queue = queue.Queue()
    up = HttpUpstream(f"http://127.0.0.1:{relay.port}/mcp", label="crm", headers={"Authorization": f"Bearer {token}"})
    up.start(lambda raw, msg: got.put(netkit.plain(msg)), None)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    try:
        up.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                            "params": {"_meta": meta}}).encode())
        assert "2026-07-28" in got.get(timeout=20)["result"]["supportedVersions"]
        up.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "get_customer", "arguments": {"id": "c_002"}, "_meta": meta}}).encode())
        msg = got.get(timeout=20)
        assert msg["result"]["structuredContent"]["name"] == "Grace Hopper"
        wire = bytes(relay.up).lower()
        assert b"mcp-method: tools/call" in wire and b"mcp-name: get_customer" in wire
        assert b"mcp-protocol-version: 2026-07-28" in wire and up.session_id is None
    finally:
        up.close()
        relay.close()
        crm.stop()


def test_request_from_the_delivery_thread_is_refused_not_deadlocked(hostile):
    errors: list = []
    up = HttpUpstream(hostile + "/ok", label="odd", transport="http")

    def on_message(raw, msg) -> None:
        try:
            up.request("ping", timeout=1)
        except RuntimeError as exc:
            errors.append(str(exc))
    up.start(on_message, None)
    try:
        up.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}')
        for _ in range(100):
            if errors:
                break
            threading.Event().wait(0.05)
        assert errors and "would wait for ever" in errors[0]
        assert up.request("ping", timeout=20) == {"path": "/ok"}  # from any other thread it works
    finally:
        up.close(grace=0.5)
