"""Protocol details: the child gets the client's whole environment; the 2026-07-28 era (no
handshake, `_meta` on every request) works, and our own requests carry the era's envelope."""

from __future__ import annotations

import json
import os

from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, open_journal, proxy_argv

POLICY = FAKE_POLICY + """  - match: "kv.env"
    class: readonly
"""
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "1"}}


def _setup(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(POLICY)
    state.write_text(json.dumps({"k": "v"}))
    return manifest, journal, state, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])


def test_child_gets_the_whole_environment(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    env = dict(os.environ, SOME_API_KEY="sk-test-not-a-secret", ODD_VAR="x y")
    with RawSession(argv, env=env) as s:
        s.handshake()
        r = s.call(1, "env", {"name": "SOME_API_KEY"})
        assert r["structuredContent"]["value"] == "sk-test-not-a-secret"
        assert s.call(2, "env", {"name": "ODD_VAR"})["structuredContent"]["value"] == "x y"
        s.close()


def test_modern_era_without_handshake(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    log = tmp_path / "calls.jsonl"
    with RawSession(argv, env=dict(os.environ, FAKE_LOG=str(log))) as s:
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "put", "arguments": {"key": "k", "value": "w"}, "_meta": MODERN}})
        _, reply = s.wait_for(1)
        assert reply["result"]["structuredContent"] == {"ok": True, "key": "k"}
        s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "delete", "arguments": {"key": "k"}, "_meta": MODERN}})
        _, held = s.wait_for(2)
        assert held["result"]["isError"] is True and held["result"]["resultType"] == "complete"
        s.close()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    pre_read = calls[0]
    assert pre_read["name"] == "get"
    assert pre_read["meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.label == "modern-client"
        assert [a.status for a in j.actions(run.id)] == ["applied", "gated"]
