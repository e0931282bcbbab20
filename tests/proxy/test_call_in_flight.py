"""A call in flight when its answer can never come is still answered (adversarial review,
2026-12-01: the journal said `unknown`, the calls queued behind it were answered "kv is not
running", but the call itself got no JSON-RPC answer and the client saw EOF)."""
import json
import os
import signal
import time

from helpers import RawSession, kv_proxy, open_journal


def _put(s: RawSession, mid: int, key: str, tool: str = "put", **extra) -> None:
    s.send({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
            "params": {"name": tool, "arguments": {"key": key, "value": "A", **extra}}})


def _answers(s: RawSession, ids: set) -> dict:
    """The answers to ``ids``, in whatever order they come."""
    got: dict = {}
    while set(got) != ids:
        msg = json.loads(s.read_line(20))
        if msg.get("id") in ids and "method" not in msg:
            got[msg["id"]] = msg
    return got


def test_a_call_in_flight_when_the_server_dies_is_answered_outcome_unknown(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    env = {**os.environ, "FAKE_CRASH_ON_CALL": "2"}  # 1 = the pre-read, 2 = the put itself
    with RawSession(argv, env=env) as s:
        s.handshake()
        _put(s, 1, "k0")
        _put(s, 2, "k1")
        got = _answers(s, {1, 2})
        first, second = got[1], got[2]
    # the frame a remote transport makes up for a lost answer (README, design notes)
    assert first["error"]["code"] == -32003 and first["error"]["data"] == {"synartesis": {"outcome": "unknown"}}, first
    assert "unknown" in first["error"]["message"] and "exited before answering" in first["error"]["message"], first
    assert "not running" in json.dumps(second)
    with open_journal(journal) as j:
        assert [a.status for a in j.actions(j.list_runs()[0].id)][0] == "unknown"


def test_a_call_in_flight_when_the_proxy_gets_sigterm_is_answered_outcome_unknown(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    calls = tmp_path / "calls.jsonl"  # the fake server logs each tools/call as it gets it
    with RawSession(argv, env={**os.environ, "FAKE_LOG": str(calls)}) as s:
        s.handshake()
        _put(s, 1, "k0", tool="slow_put", delay=30)
        for _ in range(400):  # the pre-read (get), then the call itself: it is in flight
            if calls.exists() and '"slow_put"' in calls.read_text():
                break
            time.sleep(0.05)
        s.proc.send_signal(signal.SIGTERM)
        _, first = s.wait_for(1, timeout=20)
    assert first["error"]["code"] == -32003 and "unknown" in first["error"]["message"], first
