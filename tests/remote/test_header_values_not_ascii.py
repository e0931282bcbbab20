"""Header values HTTP cannot carry (adversarial review 29, F5, F6): an entry's header value that
is not ASCII, or a server's Mcp-Session-Id that is not, made httpx raise inside the exchange:
a traceback on stderr quoting the value in full (a credential), the client's request never
answered, and with the session id the proxy itself exited 1. Each is now an answer that names
the header, never its value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import RawSession, spawn, synartesis_argv

SERVER = Path(__file__).with_name("echoing_server.py")
SECRET = "s\u00e9cret-value-1234567890"


def _bridge(tmp_path: Path, server_env: dict, proxy_env: dict) -> list[str]:
    srv = spawn([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True, env=dict(os.environ, **server_env))
    port = int(srv.stdout.readline())
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  r: {}\ntools: []\n")
    return synartesis_argv("proxy", "--server", "r", "--manifest", str(manifest), "--journal", str(tmp_path / "j.db"),
                           "--url", f"http://127.0.0.1:{port}/mcp", "--header-env", "X-Api-Key=RKEY",
                           "--transport", "http")


def test_an_entry_header_value_that_is_not_ascii_is_an_answer_naming_the_header_not_a_hang(tmp_path):
    argv = _bridge(tmp_path, {}, {})
    with RawSession(argv, env=dict(os.environ, RKEY=SECRET)) as s:
        s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        _, answer = s.wait_for(0, timeout=15)
        s.close()
        err = s.stderr_text()
    message = answer["error"]["message"]
    assert "x-api-key" in message.lower() and SECRET not in json.dumps(answer), answer
    assert "Traceback" not in err and SECRET not in err and "cret-value" not in err, err[-2000:]


def test_a_session_id_that_is_not_ascii_is_refused_without_a_traceback_or_a_hang(tmp_path):
    argv = _bridge(tmp_path, {"ECHO_SID": "caf\u00e9-session"}, {})
    with RawSession(argv, env=dict(os.environ, RKEY="plain-key")) as s:
        s.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        _, init = s.wait_for(0, timeout=15)
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        _, listed = s.wait_for(1, timeout=15) if s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) is None \
            else (None, None)
        rc = s.close()
        err = s.stderr_text()
    assert "error" in init or "error" in listed, (init, listed)
    assert "mcp-session-id" in json.dumps([init, listed]).lower()
    assert "Traceback" not in err and rc == 0, (rc, err[-2000:])
