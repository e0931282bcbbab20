"""Adversarial review 14: JSON numbers of more than 4,300 digits are valid JSON (RFC 8259 sets
no limit; JavaScript reads them) but CPython's ``json.loads`` refuses them (the int-string
limit). A client's call holding one got ``-32700 "synartesis forwards only valid UTF-8 JSON"``
with ``"id": null`` (hang: the client's request 1 is never answered, and the text is wrong). A
server's successful answer holding one made the write ``unknown`` ("the server's answer was not
JSON-RPC", or, from a server that writes ``{"jsonrpc": "2.0", "id": 1, ...}`` with spaces as
Python's json.dumps does, the lane kept waiting for the answer it had forwarded: every later
call stalled until the call timeout (ten minutes), the client then got a second answer to the
same id, the write was journalled ``unknown`` and undo halts on it; with stdin closed, the
proxy did not exit until that timeout)."""

from __future__ import annotations

import json
import sys

from helpers import RawSession, cli, kv_proxy, open_journal, proxy_argv

HUGE = b"9" * 5000


def test_a_call_holding_a_5000_digit_number_is_answered_under_its_own_id(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":{"key":"k0","n":'
               + HUGE + b"}}}")
        line = s.read_line(timeout=15)  # was: {"id":null,"error":{"code":-32700,...}}, and id 1 never answered
        reply = json.loads(line)
        assert reply.get("id") == 1, line[:300]
        assert "only valid UTF-8 JSON" not in line.decode(), line[:300]  # it is valid UTF-8 JSON
        assert s.request(2, "ping", timeout=10)["result"] == {}
        s.close()


# A server whose put answers with a number JavaScript writes as digits no Python parses
# (the value it stored, echoed), standard library only; get reads the store.
SERVER = r'''
import json, sys
sys.set_int_max_str_digits(0)
store = {"k": "old"}
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); mid = m.get("id")
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
              "serverInfo": {"name": "big", "version": "1"}}})
    elif m.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("get", "put")]}})
    elif m.get("method") == "tools/call":
        name, args = m["params"]["name"], m["params"].get("arguments") or {}
        if name == "get":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": json.dumps({"value": store["k"]})}],
                  "structuredContent": {"value": store["k"]}}})
        else:
            store["k"] = args["value"]
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "stored"}],
                  "structuredContent": {"ok": True, "version": 10 ** 5000}}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
'''

POLICY = """version: 1
servers:
  big: {}
tools:
  - match: "big.get"
    class: readonly
  - match: "big.put"
    class: reversible
    snapshot: {tool: big.get, args: {}}
    inverse: {tool: big.put, args: {value: "$snapshot.value"}}
"""


def test_a_write_answered_with_a_5000_digit_number_is_answered_once_does_not_stall_the_lane_and_is_applied(tmp_path):
    server = tmp_path / "big_server.py"
    server.write_text(SERVER)
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY)
    argv = proxy_argv("big", manifest, journal, [sys.executable, str(server)], "--call-timeout", "5")
    with RawSession(argv) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "put", "arguments": {"value": "new"}}})
        line = s.read_line(timeout=15)  # (the test's own json.loads cannot read it either)
        assert line.startswith(b'{"jsonrpc": "2.0", "id": 1, "result"'), line[:200]  # the server's answer, forwarded
        s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get", "arguments": {}}})
        nxt = s.read_line(timeout=15)
        # was: the lane waited for an answer it had already forwarded; at the call timeout the
        # client got a second answer to id 1 ("Synartesis stopped waiting for put after 5 s"),
        # and only then the answer to id 2 (with the default timeout, ten minutes later)
        assert b"Synartesis stopped waiting" not in nxt, nxt[:300]
        assert json.loads(nxt)["id"] == 2, nxt[:300]
        s.close()
    with open_journal(journal) as j:
        (run,) = j.list_runs()
        (put,) = [a for a in j.actions(run.id) if a.tool == "put"]
    assert put.status == "applied", (put.status, put.note)  # was unknown: "no answer within 5 s"
    res = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert res.returncode == 0, res.stdout  # was 1: a halt on an outcome unknown


def test_the_pre_read_of_a_write_answered_with_a_5000_digit_number_never_reaches_the_client(tmp_path):
    # the pre-read's answer (id "syn-<nonce>-1") went to the client, which never sent that id,
    # and the write waited 30 s (--read-timeout) for it, then was blocked
    server = tmp_path / "big_server.py"
    server.write_text(SERVER.replace('"structuredContent": {"value": store["k"]}',
                                     '"structuredContent": {"value": store["k"], "n": 10 ** 5000}'))
    assert "10 ** 5000}}" in server.read_text()
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY)
    with RawSession(proxy_argv("big", manifest, journal, [sys.executable, str(server)], "--read-timeout", "3")) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "put", "arguments": {"value": "new"}}})
        line = s.read_line(timeout=15)
        assert b'"syn-' not in line[:60], line[:200]  # was: {"jsonrpc": "2.0", "id": "syn-…-1", "result": …}
        # the write is blocked, saying why: its state before the call could not be read
        assert line.startswith(b'{"jsonrpc":"2.0","id":1,"result"') and b"synartesis cannot read" in line, line[:300]
        s.close()
    with open_journal(journal) as j:
        (run,) = j.list_runs()
        (put,) = [a for a in j.actions(run.id) if a.tool == "put"]
    # applied, or held with a reason; not "no answer" from a server that answered at once
    assert "no answer" not in (put.note or ""), (put.status, put.note)  # was: "the read big.get failed: no answer within 3 s"


