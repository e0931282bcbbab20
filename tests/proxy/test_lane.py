"""The ordered tools/call lane: a queued call the client cancels is never sent; an in-flight one
it cancels is `unknown` and its answer still reaches the client; a signal while queued calls
drain after EOF ends the proxy at once; a write over a file larger than a frame the pumps parse
is snapshotted from its envelope-routed answer and undone exactly; a write's post-read is
answered before the next write is sent, even when the server answers reads out of order."""

from __future__ import annotations

import json
import signal
import time

from helpers import FAKE_POLICY, FS_POLICY, RawSession, cli, files_proxy, kv_logged, open_journal


def _call(mid, name, arguments):
    return {"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_a_queued_call_cancelled_before_it_was_sent_is_never_sent(tmp_path):
    manifest, journal, store, log, env, argv = kv_logged(tmp_path)
    with RawSession(argv, env=env) as s:
        s.handshake()
        s.send(_call(1, "slow_put", {"key": "k", "value": "slow", "delay": 1}))
        s.send(_call(2, "put", {"key": "k", "value": "never"}))
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        s.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        seen = [json.loads(s.read_line(timeout=20)).get("id") for _ in range(2)]
        assert sorted(seen) == [1, 3]
        assert s.call(4, "get", {"key": "k"})["structuredContent"]["value"] == "slow"
        s.close()
    assert "never" not in log.read_text()


def test_an_in_flight_write_the_client_cancels_is_unknown_and_its_answer_still_arrives(tmp_path):
    manifest, journal, store, log, env, argv = kv_logged(tmp_path)
    with RawSession(argv, env=env) as s:
        s.handshake()
        s.send(_call(1, "slow_put", {"key": "k", "value": "late", "delay": 1}))
        end = time.monotonic() + 20  # cancel once the server has it (not while it waits its turn)
        while time.monotonic() < end and not (log.exists() and "slow_put" in log.read_text()):
            time.sleep(0.02)
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        _, reply = s.wait_for(1, timeout=20)
        assert reply["result"]["structuredContent"]["ok"] is True
        s.close()
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "unknown" and "cancelled" in a.note


def test_a_signal_while_queued_calls_drain_ends_the_proxy_at_once(tmp_path):
    manifest, journal, store, log, env, argv = kv_logged(tmp_path)
    s = RawSession(argv, env=env)
    try:
        s.handshake()
        s.send(_call(1, "slow_put", {"key": "k", "value": "v", "delay": 60}))
        assert s.proc.stdin is not None
        s.proc.stdin.close()  # EOF: the proxy waits for the queued call (up to a minute)
        end = time.monotonic() + 20  # signal once the server has it (a busy machine may take a while)
        while time.monotonic() < end and not (log.exists() and "slow_put" in log.read_text()):
            time.sleep(0.02)
        started = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=20)
        assert time.monotonic() - started < 10
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(10)
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "unknown"


def test_a_write_over_a_file_too_big_to_parse_on_the_pumps_is_snapshotted_and_undone(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    big = root / "big.txt"
    original = "".join(f"line {i} of a long file, with words enough to fill it\n" for i in range(60000))  # ~3.3 MB
    big.write_text(original)
    with RawSession(argv) as s:
        s.handshake()
        r = s.call(1, "write_file", {"path": str(big), "content": "short now"}, timeout=60)
        assert r.get("isError") is not True, r
        s.close()
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "applied" and j.get_json(a.snapshot_ref)["content"] == original
    out = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode == 0, out.stdout + out.stderr
    assert big.read_text() == original


_SLOW_READ_POLICY = FAKE_POLICY.replace(
    'snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}\n    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}\n  - match: "kv.slow_put"',
    'snapshot: {tool: kv.get, args: {key: "$.key", delay: "$.readdelay"}, absent_when: ["no such key"]}\n'
    '    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}\n  - match: "kv.slow_put"')


def test_a_writes_post_read_is_answered_before_the_next_write_is_sent(tmp_path):
    # the first put's post-read is answered 0.8 s late, the second put's pre-read at once: were
    # the second put sent before the first post-read came back, that read would see its value
    manifest, journal, store, log, env, argv = kv_logged(tmp_path)
    manifest.write_text(_SLOW_READ_POLICY)
    with RawSession(argv, env=env) as s:
        s.handshake()
        assert s.call(1, "put", {"key": "k", "value": "first", "readdelay": 0})["structuredContent"]["ok"] is True
        s.send(_call(2, "put", {"key": "k", "value": "first!", "readdelay": 0.8}))
        s.wait_for(2, timeout=20)
        assert s.call(3, "put", {"key": "k", "value": "second", "readdelay": 0})["structuredContent"]["ok"] is True
        s.close()
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [a.status for a in acts] == ["applied"] * 3
        assert j.get_json(acts[1].post_ref) == {"present": True, "value": {"key": "k", "value": "first!"}}
        assert j.get_json(acts[2].snapshot_ref) == {"key": "k", "value": "first!"}
