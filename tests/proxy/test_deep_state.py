"""A write over deeply nested state (adversarial review, 2026-12-01: a 900-deep value made the
proxy answer -32603 "synartesis internal error: maximum recursion depth exceeded", and nothing
was journalled)."""
import json

from helpers import RawSession, kv_proxy, open_journal


def _deep(depth: int) -> list:
    deep: list = []
    for _ in range(depth):
        deep = [deep]
    return deep


def test_a_write_over_deeply_nested_state_is_not_an_internal_error(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    state.write_text(json.dumps({"deep": _deep(900)}))
    with RawSession(argv) as s:
        s.handshake()
        answer = s.request(1, "tools/call", {"name": "put", "arguments": {"key": "deep", "value": "flat"}})
    assert "internal error" not in json.dumps(answer), answer
    with open_journal(journal) as j:
        [action] = j.actions(j.list_runs()[0].id)
    assert action.status in ("applied", "failed"), action


def test_a_call_whose_arguments_nest_too_deep_is_refused_with_a_sentence(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        answers = [s.request(1, "tools/call", {"name": "put", "arguments": {"key": "k0", "value": _deep(300)}})]
        # deeper than the stdlib parses: refused as unreadable (a parse error), never forwarded;
        # under its own id, read from the envelope (it was id null: the client's request 2 was
        # never answered, adversarial review 14)
        s.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"put","arguments":'
               b'{"key":"k0","value":' + b"[" * 5000 + b"]" * 5000 + b"}}}")
        answers.append(s.wait_for(2)[1])
        ok = s.call(3, "put", {"key": "k1", "value": _deep(20)})  # the relay goes on
    for answer in answers:
        assert "internal error" not in json.dumps(answer), answer
        assert "error" in answer or answer["result"]["isError"], answer
    assert "nested 302 levels deep" in answers[0]["result"]["content"][0]["text"], answers[0]
    assert "isError" not in ok
    assert json.loads(state.read_text())["k0"] == "v0"
