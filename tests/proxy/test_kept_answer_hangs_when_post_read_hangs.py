"""Adversarial review, round 5 — A write with a verify read whose read-back is never answered: the write's answer is kept
back for ever, past --read-timeout (nothing waits on the read-back with its timeout while the
lane is idle, and the client will not send another call before it has this answer)."""
import os

from helpers import FAKE_SERVER, RawSession, proxy_argv

POLICY = """version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: readonly
  - match: "kv.put"
    class: compensable
    verify: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.delete, args: {key: "$.key"}}
"""


def test_a_write_is_answered_within_the_read_timeout_when_its_read_back_hangs(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(POLICY)
    state.write_text("{}")
    env = {**os.environ, "FAKE_HANG": "get"}
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--read-timeout", "1")
    with RawSession(argv, env=env) as s:
        s.handshake()
        # --read-timeout 1: the answer is due within a second or two of the put
        result = s.call(1, "put", {"key": "a", "value": "x"}, timeout=8)
        assert not result.get("isError")
