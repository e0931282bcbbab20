"""Adversarial review, round 5 — Two writes sent back to back (as a client making parallel tool calls does); the first one's
read-back takes longer than --read-timeout. The lane waits for it before sending the second
write, gives up after the read timeout and forgets the read, and with it the callback that
was to release the first write's kept-back answer: the client never gets an answer to call 1,
not even when the session ends."""
import json
import time

from helpers import FAKE_SERVER, RawSession, proxy_argv

POLICY = """version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: readonly
  - match: "kv.put"
    class: compensable
    verify: {tool: kv.get, args: {key: "$.key", delay: 3}, absent_when: ["no such key"]}
    inverse: {tool: kv.delete, args: {key: "$.key"}}
"""


def test_each_of_two_pipelined_writes_gets_one_answer_when_a_read_back_times_out(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(POLICY)
    state.write_text("{}")
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--read-timeout", "1")
    with RawSession(argv) as s:
        s.handshake()
        for n, key in ((1, "a"), (2, "b")):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "put", "arguments": {"key": key, "value": "x"}}})
        end = time.monotonic() + 10  # both reads are answered (3 s each) well within this
        while time.monotonic() < end:
            try:
                s.read_line(max(0.1, end - time.monotonic()))
            except TimeoutError:
                break
        s.proc.stdin.close()  # and the session's end answers whatever was still owed
        try:
            while True:
                s.read_line(90)
        except (EOFError, TimeoutError):
            pass
    answers = [m for m in map(json.loads, s.lines) if m.get("id") in (1, 2) and "method" not in m]
    assert sorted(m["id"] for m in answers) == [1, 2], answers


def test_the_same_in_the_multi_server_form(tmp_path):
    """The policy form with two servers (``SERVER__tool`` names): call 1 is never answered."""
    import sys

    from helpers import synartesis_argv
    state, other = tmp_path / "kv.json", tmp_path / "kv2.json"
    state.write_text("{}")
    other.write_text("{}")
    servers = (f"  kv:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps([FAKE_SERVER[1], '--state', str(state)])}\n"
               f"  kv2:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps([FAKE_SERVER[1], '--state', str(other)])}\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(POLICY.replace("  kv: {}\n", servers) + '  - match: "kv2.*"\n    class: readonly\n')
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal), "--read-timeout", "1")
    with RawSession(argv) as s:
        s.handshake()
        for n, key in ((1, "a"), (2, "b")):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "kv__put", "arguments": {"key": key, "value": "x"}}})
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                s.read_line(max(0.1, end - time.monotonic()))
            except TimeoutError:
                break
        s.proc.stdin.close()
        try:
            while True:
                s.read_line(90)
        except (EOFError, TimeoutError):
            pass
    answers = [m for m in map(json.loads, s.lines) if m.get("id") in (1, 2) and "method" not in m]
    assert sorted(m["id"] for m in answers) == [1, 2], answers
