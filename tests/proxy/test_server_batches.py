"""A server that answers inside a JSON-RPC batch (MCP has had none since 2025-06-18; an older
server may still send one). The proxy passes the batch on as it is; before, it did not look
inside, so a read's row was recorded at EOF as "the server exited before answering" and a
write waited out its call timeout (new user round 9, left at stop 20). Now the answer in the
batch settles its call: each row holds what the server said."""

from __future__ import annotations

import json
import os

from helpers import RawSession, kv_proxy, open_journal


def test_an_answer_inside_a_server_batch_settles_its_call(tmp_path):
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    with RawSession(argv, env={**os.environ, "FAKE_BATCH_ANSWERS": "1"}) as s:
        s.handshake()
        got = []
        for n, (tool, args) in enumerate((("get", {"key": "k"}), ("put", {"key": "k", "value": "new"})), 1):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            got.append(json.loads(s.read_line(timeout=20)))
        s.close()
    assert [b[0]["id"] for b in got] == [1, 2] and all(isinstance(b, list) and len(b) == 1 for b in got), got  # as sent
    assert got[0][0]["result"]["structuredContent"] == {"key": "k", "value": "old"}
    assert json.loads(store.read_text()) == {"k": "new"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        rows = j.actions(run.id)
        assert [(a.tool, a.status) for a in rows] == [("get", "applied"), ("put", "applied")], [(a.tool, a.status, a.note) for a in rows]
        assert j.get_json(rows[0].result_ref)["structuredContent"] == {"key": "k", "value": "old"}
        assert j.get_json(rows[1].snapshot_ref)["value"] == "old"
        assert j.audit(run.id).ok
