"""Adversarial review 9: two requests pending under one id. Answers are matched to calls as a
JavaScript server reads ids (``1`` and ``1.0`` are one id, ``2**53 + 1`` rounds to ``2**53``),
so a second call whose id collides with one still waiting is refused with a JSON-RPC error and
never sent: the first call's row holds its own answer, no row is lost or misfiled, and an id is
free again once its call is answered or was never sent (held)."""

from __future__ import annotations

import json

import pytest
from helpers import RawSession, kv_proxy, open_journal

COLLIDING = [(1, 1.0), (9007199254740993, 9007199254740992)]


def _open(s: RawSession) -> None:
    s.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "test-client", "version": "1"}})
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _answers(s: RawSession, n: int) -> dict:
    """The next ``n`` answers by the exact text of their id."""
    got = {}
    while len(got) < n:
        line = s.read_line()
        msg = json.loads(line)
        if "method" not in msg:
            got[line.split(b'"id":', 1)[1].split(b",", 1)[0].split(b"}", 1)[0].strip().decode()] = msg
    return got


@pytest.mark.parametrize(("first", "second"), COLLIDING)
@pytest.mark.parametrize("second_tool", ["get", "put"])
def test_a_call_whose_id_collides_with_a_read_in_flight_is_refused_and_never_sent(tmp_path, first, second, second_tool):
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv) as s:
        _open(s)
        s.send({"jsonrpc": "2.0", "id": first, "method": "tools/call",
                "params": {"name": "get", "arguments": {"key": "k", "delay": 1.0}}})
        args = {"key": "k"} if second_tool == "get" else {"key": "k", "value": "new"}
        s.send({"jsonrpc": "2.0", "id": second, "method": "tools/call", "params": {"name": second_tool, "arguments": args}})
        got = _answers(s, 2)
        s.close()
    refused, answered = got[json.dumps(second)], got[json.dumps(first)]
    assert refused["error"]["code"] == -32600 and "already used" in refused["error"]["message"]
    assert answered["result"]["structuredContent"] == {"key": "k", "value": "old"}
    assert json.loads(store.read_text()) == {"k": "old"}  # the refused put never reached the server
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        (row,) = j.actions(run.id)
        assert (row.seq, row.tool, row.status) == (1, "get", "applied")
        assert j.get_json(row.result_ref)["structuredContent"] == {"key": "k", "value": "old"}
        assert j.audit(run.id).ok


@pytest.mark.parametrize(("first", "second"), COLLIDING)
def test_a_read_whose_id_collides_with_a_write_in_flight_is_refused(tmp_path, first, second):
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv) as s:
        _open(s)
        s.send({"jsonrpc": "2.0", "id": first, "method": "tools/call",
                "params": {"name": "slow_put", "arguments": {"key": "k", "value": "new", "delay": 1.0}}})
        s.send({"jsonrpc": "2.0", "id": second, "method": "tools/call", "params": {"name": "get", "arguments": {"key": "k"}}})
        s.send({"jsonrpc": "2.0", "id": second, "method": "ping"})  # any request: its answer would settle the write
        got = []
        while len(got) < 3:
            msg = json.loads(s.read_line())
            if "method" not in msg:
                got.append(msg)
        s.close()
    errors = [m for m in got if "error" in m]
    assert len(errors) == 2 and all(m["error"]["code"] == -32600 for m in errors)
    (put,) = [m for m in got if "result" in m]
    assert put["result"]["structuredContent"] == {"ok": True, "key": "k"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        (row,) = j.actions(run.id)
        assert (row.tool, row.status) == ("slow_put", "applied")
        assert j.get_json(row.snapshot_ref)["value"] == "old"
        assert j.audit(run.id).ok


def test_an_id_is_free_again_once_its_call_is_answered_or_held(tmp_path):
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv) as s:
        _open(s)
        held = s.request(5, "tools/call", {"name": "delete", "arguments": {"key": "k"}})  # no rule: held
        assert "error" not in held and held["result"]["isError"] is True
        put = s.request(5, "tools/call", {"name": "put", "arguments": {"key": "k", "value": "new"}})
        got = s.request(5.0, "tools/call", {"name": "get", "arguments": {"key": "k"}})
        s.close()
    assert put["result"]["structuredContent"] == {"ok": True, "key": "k"}
    assert got["result"]["structuredContent"] == {"key": "k", "value": "new"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert [(a.tool, a.status) for a in j.actions(run.id)] == [("delete", "gated"), ("put", "applied"), ("get", "applied")]


def test_a_queued_call_cancelled_before_it_was_sent_frees_its_id_at_once(tmp_path):
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv) as s:
        _open(s)
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "slow_put", "arguments": {"key": "k", "value": "slow", "delay": 1.0}}})
        s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "put", "arguments": {"key": "k", "value": "x"}}})
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        again = s.request(2, "tools/call", {"name": "put", "arguments": {"key": "k", "value": "y"}})
        s.close()
    assert again["result"]["structuredContent"] == {"ok": True, "key": "k"}
    assert json.loads(store.read_text()) == {"k": "y"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert [(a.tool, a.status) for a in j.actions(run.id)] == [("slow_put", "applied"), ("put", "applied")]
