"""`synartesis serve` against hostile or careless HTTP clients (adversarial review 30).

- F7: a Content-Type that only mentions json (``text/plain; x=json``) was taken as JSON;
- F8: frames waiting for a GET stream (a late answer whose POST's client left, notifications)
  were bounded by count only: ten thousand late answers of a large read is gigabytes kept;
- F9: no cap on sessions: each ``initialize`` started a server process that lives until DELETE
  or the idle timeout (30 min); ``--max-sessions`` (default 32) now answers 503;
- F10 (xfail, a design decision): a connection that never finishes its headers (no token
  needed) or its body is held for ever: off loopback, anyone who can reach the port can use up
  serve's file descriptors."""

from __future__ import annotations

import http.client
import json
import socket

import pytest
from test_serve_sessions import _INIT, _serve_kv

from synartesis.serve import app as serve_app
from synartesis.serve.app import ServeApp, ServeConfig, _Session


def _post_as(port: int, token: str, content_type: str) -> int:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("POST", "/servers/kv/mcp", json.dumps(_INIT), {
        "Authorization": f"Bearer {token}", "Content-Type": content_type,
        "Accept": "application/json, text/event-stream"})
    r = c.getresponse()
    r.read()
    return r.status


def test_only_a_json_content_type_is_json(tmp_path):
    proc, port, token = _serve_kv(tmp_path)
    try:
        assert _post_as(port, token, "text/plain; x=json") == 415
        assert _post_as(port, token, "application/jsonp") == 415
        assert _post_as(port, token, "application/json; charset=utf-8") == 200
    finally:
        proc.terminate()
        proc.wait(30)


def test_frames_waiting_for_a_get_stream_are_bounded_by_size_too():
    app = ServeApp(ServeConfig(token="t" * 43, servers=["kv"]), backend=None)
    session = _Session("s", "kv")
    big = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "x" * (1 << 20)}]}}).encode()
    for _ in range(200):  # 200 late answers of a 1 MiB read, no GET stream open
        app._route(session, big)
    kept = sum(len(f) for f in session.backlog)
    assert kept <= serve_app._BACKLOG_BYTES and session.backlog_bytes == kept
    assert session.backlog[-1] is big  # the newest kept
    small = b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'
    for _ in range(serve_app._BACKLOG + 5):
        app._route(session, small)
    assert len(session.backlog) == serve_app._BACKLOG


def test_serve_caps_the_sessions_it_opens(tmp_path):
    # F9: 40 initialize requests started 40 server processes, each living until DELETE or the
    # 30-minute idle timeout; the next initialize past --max-sessions gets 503 and Retry-After
    import http.client

    from test_serve_sessions import _init

    proc, port, token = _serve_kv(tmp_path, "--max-sessions", "2")
    try:
        first, _second = _init(port, token), _init(port, token)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        c.request("POST", "/servers/kv/mcp", json.dumps(_INIT), {
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        r = c.getresponse()
        text = r.read().decode()
        assert r.status == 503 and r.getheader("retry-after") and "--max-sessions 2" in text, (r.status, text)
        assert r.getheader("mcp-session-id") is None
        c.request("DELETE", "/servers/kv/mcp", headers={"Authorization": f"Bearer {token}", "Mcp-Session-Id": first})
        assert c.getresponse().status in (200, 204)
        assert _init(port, token)  # room again once one ended
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="F10: a connection that never finishes its headers is held for ever "
                   "(uvicorn has no header timeout; a limit_concurrency or a read timeout is a design decision)")
def test_a_connection_that_never_finishes_its_headers_is_closed(tmp_path):
    proc, port, token = _serve_kv(tmp_path)
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /servers/kv/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no token needed to get here
        s.settimeout(20)
        try:
            closed = s.recv(100) is not None
        except socket.timeout:
            closed = False
        s.close()
        assert closed
    finally:
        proc.terminate()
        proc.wait(30)
