"""A new user's round 31, 9e: a call to a tool the server does not have was held "for approval"
as an irreversible call, and `gates` said "its rule has no pre-read", with no rule involved.
The hold (what the agent reads, the journal's note, `gates`) now says the server does not list
the tool. Real proxy, fake kv server, real CLI."""

from __future__ import annotations

from helpers import RawSession, cli, kv_proxy, open_journal


def test_a_tool_the_server_does_not_list_is_held_saying_so(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        listed = s.request(1, "tools/list", {})["result"]["tools"]
        assert "no_such_tool" not in {t["name"] for t in listed}
        r = s.call(2, "no_such_tool", {"key": "k0"})
        assert r.get("isError"), r
        told = r["content"][0]["text"]
        assert "the server does not list a tool no_such_tool" in told, told
    with open_journal(journal) as j:
        (held,) = j.list_gated()
        assert "the server does not list a tool no_such_tool" in (held.note or ""), held.note
    gates = cli("gates", "--journal", str(journal), "--manifest", str(manifest))
    flat = " ".join(gates.stdout.split())
    assert "the server does not list a tool no_such_tool" in flat, gates.stdout
    assert "its rule has no pre-read" not in flat and "no rule of the policy covers" in flat, gates.stdout


def test_a_listed_tool_no_rule_covers_is_held_as_before(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.request(1, "tools/list", {})
        r = s.call(2, "delete", {"key": "k0"})  # listed, no rule: held, as irreversible
        assert r.get("isError") and "does not list" not in r["content"][0]["text"], r
