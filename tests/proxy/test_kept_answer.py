"""Adversarial review, round 5: a write whose post-state is read back keeps the server's answer
from the client until that read is answered (0a2d9f6). Two ways the answer was never sent:
- the read-back is never answered: nothing waited on it with its timeout while the lane was
  idle, and the client sends nothing else before it has this answer;
- two writes sent back to back (a client making parallel tool calls), the first one's read-back
  slower than --read-timeout: the lane gave up on it before sending the second write and
  forgot the read, and with it what was to release the first write's answer.
Each call gets exactly one answer, within about the read timeout. Fake kv server (a read that
hangs or is slow on purpose), real proxy."""
import json
import os
import sys
import time

from helpers import FAKE_SERVER, RawSession, proxy_argv, synartesis_argv


def _policy(delay: int | None = None) -> str:
    args = '{key: "$.key"' + (f", delay: {delay}" if delay else "") + "}"
    return ("version: 1\nservers:\n  kv: {}\ntools:\n"
            '  - match: "kv.get"\n    class: readonly\n'
            '  - match: "kv.put"\n    class: compensable\n'
            f'    verify: {{tool: kv.get, args: {args}, absent_when: ["no such key"]}}\n'
            '    inverse: {tool: kv.delete, args: {key: "$.key"}}\n')


def _answers_to_both(s: RawSession, name: str) -> list[dict]:
    """Send two puts back to back, read for 10 s, end the session; the answers to ids 1 and 2."""
    for n, key in ((1, "a"), (2, "b")):
        s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": {"key": key, "value": "x"}}})
    end = time.monotonic() + 10  # both reads are answered (3 s each) well within this
    while time.monotonic() < end:
        try:
            s.read_line(max(0.1, end - time.monotonic()))
        except TimeoutError:
            break
    assert s.proc.stdin is not None
    s.proc.stdin.close()  # and the session's end answers whatever was still owed
    try:
        while True:
            s.read_line(90)
    except (EOFError, TimeoutError):
        pass
    return [m for m in map(json.loads, s.lines) if m.get("id") in (1, 2) and "method" not in m]


def test_a_write_is_answered_within_the_read_timeout_when_its_read_back_hangs(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(_policy())
    state.write_text("{}")
    env = {**os.environ, "FAKE_HANG": "get"}
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--read-timeout", "1")
    with RawSession(argv, env=env) as s:
        s.handshake()
        result = s.call(1, "put", {"key": "a", "value": "x"}, timeout=8)  # --read-timeout 1: due within a second or two
        assert not result.get("isError")


def test_each_of_two_pipelined_writes_gets_one_answer_when_a_read_back_times_out(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(_policy(delay=3))
    state.write_text("{}")
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--read-timeout", "1")
    with RawSession(argv) as s:
        s.handshake()
        answers = _answers_to_both(s, "put")
    assert sorted(m["id"] for m in answers) == [1, 2], answers


def test_the_same_in_the_multi_server_form(tmp_path):
    """The policy form with two servers (``SERVER__tool`` names)."""
    state, other = tmp_path / "kv.json", tmp_path / "kv2.json"
    state.write_text("{}")
    other.write_text("{}")
    servers = (f"  kv:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps([FAKE_SERVER[1], '--state', str(state)])}\n"
               f"  kv2:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps([FAKE_SERVER[1], '--state', str(other)])}\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(_policy(delay=3).replace("  kv: {}\n", servers) + '  - match: "kv2.*"\n    class: readonly\n')
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal), "--read-timeout", "1")
    with RawSession(argv) as s:
        s.handshake()
        answers = _answers_to_both(s, "kv__put")
    assert sorted(m["id"] for m in answers) == [1, 2], answers
