"""Crash paths and shutdown: a server dying mid-call leaves the action `unknown`; calls in
flight at client EOF are all answered; the proxy follows its child out; many proxies share a
journal that does not exist yet without losing a call."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import helpers
from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, cli, open_journal, proxy_argv


def _setup(tmp_path, policy=FAKE_POLICY):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(policy)
    state = tmp_path / "kv.json"
    state.write_text(json.dumps({"k": "old"}))
    return manifest, journal, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])


def test_server_dying_mid_call_leaves_the_action_unknown_and_the_proxy_exits(tmp_path):
    manifest, journal, argv = _setup(tmp_path)
    env = dict(os.environ, FAKE_CRASH_ON_CALL="2", FAKE_CRASH_AFTER_APPLY="1")  # call 1 is the pre-read
    s = RawSession(argv, env=env)
    s.handshake()
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "put", "arguments": {"key": "k", "value": "new"}}})
    started = time.monotonic()
    code = s.proc.wait(timeout=15)
    assert time.monotonic() - started < 10
    assert code == 3  # the child's exit code
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        [a] = j.actions(run.id)
        assert a.status == "unknown" and "outcome unknown" in a.note
        assert run.status == "complete"
    # undo refuses to walk past it, twice in a row with the same words
    outs = [cli("undo", "--manifest", str(manifest), "--journal", str(journal)) for _ in range(2)]
    assert [o.returncode for o in outs] == [1, 1]
    assert "halted at sequence 1" in outs[0].stdout and "outcome unknown" in outs[0].stdout
    assert outs[0].stdout.split("\n", 3)[3] == outs[1].stdout.split("\n", 3)[3]
    assert json.loads((tmp_path / "kv.json").read_text()) == {"k": "new"}


def test_client_eof_with_calls_in_flight_answers_every_request(tmp_path):
    manifest, journal, argv = _setup(tmp_path)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "eof", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "put", "arguments": {"key": "k", "value": "v1"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "slow_put", "arguments": {"key": "k", "value": "v2", "delay": 0.3}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "get", "arguments": {"key": "k"}}},
    ]
    data = b"".join(json.dumps(f).encode() + b"\n" for f in frames)
    done = helpers.run(argv, input=data, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    ids = sorted(json.loads(line)["id"] for line in done.stdout.splitlines())
    assert ids == [1, 2, 3, 4, 5]
    last = [json.loads(line) for line in done.stdout.splitlines() if json.loads(line)["id"] == 5][0]
    assert last["result"]["structuredContent"]["value"] == "v2"  # calls kept their order
    with open_journal(journal) as j:
        assert [a.status for a in j.actions(j.list_runs()[0].id)] == ["applied"] * 3


def test_proxy_exits_promptly_after_client_close(tmp_path):
    manifest, journal, argv = _setup(tmp_path)
    s = RawSession(argv)
    s.handshake()
    s.call(1, "get", {"key": "k"})
    started = time.monotonic()
    code = s.close(timeout=10)
    assert code == 0 and time.monotonic() - started < 5
    with open_journal(journal) as j:
        assert j.list_runs()[0].status == "complete"


def test_a_session_without_tool_calls_leaves_no_run(tmp_path):
    """Issue 10: health checks and tools/list probes are not runs; stderr says so instead."""
    manifest, journal, argv = _setup(tmp_path)
    s = RawSession(argv)
    s.handshake()
    assert s.request(1, "tools/list")["result"]["tools"]
    assert s.close(timeout=10) == 0
    assert "session ended without tool calls" in s.stderr_text()
    assert not journal.exists() or not open_journal(journal).list_runs()


def test_sigterm_stops_proxy_and_child(tmp_path):
    import signal
    manifest, journal, argv = _setup(tmp_path)
    s = RawSession(argv)
    s.handshake()
    s.call(1, "get", {"key": "k"})
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(timeout=10) is not None
    out = helpers.run(["pgrep", "-f", str(tmp_path / "kv.json")], capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_malformed_policy_never_runs(tmp_path):
    manifest, journal, argv = _setup(tmp_path, FAKE_POLICY + "  - match: kv.x\n    clas: readonly\n")
    done = helpers.run(argv, input=b"", capture_output=True, timeout=30)
    assert done.returncode == 2
    assert f"{manifest}:" in done.stderr.decode() and "clas" in done.stderr.decode()
    assert not journal.exists()


def _one_proxy(args):
    i, tmp_path, manifest, journal = args
    state = tmp_path / f"kv{i}.json"
    state.write_text(json.dumps({f"k{n}": "seed" for n in range(5)}))
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
    frames = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": f"agent-{i}", "version": "1"}}},
              {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    frames += [{"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                "params": {"name": "put", "arguments": {"key": f"k{n % 5}", "value": f"{i}-{n}"}}} for n in range(25)]
    data = b"".join(json.dumps(f).encode() + b"\n" for f in frames)
    done = helpers.run(argv, input=data, capture_output=True, timeout=240)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return done.returncode, answers, done.stderr.decode()


def test_32_proxies_start_together_on_a_new_journal_and_lose_nothing(tmp_path):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "fresh" / "journal.db"
    manifest.write_text(FAKE_POLICY)
    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(_one_proxy, [(i, tmp_path, manifest, journal) for i in range(32)]))
    for code, answers, err in results:
        assert code == 0, err
        ok = [a for a in answers if a.get("id", 0) >= 1 and a.get("result", {}).get("isError") is not True]
        assert len(answers) == 26
        assert len(ok) == 25, err
    with open_journal(journal) as j:
        runs = j.list_runs()
        assert len(runs) == 32 and all(r.status == "complete" for r in runs)
        for r in runs:
            acts = j.actions(r.id)
            assert [a.seq for a in acts] == list(range(1, 26))
            assert all(a.status == "applied" for a in acts)
            assert j.audit(r.id).ok
    mode = os.stat(journal).st_mode & 0o777
    assert mode == 0o600 and (os.stat(journal.parent).st_mode & 0o777) == 0o700
