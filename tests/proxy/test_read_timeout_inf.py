"""Adversarial review, round 6 — Round 6 (low): `--read-timeout inf` (or 1e10) passes the option check (`> 0`) but every read
then fails with OverflowError (threading waits cap at TIMEOUT_MAX ~9.2e9 s): each kept-back
write's read-back is journalled "post-state could not be captured: OverflowError('timestamp out
of range for platform time_t')", so undo can never check those writes for drift. The lane's
new kept_read() wait raises the same error out of _settle (an "internal error in tools/call").
Expected: either rejected at start (exit 2, as a non-positive value is) or treated as no limit."""
import os
import sqlite3

import pytest

from helpers import FAKE_SERVER, RawSession, proxy_argv

POLICY = ("version: 1\nservers:\n  kv: {}\ntools:\n"
          '  - match: "kv.get"\n    class: readonly\n'
          '  - match: "kv.put"\n    class: compensable\n'
          '    verify: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}\n'
          '    inverse: {tool: kv.delete, args: {key: "$.key"}}\n')


@pytest.mark.parametrize("rt", ["inf", "1e10"])
def test_a_huge_read_timeout_reads_back_or_is_refused(tmp_path, rt):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(POLICY)
    state.write_text("{}")
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--read-timeout", rt)
    with RawSession(argv, env=dict(os.environ)) as s:
        try:
            s.handshake()
        except (EOFError, TimeoutError):
            assert s.close() == 2  # refused at start: fine
            return
        assert not s.call(1, "put", {"key": "a", "value": "x"}).get("isError")
        s.close()
        err = s.stderr_text()
    c = sqlite3.connect(journal)
    [(note, post)] = c.execute("SELECT note, post_ref FROM actions").fetchall()
    c.close()
    print(err[-3000:])
    assert "internal error" not in err, err[-2000:]
    assert post is not None, note
