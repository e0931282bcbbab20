"""Issue 9 item 6: proxy input edge cases. `"params": null` gets an answer; a lone surrogate in a
call is refused clearly (never "-32603 internal error") and one in a server's answer is
journalled faithfully; a call the server never answers ends as `unknown` at the call timeout,
even a 10 MB one, and the agent is told."""

from __future__ import annotations

import json
import os
import time

import pytest

from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, cli, files_proxy, kv_proxy, open_journal, proxy_argv

POLICY = FAKE_POLICY + """  - match: "kv.env"
    class: readonly
"""


def _kv(tmp_path, state=None, policy=POLICY):
    manifest, journal, store = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(policy)
    store.write_text(json.dumps(state if state is not None else {"k": "old"}))
    return manifest, journal, store, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(store)])


def test_a_tools_call_with_null_params_gets_an_answer(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server)
    with RawSession(argv) as s:
        s.handshake()
        for mid, params in ((1, None), (2, []), (3, {"arguments": {}}), (4, {"name": 7})):
            reply = s.request(mid, "tools/call", params, timeout=10)
            assert reply["error"]["code"] == -32602 and "tool name" in reply["error"]["message"]
        assert s.request(5, "ping", timeout=10)["result"] == {}  # the session goes on
        s.close()


def test_a_lone_surrogate_in_a_call_is_refused_clearly_and_nothing_is_sent(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, "version: 1\nservers:\n  files: {}\ntools:\n  - match: \"files.*\"\n"
                             "    class: reversible\n    inverse: {tool: files.write_file, args: {path: \"$.path\", content: \"\"}}\n")
    target = str(root / "x.txt").encode()
    with RawSession(argv) as s:
        s.handshake()
        s.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":'
               b'{"path":"' + target + b'","content":"a\\ud800b"}}}')
        _, reply = s.wait_for(1, timeout=10)
        s.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_\\udfffile","arguments":{}}}')
        _, named = s.wait_for(2, timeout=10)
        s.close()
    for r in (reply, named):
        assert "error" not in r, r
        assert r["result"]["isError"] is True
        assert "lone UTF-16 surrogate" in r["result"]["content"][0]["text"]
    assert not (root / "x.txt").exists()


def test_a_lone_surrogate_in_a_servers_answer_is_journalled_as_it_came(tmp_path):
    manifest, journal, store, argv = _kv(tmp_path, {"k": "a\ud800b"})
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "get", {"key": "k"})["structuredContent"]["value"] == "a\ud800b"
        # a write whose prior state holds it: recorded with the snapshot, not "-32603"
        r = s.call(2, "put", {"key": "k", "value": "plain"})
        assert r.get("isError") is not True, r
        s.close()
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        read, write = j.actions(run.id)
        assert (read.status, write.status) == ("applied", "applied")
        assert j.get_json(read.result_ref)["structuredContent"]["value"] == "a\ud800b"
        assert j.get_json(write.snapshot_ref)["value"] == "a\ud800b"
        assert j.audit(run.id).ok
    # and undo puts it back exactly (how the CLI then prints a surrogate is not the proxy's part)
    cli("undo", "--json", "--manifest", str(manifest), "--journal", str(journal))
    assert json.loads(store.read_text()) == {"k": "a\ud800b"}
    with open_journal(journal) as j:
        assert j.actions(j.list_runs()[0].id)[1].status == "rolled_back"


def test_a_read_the_server_never_answers_ends_unknown_at_the_call_timeout(tmp_path):
    manifest, journal, store, argv = _kv(tmp_path)
    env = dict(os.environ, SYNARTESIS_CALL_TIMEOUT="1.5", FAKE_HANG="env")
    with RawSession(argv, env=env) as s:
        s.handshake()
        started = time.monotonic()
        r = s.call(1, "env", {"name": "HOME"}, timeout=20)
        waited = time.monotonic() - started
        assert r["isError"] is True and "outcome is unknown" in r["content"][0]["text"]
        assert s.call(2, "get", {"key": "k"})["structuredContent"]["value"] == "old"  # still relaying
        s.close()
    assert 1.4 < waited < 10
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [(a.tool, a.status) for a in acts] == [("env", "unknown"), ("get", "applied")]
        assert "1.5 s" in acts[0].note


