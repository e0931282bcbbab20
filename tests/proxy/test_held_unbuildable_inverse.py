"""A call held because its inverse cannot be built from its arguments and pre-read was
journalled twice: a `failed` row ("held: …") and the `gated` one. Approved and retried, the
retry's outcome went to a new `failed` row while the approved row ended `unknown` ("the run
ended before an answer was recorded"), though the server applied the call. The inverse is now
checked before the call has a row: one `gated` row, and the retry is journalled `applied` on
the approved one. Real proxy over the scripted kv server (tests/helpers: kv_proxy)."""

from __future__ import annotations

import json

from helpers import FAKE_POLICY, RawSession, cli, kv_proxy

BROKEN = FAKE_POLICY.replace('value: "$snapshot.value"}}\n  - match: "kv.slow_put"',
                             'value: "$snapshot.nosuch"}}\n  - match: "kv.slow_put"', 1)
assert BROKEN != FAKE_POLICY


def _actions(flags):
    return [(a["tool"], a["status"]) for a in json.loads(cli("show", "--json", *flags).stdout)["actions"]]


def test_a_call_held_for_an_unbuildable_inverse_has_one_row_and_its_approved_retry_is_applied(tmp_path):
    manifest, journal, _state, argv = kv_proxy(tmp_path, policy=BROKEN)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    call = {"key": "k0", "value": "agent"}
    with RawSession(argv) as s:
        s.handshake()
        held = s.call(1, "put", call)
    assert held.get("isError") and "cannot be built" in json.dumps(held), held
    assert _actions(flags) == [("put", "gated")]
    (gate,) = json.loads(cli("gates", "--no-read", "--json", *flags).stdout)
    assert cli("approve", (gate.get("id") or gate.get("action"))[:8], "--by", "alice", *flags).returncode == 0
    with RawSession(argv) as s:
        s.handshake()
        done = s.call(1, "put", call)
    assert not done.get("isError"), done
    assert _actions(flags) == [("put", "approved"), ("put", "applied")]
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    assert session["unknown"] == 0, session


# The same rule, its pre-read answered after 1.5 s (the fake kv server's get takes a delay).
SLOW_READ = BROKEN.replace('snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}\n'
                           '    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.nosuch"}}',
                           'snapshot: {tool: kv.get, args: {key: "$.key", delay: 1.5}, absent_when: ["no such key"]}\n'
                           '    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.nosuch"}}', 1)
assert SLOW_READ != BROKEN


def test_a_call_cancelled_while_its_pre_read_is_out_is_not_held_nor_answered_under_its_reused_id(tmp_path):
    # adversarial review 31, F4: the client cancelled the call while its pre-read was at the
    # server (its id freed) and sent a new request under that id; the call was then held (a
    # `gated` row for a call nobody waits for) and its held answer went out under the reused id,
    # before the new request's own answer
    import os
    import time

    manifest, journal, _state, argv = kv_proxy(tmp_path, policy=SLOW_READ)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    calls = tmp_path / "calls.jsonl"  # what the fake server received (FAKE_LOG)
    with RawSession(argv, env=dict(os.environ, FAKE_LOG=str(calls))) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "put", "arguments": {"key": "k0", "value": "agent"}}})
        deadline = time.monotonic() + 15
        while not (calls.exists() and '"delay"' in calls.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)  # until the pre-read is at the server (answered 1.5 s later)
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "x"}})
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get", "arguments": {"key": "k1"}}})
        first = json.loads(s.read_line())
        assert "holding this call" not in json.dumps(first) and first["result"]["structuredContent"]["value"] == "v1", first
        assert s.call(2, "get", {"key": "k0"})["structuredContent"]["value"] == "v0"  # nothing else came for id 1
    assert _actions(flags) == [("put", "failed"), ("get", "applied"), ("get", "applied")]
    assert json.loads(cli("gates", "--no-read", "--json", *flags).stdout) == []
