"""Calls sent back to back, before any answer: every answer reaches the client, and the test
client sees each one as it comes (review 12 read 50 pipelined `get`s through a buffered reader
under select() and waited 30 s for answers that had already arrived). Real proxy, fake kv server."""

from __future__ import annotations

from helpers import RawSession, kv_proxy


def test_fifty_reads_sent_before_any_answer_are_all_answered_in_order(tmp_path):
    _, _, _, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        for i in range(1, 51):
            s.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "get", "arguments": {"key": "k0"}}})
        answers = [s.wait_for(i, timeout=20)[1] for i in range(1, 51)]
    assert [a["id"] for a in answers] == list(range(1, 51))
    assert all(a["result"]["structuredContent"] == {"key": "k0", "value": "v0"} for a in answers), answers[0]
