"""`synartesis serve` against a dying server and a hostile client (adversarial review, findings
2, 11, 12): one agent session per MCP session, an answered ``initialize`` when the server dies
at start-up, and a refused POST that reuses a JSON-RPC id still in flight."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers import FAKE_POLICY, FAKE_SERVER, cli, spawn

_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "adv", "version": "0"}}}


def _start(tmp_path: Path, policy: str, name: str, *extra: str) -> tuple[subprocess.Popen, int, str]:
    (tmp_path / "synartesis.yaml").write_text(policy)
    proc = spawn([sys.executable, "-m", "synartesis", "serve", "--manifest", str(tmp_path / "synartesis.yaml"),
                  "--journal", str(tmp_path / "j.db"), "--port", "0", *extra],
                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = None
    for _ in range(20):
        line = proc.stdout.readline()
        if f"/servers/{name}/mcp" in line:
            port = int(line.split("127.0.0.1:")[1].split("/")[0])
            break
    assert port, "serve did not start"
    token = (Path(os.environ["SYNARTESIS_HOME"]) / "serve-token").read_text().strip()
    return proc, port, token


def _serve_kv(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, int, str]:
    state = tmp_path / "kv.json"
    state.write_text('{"k0": "v0"}')
    policy = FAKE_POLICY.replace("  kv: {}\n", "  kv:\n    command: %s\n    args: %s\n" % (
        json.dumps(FAKE_SERVER[0]), json.dumps([FAKE_SERVER[1], "--state", str(state)])))
    return _start(tmp_path, policy, "kv", *extra)


def _post(port: int, token: str, body: dict, sid: str | None = None, path: str = "/servers/kv/mcp",
          timeout: float = 20) -> tuple[int, str | None, str]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream"}
    if sid:
        h["Mcp-Session-Id"] = sid
    c.request("POST", path, json.dumps(body), h)
    r = c.getresponse()
    return r.status, r.getheader("mcp-session-id"), r.read().decode()


def _init(port: int, token: str, name: str = "adv") -> str:
    body = json.loads(json.dumps(_INIT))
    body["params"]["clientInfo"]["name"] = name
    status, sid, _ = _post(port, token, body)
    assert status == 200 and sid
    _post(port, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def test_a_post_reusing_a_json_rpc_id_still_in_flight_is_refused_at_once(tmp_path):
    # Before: the second POST got the first call's answer and the first POST waited for ever.
    _, port, token = _serve_kv(tmp_path)
    sid = _init(port, token)
    out: dict = {}

    def slow() -> None:
        try:
            out["a"] = _post(port, token, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "slow_put", "arguments": {"key": "k0", "value": "A", "delay": 2}}}, sid, timeout=12)
        except Exception as exc:  # noqa: BLE001 - the assertion names it
            out["a"] = repr(exc)
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.5)
    out["b"] = _post(port, token, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "get", "arguments": {"key": "k0"}}}, sid, timeout=12)
    t.join(20)
    assert isinstance(out["a"], tuple), out
    assert '"ok"' in out["a"][2], out["a"]  # the first call gets its own answer
    status, _, text = out["b"]
    assert status == 400 and json.loads(text)["error"]["code"] == -32600, out["b"]
    assert "7" in json.loads(text)["error"]["message"]


def test_serve_answers_initialize_when_the_server_exits_at_start_up(tmp_path):
    # Before: "session closed" came before "session opened", and the POST waited for ever.
    _, port, token = _start(tmp_path, 'version: 1\nservers:\n  dies:\n    command: /bin/sh\n'
                                      '    args: ["-c", "echo fatal >&2; exit 3"]\ntools: []\n', "dies")
    for _ in range(3):  # the race goes either way: every try is answered, none leaves a session
        status, sid, body = _post(port, token, _INIT, path="/servers/dies/mcp", timeout=15)
        assert status == 502 or '"error"' in body, (status, body)
        if sid:
            status, _, _ = _post(port, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, sid,
                                 path="/servers/dies/mcp", timeout=15)
            assert status == 404


def test_two_http_clients_of_one_serve_are_two_agent_sessions(tmp_path):
    # Before: every MCP session of one serve was one agent session (keyed on serve's parent
    # process), labelled with the first client's name; `undo` reverted them together.
    _, port, token = _serve_kv(tmp_path)
    for name, key in (("n8n-workflow-A", "k0"), ("gumloop-B", "k1")):
        sid = _init(port, token, name)
        _post(port, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "put", "arguments": {"key": key, "value": name}}}, sid)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        c.request("DELETE", "/servers/kv/mcp", headers={"Authorization": f"Bearer {token}", "Mcp-Session-Id": sid})
        assert c.getresponse().status == 200
    sessions = json.loads(cli("list", "--json", "--manifest", str(tmp_path / "synartesis.yaml"),
                              "--journal", str(tmp_path / "j.db")).stdout)
    assert len(sessions) == 2, sessions
    assert sorted(s.get("client") for s in sessions) == ["gumloop-B", "n8n-workflow-A"], sessions


def test_an_initialize_sent_as_a_notification_opens_no_session(tmp_path):
    # Before: an `initialize` without an id (a notification) started a server and registered a
    # session, then answered 202 without an Mcp-Session-Id: nobody could use or DELETE it, and
    # its server process lived until the idle timeout (30 min); a loop of them spawned a
    # process each.
    from helpers import descendants

    proc, port, token = _serve_kv(tmp_path)
    notification = {k: v for k, v in _INIT.items() if k != "id"}
    for _ in range(3):
        status, sid, _ = _post(port, token, notification)
        assert status == 400 and sid is None, status
    time.sleep(0.5)
    servers = [p for p in descendants(proc.pid) if "fake_server" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    assert servers == [], "a server was started for a session nobody can reach"
    status, sid, _ = _post(port, token, _INIT)  # a real initialize still opens one
    assert status == 200 and sid


def test_a_client_that_leaves_before_its_initialize_is_answered_leaves_no_session(tmp_path):
    # Before: the session was registered when its server started; the client that asked for it
    # went away before the answer (with its Mcp-Session-Id) came, so nobody could use or DELETE
    # it, and its server process lived until the idle timeout (30 min).
    import socket

    from helpers import descendants

    state = tmp_path / "kv.json"
    state.write_text('{"k0": "v0"}')
    slow_start = ["-c", f"sleep 1.5; exec {FAKE_SERVER[0]} {FAKE_SERVER[1]} --state {state}"]
    policy = FAKE_POLICY.replace("  kv: {}\n", "  kv:\n    command: /bin/sh\n    args: %s\n" % json.dumps(slow_start))
    proc, port, token = _start(tmp_path, policy, "kv")
    body = json.dumps(_INIT).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /servers/kv/mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
              b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (port, token.encode(), len(body), body))
    time.sleep(0.4)
    s.close()

    def servers() -> list[int]:
        return [p for p in descendants(proc.pid)
                if "fake_server" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and servers():
        time.sleep(0.2)
    time.sleep(2.5)  # past the slow start: a server left running would be up by now
    assert servers() == [], "the session of a client that left still runs its server"
    status, sid, _ = _post(port, token, _INIT, timeout=20)  # serve still opens sessions
    assert status == 200 and sid


def test_a_browser_on_an_allowed_origin_gets_past_cors(tmp_path):
    # Before: `--allow-origin` let a browser's Origin through the check, but serve never answered
    # the CORS preflight (OPTIONS, which carries no token: 401) nor sent
    # Access-Control-Allow-Origin, so no browser page on any origin could ever call it.
    _, port, token = _serve_kv(tmp_path)
    origin = f"http://localhost:{port}"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("OPTIONS", "/servers/kv/mcp", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, mcp-protocol-version"})
    r = c.getresponse()
    r.read()
    assert r.status in (200, 204), r.status
    assert r.getheader("access-control-allow-origin") == origin
    allowed = (r.getheader("access-control-allow-headers") or "").lower()
    assert all(h in allowed for h in ("authorization", "content-type", "mcp-session-id", "mcp-protocol-version"))
    assert "POST" in (r.getheader("access-control-allow-methods") or "")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("POST", "/servers/kv/mcp", json.dumps(_INIT), {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Origin": origin,
        "Accept": "application/json, text/event-stream"})
    r = c.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("access-control-allow-origin") == origin
    assert "mcp-session-id" in (r.getheader("access-control-expose-headers") or "").lower()
    # a foreign origin still gets nothing: neither the preflight nor the CORS headers
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("OPTIONS", "/servers/kv/mcp", headers={"Origin": "https://evil.example",
                                                     "Access-Control-Request-Method": "POST"})
    r = c.getresponse()
    r.read()
    assert r.status == 403 and r.getheader("access-control-allow-origin") is None
