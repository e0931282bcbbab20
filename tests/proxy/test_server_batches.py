"""A server that answers inside a JSON-RPC batch (MCP has had none since 2025-06-18; an older
server may still send one). The proxy passes the batch on as it is; before, it did not look
inside, so a read's row was recorded at EOF as "the server exited before answering" and a
write waited out its call timeout (new user round 9, left at stop 20). Now the answer in the
batch settles its call: each row holds what the server said."""

from __future__ import annotations

import json
import os

from helpers import FAKE_SERVER, RawSession, kv_proxy, open_journal, synartesis_argv


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


def test_a_server_batch_reaches_the_client_in_the_multi_server_form(tmp_path):
    """Several servers behind one proxy: a child's batch was dropped whole (stop 20's leftover),
    so the client never got its answer and the write waited out its timeout. Now it is passed
    on and settles its calls, as in the single-server form, and the other child is unaffected."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"k": "old"}))
    new.write_text(json.dumps({"k": "n"}))
    rules = "".join(f"""  - {{match: "{s}.get", class: readonly}}
  - match: "{s}.put"
    class: reversible
    snapshot: {{tool: {s}.get, args: {{key: "$.key"}}, absent_when: ["no such key"]}}
    inverse: {{tool: {s}.put, args: {{key: "$.key", value: "$snapshot.value"}}}}
""" for s in ("legacy", "plain"))
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(f"""version: 1
servers:
  legacy:
    command: {json.dumps(FAKE_SERVER[0])}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(old)])}
    env: {{FAKE_BATCH_ANSWERS: "1"}}
  plain:
    command: {json.dumps(FAKE_SERVER[0])}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(new)])}
tools:
{rules}""")
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal))
    with RawSession(argv) as s:
        s.handshake()
        got = []
        for n, (tool, args) in enumerate((("legacy__get", {"key": "k"}), ("legacy__put", {"key": "k", "value": "w"}),
                                          ("plain__put", {"key": "k", "value": "p"})), 1):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            got.append(json.loads(s.read_line(timeout=20)))
        s.close()
    assert isinstance(got[0], list) and got[0][0]["id"] == 1, got
    assert got[0][0]["result"]["structuredContent"] == {"key": "k", "value": "old"}
    assert isinstance(got[1], list) and got[1][0]["id"] == 2 and not got[1][0]["result"].get("isError"), got
    assert got[2]["id"] == 3 and not got[2]["result"].get("isError"), got
    assert json.loads(old.read_text()) == {"k": "w"} and json.loads(new.read_text()) == {"k": "p"}
    with open_journal(journal) as j:
        rows = [a for r in j.list_runs() for a in j.actions(r.id)]
        assert sorted((a.server, a.tool, a.status) for a in rows) == [
            ("legacy", "get", "applied"), ("legacy", "put", "applied"), ("plain", "put", "applied")], rows


def test_a_server_batch_holding_a_number_python_cannot_read_settles_its_call(tmp_path):
    """Adversarial review 15, F3: a batch whose answer holds a 5,000-digit integer (valid JSON,
    refused by json.loads) was passed on but settled nothing: each call waited out its call
    timeout, the client then got a second answer to the same id, and the rows said `unknown`.
    Now each element is read by itself and settles its call, in both forms."""
    manifest, journal, store, argv = kv_proxy(tmp_path, seed={"k": "old"})
    argv = [*argv[:argv.index("--")], "--call-timeout", "20", *argv[argv.index("--"):]]
    env = {**os.environ, "FAKE_BATCH_ANSWERS": "1", "FAKE_BIG_NUMBER": "1"}
    with RawSession(argv, env=env) as s:
        s.handshake()
        got = []
        for n, (tool, args) in enumerate((("get", {"key": "k"}), ("put", {"key": "k", "value": "new"})), 1):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            got.append(s.read_line(timeout=10))
        assert s.request(3, "ping", timeout=10)["result"] == {}  # nothing stalled, no second answer before it
        s.close()
    assert [g[:24] for g in got] == [b'[{"jsonrpc": "2.0", "id"'] * 2 and b'"id": 1' in got[0] and b'"id": 2' in got[1], got
    assert json.loads(store.read_text()) == {"k": "new"}
    with open_journal(journal) as j:
        rows = j.actions(j.list_runs()[0].id)
        assert [(a.tool, a.status) for a in rows] == [("get", "applied"), ("put", "applied")], [(a.tool, a.status, a.note) for a in rows]


def test_the_multi_server_form_settles_a_batch_holding_a_number_python_cannot_read(tmp_path):
    state = tmp_path / "s.json"
    state.write_text(json.dumps({"k": "old"}))
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(f"""version: 1
servers:
  legacy:
    command: {json.dumps(FAKE_SERVER[0])}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(state)])}
    env: {{FAKE_BATCH_ANSWERS: "1", FAKE_BIG_NUMBER: "1"}}
  other:
    command: {json.dumps(FAKE_SERVER[0])}
    args: {json.dumps([*FAKE_SERVER[1:], "--state", str(tmp_path / "o.json")])}
tools:
  - {{match: "*.get", class: readonly}}
  - match: "legacy.put"
    class: reversible
    snapshot: {{tool: legacy.get, args: {{key: "$.key"}}, absent_when: ["no such key"]}}
    inverse: {{tool: legacy.put, args: {{key: "$.key", value: "$snapshot.value"}}}}
""")
    argv = synartesis_argv("proxy", "--manifest", str(manifest), "--journal", str(journal), "--call-timeout", "20")
    with RawSession(argv) as s:
        s.handshake()
        got = []
        for n, (tool, args) in enumerate((("legacy__get", {"key": "k"}), ("legacy__put", {"key": "k", "value": "w"})), 1):
            s.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            got.append(s.read_line(timeout=10))
        assert s.request(3, "ping", timeout=10)["result"] == {}
        s.close()
    assert all(g.startswith(b"[") and b"9" * 5000 in g for g in got), [g[:80] for g in got]
    assert json.loads(state.read_text()) == {"k": "w"}
    with open_journal(journal) as j:
        rows = [a for r in j.list_runs() for a in j.actions(r.id)]
        assert sorted((a.tool, a.status) for a in rows) == [("get", "applied"), ("put", "applied")], rows
