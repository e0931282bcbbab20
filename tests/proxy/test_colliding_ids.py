"""Adversarial review 9: two requests pending under one id. Answers are matched to calls as a
JavaScript server reads ids (``1`` and ``1.0`` are one id, ``2**53 + 1`` rounds to ``2**53``),
so a second call whose id collides with one still waiting is refused with a JSON-RPC error and
never sent: the first call's row holds its own answer, no row is lost or misfiled, and an id is
free again once its call is answered or was never sent (held). The reverse orders too: a call
under the id of a pending non-call request (a `ping`, a routed `prompts/get`), and a call under
the id of one the client cancelled (its answer may still come)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from helpers import FAKE_SERVER, RawSession, kv_proxy, open_journal, synartesis_argv

# 1 and 1.0 are one id to a JavaScript server; ids past 2**53 (which collided the same way) are
# now refused outright (tests/proxy/test_hostile_input.py)
COLLIDING = [(1, 1.0), (2.0, 2)]


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


SLOW_REQUESTS = {"FAKE_SLOW_REQUEST": "0.5"}  # the fake server answers a ping half a second late


@pytest.mark.parametrize(("first", "second"), COLLIDING)
def test_a_call_whose_id_collides_with_a_pending_ping_is_refused_and_never_sent(tmp_path, first, second):
    """Adversarial review 10: the reverse order of the read-in-flight case. Before, the call was
    sent, and the ping's answer (``{}``) was taken for the call's: journalled as its result."""
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv, env={**os.environ, **SLOW_REQUESTS}) as s:
        _open(s)
        s.send({"jsonrpc": "2.0", "id": first, "method": "ping"})
        s.send({"jsonrpc": "2.0", "id": second, "method": "tools/call",
                "params": {"name": "get", "arguments": {"key": "k", "delay": 1.5}}})
        got = _answers(s, 2)
        s.close()
    refused, pong = got[json.dumps(second)], got[json.dumps(first)]
    assert refused["error"]["code"] == -32600
    assert "a ping request still waiting for its answer" in refused["error"]["message"]
    assert pong == {"jsonrpc": "2.0", "id": first, "result": {}}
    if journal.exists():  # nothing was sent, nothing journalled (the journal is made by a first call)
        with open_journal(journal) as j:
            assert [a for r in j.list_runs() for a in j.actions(r.id)] == []


def test_the_same_in_the_multi_server_form(tmp_path):
    """Two servers behind one proxy: a request routed to one of them (``prompts/get``) still
    pending; a call under its id, to the other server, would take its answer."""
    state, other = tmp_path / "kv.json", tmp_path / "kv2.json"
    state.write_text('{"k": "old"}')
    other.write_text('{"k": "other"}')
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text("version: 1\nservers:\n" + "".join(
        f"  {name}:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps([FAKE_SERVER[1], '--state', str(path)])}\n"
        for name, path in (("kv", state), ("kv2", other))) + 'tools:\n  - match: "*.get"\n    class: readonly\n')
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal))
    with RawSession(argv, env={**os.environ, **SLOW_REQUESTS}) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "kv__p"}})
        s.send({"jsonrpc": "2.0", "id": 5.0, "method": "tools/call",
                "params": {"name": "kv2__get", "arguments": {"key": "k", "delay": 1.5}}})
        got = _answers(s, 2)
        # once the prompt's answer is in, the id is free again
        again = s.request(5, "tools/call", {"name": "kv2__get", "arguments": {"key": "k"}})
        s.close()
    assert got["5.0"]["error"]["code"] == -32600 and "prompts/get request" in got["5.0"]["error"]["message"]
    assert got["5"]["error"]["code"] == -32601  # the fake server's own answer to prompts/get, passed on
    assert again["result"]["structuredContent"] == {"key": "k", "value": "other"}
    with open_journal(journal) as j:
        assert [(a.server, a.tool, a.status) for r in j.list_runs() for a in j.actions(r.id)] == [("kv2", "get", "applied")]


def test_a_cancelled_calls_id_stays_refused_and_the_refusal_says_it_was_cancelled(tmp_path):
    """Freeing the id would let the cancelled call's late answer be taken for the new call's,
    so it stays taken; the refusal says why, not "still waiting" (adversarial review 10)."""
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv, env={**os.environ, **SLOW_REQUESTS}) as s:
        _open(s)
        s.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "get", "arguments": {"key": "k", "delay": 1.5}}})
        s.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        for rid in (7, 8):
            s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
        again = {rid: s.request(rid, "tools/call", {"name": "get", "arguments": {"key": "k"}}) for rid in (7, 8)}
        s.close()
    for rid, method in ((7, "tools/call"), (8, "ping request")):
        error = again[rid]["error"]
        assert error["code"] == -32600, again
        assert f"a {method} the client cancelled" in error["message"] and "still waiting" not in error["message"]
        assert "may still answer it" in error["message"] and "an id of its own" in error["message"]