def test_a_write_answered_with_5000_nested_arrays_is_answered_once_and_does_not_stall_the_lane(tmp_path):
    # not only numbers: any answer json.loads refuses (here RecursionError; JavaScript parses it)
    # that the relay forwards left the lane waiting for it, as above
    server = tmp_path / "deep_server.py"
    server.write_text(SERVER.replace('"version": 10 ** 5000', '"deep": "DEEP"').replace(
        'sys.stdout.write(json.dumps(o) + "\\n")', 'sys.stdout.write(json.dumps(o).replace(\'"DEEP"\', "[" * 5000 + "]" * 5000) + "\\n")'))
    assert '"[" * 5000' in server.read_text()
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY)
    with RawSession(proxy_argv("big", manifest, journal, [sys.executable, str(server)], "--call-timeout", "5")) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "put", "arguments": {"value": "new"}}})
        assert s.read_line(timeout=15).startswith(b'{"jsonrpc": "2.0", "id": 1, "result"')
        s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get", "arguments": {}}})
        nxt = s.read_line(timeout=15)
        assert b"Synartesis stopped waiting" not in nxt, nxt[:300]  # was: a second answer to id 1 at the call timeout
        assert json.loads(nxt)["id"] == 2, nxt[:300]
        s.close()
    with open_journal(journal) as j:
        (run,) = j.list_runs()
        (put,) = [a for a in j.actions(run.id) if a.tool == "put"]
    assert put.status != "unknown" or "no answer" not in (put.note or ""), (put.status, put.note)


def test_the_same_in_the_multi_server_form(tmp_path):
    """Several servers behind one proxy (adversarial review 15, F1 and F2): a child's answer
    json.loads refuses was dropped (the write waited out its timeout and was unknown), and a
    client's such request was answered with id null."""
    from helpers import FAKE_SERVER, synartesis_argv

    server = tmp_path / "big_server.py"
    server.write_text(SERVER)
    state = tmp_path / "kv.json"
    state.write_text(json.dumps({"k0": "v0"}))
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY.replace("servers:\n  big: {}\n", f"""servers:
  big:
    command: {json.dumps(sys.executable)}
    args: [{json.dumps(str(server))}]
  kv:
    command: {json.dumps(FAKE_SERVER[0])}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(state)])}
""") + '  - {match: "kv.get", class: readonly}\n')
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal), "--call-timeout", "5")
    with RawSession(argv) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "big__put", "arguments": {"value": "new"}}})
        line = s.read_line(timeout=15)
        assert line.startswith(b'{"jsonrpc": "2.0", "id": 1, "result"'), line[:200]  # was: dropped, then "stopped waiting"
        s.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kv__get","arguments":{"key":"k0","n":'
               + HUGE + b"}}}")
        reply = json.loads(s.read_line(timeout=15))
        assert reply.get("id") == 2 and "error" in reply, reply  # was id null
        assert s.request(3, "ping", timeout=10)["result"] == {}
        s.close()
    with open_journal(journal) as j:
        puts = [a for r in j.list_runs() for a in j.actions(r.id) if a.tool == "put"]
    assert [a.status for a in puts] == ["applied"], [(a.status, a.note) for a in puts]


def test_a_client_batch_holding_a_5000_digit_number_is_answered_under_each_id(tmp_path):
    """Adversarial review 15, F4: a batch with an element json.loads refuses was answered once
    with id null, so the client waited for ever on each request in it. Now each request gets
    its error under its own id, in a batch, and nothing of it reaches the server."""
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.send(b'[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},'
               b'{"jsonrpc":"2.0","id":"six","method":"tools/call","params":{"name":"put","arguments":'
               b'{"key":"k","value":' + HUGE + b"}}}]")
        reply = json.loads(s.read_line(timeout=15))
        assert isinstance(reply, list) and [r["id"] for r in reply] == [5, "six"], reply
        assert all(r["error"]["code"] == -32700 and "none of it was sent" in r["error"]["message"] for r in reply)
        assert s.request(7, "ping", timeout=10)["result"] == {}
        s.close()
    assert "k" not in json.loads(state.read_text() or "{}")
