"""The toy CRM over Streamable HTTP (``--http``): a bearer token is required, checked first."""

from __future__ import annotations

import os
import sys

import httpx2
from helpers import run
import netkit

TOKEN = "crm-demo-token-0123456789abcdef"


def test_http_mode_needs_a_token_in_the_named_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CRM_TOKEN"}
    out = run([sys.executable, "-m", "synartesis.demo.crm_server", "--http", "--state",
               str(tmp_path / "s.json")], env=env, text=True, timeout=60)
    assert out.returncode == 2 and "$CRM_TOKEN" in out.stderr


def test_requests_without_the_token_get_401_before_the_mcp_layer(tmp_path):
    server = netkit.crm_http(tmp_path / "s.json", TOKEN)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream"}
        for auth in (None, "Bearer wrong", f"bearer {TOKEN}", TOKEN):
            h = dict(headers, **({"authorization": auth} if auth else {}))
            r = httpx2.post(server.url, json=init, headers=h, timeout=20)
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        r = httpx2.post(server.url, json=init, headers=dict(headers, authorization=f"Bearer {TOKEN}"), timeout=20)
        assert r.status_code == 200 and "toy-crm" in r.text and r.headers.get("mcp-session-id")
        assert not (tmp_path / "s.json").read_text().count(TOKEN)
    finally:
        assert server.stop() is not None