def test_a_10_mb_write_the_server_never_answers_ends_unknown_at_the_call_timeout(tmp_path):
    manifest, journal, store, argv = _kv(tmp_path)
    big = "v" * (10 * 1024 * 1024)
    with RawSession([*argv[:argv.index("--")], "--call-timeout", "2", *argv[argv.index("--"):]]) as s:
        s.handshake()
        started = time.monotonic()
        r = s.call(1, "slow_put", {"key": "k", "value": big, "delay": 3600}, timeout=60)
        assert time.monotonic() - started < 30
        assert r["isError"] is True and "outcome is unknown" in r["content"][0]["text"]
        assert s.close(timeout=30) is not None  # the sleeping server is stopped in order
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "unknown" and "no answer within 2 s" in a.note
        assert j.get_json(a.args_ref)["value"] == big


def test_the_call_timeout_is_ten_minutes_unless_changed():
    from synartesis.proxy.main import USAGE, parse_call_timeout
    assert parse_call_timeout(None) == 600
    assert parse_call_timeout("0") is None and parse_call_timeout("none") is None
    assert parse_call_timeout("2.5") == 2.5
    assert "default: 600" in USAGE


def test_a_bad_call_timeout_is_a_usage_error(tmp_path):
    manifest, journal, store, argv = _kv(tmp_path)
    bad = [*argv[:argv.index("--")], "--call-timeout", "-1", *argv[argv.index("--"):]]
    import subprocess
    done = subprocess.run(bad, input=b"", capture_output=True, timeout=30)
    assert done.returncode == 2 and b"call timeout" in done.stderr



@pytest.mark.parametrize("flag, value, says", [
    ("--call-timeout", "abc", "--call-timeout: 'abc' is not a number of seconds"),
    ("--read-timeout", "soon", "--read-timeout: 'soon' is not a number of seconds"),
    ("--max-snapshot-bytes", "8M", "--max-snapshot-bytes: '8M' is not a whole number of bytes"),
])
def test_an_option_value_that_is_not_a_number_names_the_option(tmp_path, flag, value, says):
    """`--call-timeout abc` said "could not convert string to float: 'abc'", Python's words,
    naming no option (new user round 31, 9d)."""
    manifest, journal, store, argv = _kv(tmp_path)
    bad = [*argv[:argv.index("--")], flag, value, *argv[argv.index("--"):]]
    import subprocess
    done = subprocess.run(bad, input="", capture_output=True, timeout=30, text=True)
    assert done.returncode == 2, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"synartesis: {says}"), first
    assert "could not convert" not in done.stderr and "invalid literal" not in done.stderr, done.stderr


def test_a_call_timeout_in_the_environment_that_is_not_a_number_names_the_variable(tmp_path):
    manifest, journal, store, argv = _kv(tmp_path)
    import subprocess
    done = subprocess.run(argv, input="", capture_output=True, timeout=30, text=True,
                          env={**os.environ, "SYNARTESIS_CALL_TIMEOUT": "ten"})
    assert done.returncode == 2 and "$SYNARTESIS_CALL_TIMEOUT: 'ten' is not a number of seconds" in done.stderr, done.stderr


def test_a_call_that_is_not_json_rpc_2_is_answered_at_once_and_never_sent(tmp_path, fs_server):
    """Adversarial review 16, F7: NaN in the arguments, an id of NaN or 1e400, a byte order
    mark, no "jsonrpc": Python's reader took them, so the call was journalled and sent; the
    filesystem server dropped each one, the client waited out its call timeout, the row said
    unknown, and the proxy wrote "id":NaN, which no JSON reader takes. Each is refused at once
    under the request's id where it has a usable one (null where not), and nothing is sent."""
    root, argv = files_proxy(tmp_path, fs_server)
    target = str(root / "a.txt")
    frames = [
        ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":'
         '{"path":"%s","content":"x","n":NaN}}}' % target, 1),
        ('{"jsonrpc":"2.0","id":NaN,"method":"tools/call","params":{"name":"write_file","arguments":'
         '{"path":"%s","content":"x"}}}' % target, None),
        ('{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"read_text_file","arguments":'
         '{"path":"%s"}}}' % target, None),
        ('\ufeff{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":'
         '{"path":"%s","content":"x"}}}' % target, None),
        ('{"id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"%s","content":"x"}}}'
         % target, 5),
        # adversarial review 19, F9: past 2**53 the server dropped it, and the lane waited its timeout
        ('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"write_file","arguments":'
         '{"path":"%s","content":"x"}}}' % target, 9007199254740993),
        ('{"jsonrpc":"2.0","id":-9007199254740993,"method":"tools/call","params":{"name":"read_text_file",'
         '"arguments":{"path":"%s"}}}' % target, -9007199254740993),
    ]
    with RawSession(argv) as s:
        s.handshake()
        for text, want_id in frames:
            s.send(text.encode("utf-8"))
            line = s.read_line(timeout=10)
            reply = json.loads(line)  # valid JSON: no NaN written back
            assert "error" in reply and reply["id"] == want_id, (text[:60], line[:200])
        assert s.request(9, "ping", timeout=10)["result"] == {}
        s.close()
    assert not (root / "a.txt").exists()


