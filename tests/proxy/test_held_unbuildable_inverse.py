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
