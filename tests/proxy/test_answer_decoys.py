"""Issue 11 (relaylean): a server's answer is routed by the id at its two ends, and a frame that
ends like an answer but is not one (a ``method`` in the middle, a later ``id`` that parsers keep,
a key spelled with ``\\u`` escapes) never settles a call it does not answer: a write and its
reads wait for their real answers (checked on the relay thread), a plain read is recorded
``unknown`` (checked on the journal thread, after it was routed), and the client gets every
frame as the server sent it."""

from __future__ import annotations

import json
import os

import pytest
from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, open_journal, proxy_argv

from synartesis.proxy.pipeline import UNSURE_ANSWER


@pytest.mark.parametrize("pad", [0, 2 << 20], ids=["small", "over-1MiB"])
@pytest.mark.parametrize("decoy", ["method", "later_id", "escaped"])
def test_a_frame_that_only_ends_like_an_answer_settles_no_call(tmp_path, decoy, pad):
    manifest, journal, store = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    store.write_text(json.dumps({"k": "old"}))
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(store)])
    with RawSession(argv, env=dict(os.environ, FAKE_DECOY=decoy, FAKE_DECOY_PAD=str(pad))) as s:
        s.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test-client", "version": "1"}})
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        put = s.request(1, "tools/call", {"name": "put", "arguments": {"key": "k", "value": "new"}})["result"]
        got = s.request(2, "tools/call", {"name": "get", "arguments": {"key": "k"}})["result"]
        s.close()
    assert put["structuredContent"] == {"ok": True, "key": "k"}  # the real answer, not the decoy
    assert got["structuredContent"] == {"key": "k", "value": "new"}
    # every decoy reached the client as the server wrote it: the call's, and those of our own
    # reads (the put's pre-read and read-back) when parsed they are no answer of ours either
    decoys = [line for line in s.lines if b"decoy" in line]
    assert len(decoys) == 4 and all(line.endswith(b"}") and json.loads(line) for line in decoys)
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        write, read = j.actions(run.id)
        assert write.status == "applied" and j.get_json(write.snapshot_ref)["value"] == "old"
        assert read.status == "unknown" and read.note == UNSURE_ANSWER
        assert j.audit(run.id).ok