def test_a_frame_that_repeats_a_member_name_is_refused_under_its_id_and_never_sent(tmp_path, fs_server):
    """Adversarial review 18, F4: a tools/call with two ``arguments`` (or two ``content``)
    members was journalled as Python read it (the last one wins) and forwarded as it came, so a
    server that keeps the first would have run another call than the one journalled and gated.
    Such a frame is refused at once, under its id, and nothing of it is journalled or sent."""
    root, argv = files_proxy(tmp_path, fs_server)
    target = str(root / "a.txt")
    frames = [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":'
        '{"path":"%s","content":"x"},"arguments":{"path":"%s","content":"y"}}}' % (target, target),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":'
        '{"path":"%s","content":"x","content":"y"}}}' % target,
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_text_file","name":"write_file",'
        '"arguments":{"path":"%s","content":"y"}}}' % target,
    ]
    with RawSession(argv) as s:
        s.handshake()
        for n, text in enumerate(frames, 1):
            s.send(text.encode("utf-8"))
            reply = json.loads(s.read_line(timeout=10))
            assert reply["id"] == n and reply["error"]["code"] == -32700, reply
            assert "repeats a name" in reply["error"]["message"]
        assert s.request(9, "ping", timeout=10)["result"] == {}
        s.close()
    assert not (root / "a.txt").exists()
    if (tmp_path / "j.db").exists():  # the journal opens at the first call it records
        with open_journal(tmp_path / "j.db") as j:
            assert [a for r in j.list_runs() for a in j.actions(r.id)] == []


def test_a_batch_with_an_element_that_is_not_an_object_is_refused_and_never_sent(tmp_path):
    """Adversarial review 17, F6: `[]`, `[ ]` and `[[{tools/call}]]` were forwarded raw and never
    answered: a tools/call nested in an array reached the server unjournalled, and a real server
    dropped the frame, so the client waited for ever. Every such batch is answered (an empty
    one with a single error object, as JSON-RPC 2.0 answers it, not an array; each element that is not an object with id null, each request under its own id,
    a fractional id included) and none of it is sent."""
    manifest, journal, state, argv = kv_proxy(tmp_path, seed={"k": "old"})
    put = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"put","arguments":{"key":"k","value":"x"}}}'
    cases = [("[]", None), ("[ \t ]", None), ("[[" + put + "]]", [None]),
             ('[[' + put + '],{"jsonrpc":"2.0","id":11,"method":"ping"}]', [None, 11]),
             ('[{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"get","arguments":{"key":"k"}}}]', [1.5])]
    with RawSession(argv, env={**os.environ, "FAKE_LOG": str(tmp_path / "calls.log")}) as s:
        s.handshake()
        for text, ids in cases:
            s.send(text.encode())
            reply = json.loads(s.read_line(timeout=10))
            if ids is None:  # an empty batch: one error object, not an array (JSON-RPC 2.0 §6; round 31, 10g)
                assert isinstance(reply, dict) and reply["id"] is None, (text, reply)
                reply = [reply]
            else:
                assert isinstance(reply, list) and [r["id"] for r in reply] == ids, (text[:40], reply)
            assert all(r["error"]["code"] == -32600 for r in reply)
        assert s.request(20, "ping", timeout=10)["result"] == {}
        s.close()
    assert json.loads(state.read_text()) == {"k": "old"}
    assert not (tmp_path / "calls.log").exists() or "put" not in (tmp_path / "calls.log").read_text()


def test_an_empty_batch_is_answered_with_one_object_in_the_several_servers_form_too():
    """JSON-RPC 2.0 §6: `[]` is answered with a single error object (new user round 31, 10g)."""
    from synartesis.proxy.engine import batch_refusal
    for why in (None, "synartesis: batches are not supported when several servers share one proxy"):
        reply = batch_refusal([], why)
        assert isinstance(reply, dict) and reply["id"] is None and reply["error"]["code"] == -32600, reply
