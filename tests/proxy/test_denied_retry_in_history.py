"""Adversarial review, round 4 — A refused retry of a denied call shows in `history` as a second denial, by "unknown".

A rule whose inverse cannot be built from the pre-read holds the call. It used to record a row
first and, on a retry after a denial, set that row `denied` with `set_action_status`, which
writes an `action.denied` event; `history` reads every `action.denied` event as a person's
decision. (The call is now held before it has a row: tests/proxy/test_held_unbuildable_inverse.py.)"""
import json

from helpers import FAKE_POLICY, RawSession, cli, kv_proxy

BROKEN = FAKE_POLICY.replace('value: "$snapshot.value"}}\n  - match: "kv.slow_put"',
                             'value: "$snapshot.nosuch"}}\n  - match: "kv.slow_put"', 1)
assert BROKEN != FAKE_POLICY


def test_history_lists_one_denial_when_the_agent_retries_a_denied_call(tmp_path):
    manifest, journal, _state, argv = kv_proxy(tmp_path, policy=BROKEN)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    call = {"key": "k0", "value": "agent"}
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "put", call).get("isError")  # held: its inverse cannot be built
    (held,) = json.loads(cli("gates", "--no-read", "--json", *j).stdout)
    assert cli("deny", (held.get("id") or held.get("action"))[:8], "--by", "alice", "--reason", "no", *j).returncode == 0
    with RawSession(argv) as s:
        s.handshake()
        assert "alice denied it" in json.dumps(s.call(1, "put", call))
    entries = json.loads(cli("history", "--json", *j).stdout)
    assert [(e["kind"], e["by"]) for e in entries] == [("denied", "alice")], entries
