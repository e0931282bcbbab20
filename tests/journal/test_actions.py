"""Actions: a journal-wide order, and how a write the server answered with an error is settled."""

from __future__ import annotations

import json

import pytest





def test_actions_of_several_runs_interleave_in_journal_wide_order(new_journal):
    j = new_journal()
    a, b = j.begin_run("t", {}), j.begin_run("t", {})
    order = []
    for n in range(3):
        order.append(j.record_action(a, "files", "write_file", "reversible", None, {"n": n}).id)
        order.append(j.record_action(b, "memory", "create_entities", "compensable", None, {"n": n}).id)
    j.record_reads([{"run": a, "server": "files", "tool": "read", "args": {}, "status": "applied"},
                    {"run": b, "server": "memory", "tool": "read_graph", "args": {"q": "\ud800"}, "status": "failed",
                     "note": "the server said \ud800"}])
    assert j.audit(a).ok and j.audit(b).ok
    merged = j.actions_of([a, b])
    assert [x.id for x in merged[:6]] == order and [x.tool for x in merged[-2:]] == ["read", "read_graph"]
    assert [x.gseq for x in merged] == sorted(x.gseq for x in merged) and len({x.gseq for x in merged}) == 8
    assert j.get_json(merged[-1].args_ref) == {"q": "\ud800"}
    assert [x.seq for x in j.actions(a)] == [1, 2, 3, 4]  # the run's own order is unchanged


def test_the_journal_wide_order_survives_pruning(new_journal):
    j = new_journal()
    a = j.begin_run("t", {})
    top = j.record_action(a, "s", "t", "readonly", None, {}).gseq
    j.end_run(a)
    j.prune([a])
    b = j.begin_run("t", {})
    assert j.record_action(b, "s", "t", "readonly", None, {}).gseq == top + 1  # numbers are never reused


@pytest.mark.parametrize(("reread", "status", "words"), [
    ("unchanged", "failed", "the resource is unchanged"),
    ("changed", "applied", "but the resource changed"),
    ("unreadable", "unknown", "could not be read again"),
    (None, "unknown", "no read could tell"),
])
def test_an_error_after_a_write_is_settled_by_reading_again(new_journal, reread, status, words):
    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "crm", "update_customer", "reversible", None, {"id": "c1"}, prior="captured",
                        snapshot={"plan": "pro"}, verify={"server": "crm", "tool": "get", "args": {"id": "c1"}})
    inverse = [{"server": "crm", "tool": "update_customer", "args": {"id": "c1", "plan": "pro"}}]
    result = {"content": [{"type": "text", "text": "quota exceeded"}], "isError": True}
    got = j.mark_error_after_write(a.id, result=result, reread=reread, error="quota exceeded", inverse=inverse,
                                   verify={"server": "crm", "tool": "get", "args": {"id": "c1"}},
                                   post={"present": True, "value": {"plan": "free"}})
    row = j.get_action(a.id)
    assert got == status == row.status and words in row.note and "quota exceeded" in row.note
    assert j.get_json(row.result_ref) == result  # the error is kept
    assert (row.inverse_ref is not None) == (status == "applied")  # only a changed resource is undone
    assert j.audit(run).ok


def test_a_redo_reapplies_in_place_and_the_chain_follows(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "s", "put", "reversible", None, {"k": 1})
    j.mark_applied(a.id, result={"v": 1}, inverse=[{"server": "s", "tool": "put", "args": {"k": 0}}], verify=None,
                   post=None, note=None)
    assert j.set_action_status(a.id, "rolling_back", expect=("applied",))
    assert j.set_action_status(a.id, "rolled_back", reverted="verified")
    assert j.get_action(a.id).reverted == "verified"
    assert j.set_action_status(a.id, "pending", expect=("rolled_back",))
    assert not j.set_action_status(a.id, "pending", expect=("rolled_back",))  # a second redo loses the claim
    assert j.reapply(a.id, result={"v": 2}, inverse=[{"server": "s", "tool": "put", "args": {"k": 9}}], verify=None,
                     post=None, note="redone by ana")
    row = j.get_action(a.id)
    assert (row.status, row.reverted, j.get_json(row.result_ref)) == ("applied", None, {"v": 2})
    assert j.audit(run).ok


def test_reads_recorded_in_a_batch_chain_the_same_state_a_single_record_would(new_journal):
    from synartesis.canonical import call_key, canonical
    from synartesis.journal.chain import chain_texts
    from synartesis.journal.rows import action_state, event_text
    from synartesis.proxy.framing import parse_lenient
    from synartesis.proxy.pipeline import read_record

    j = new_journal()
    run = j.begin_run("t", {})
    frame = b'{"result":{"content":[{"type":"text","text":"' + b"x\\n" * 700 + b'"}]},"jsonrpc":"2.0","id":7}'
    digested = read_record({"answer": parse_lenient(frame)})["result"]
    reads = [
        {"args": {"path": "/a \"quoted\" \\ path"}, "status": "applied", "result": digested},
        {"args": {"path": "/ü/ñ.txt"}, "status": "applied", "result": {**digested, "preview": "é" * 10}},
        {"args": {"q": "\ud800"}, "status": "failed", "note": "the server said \ud800"},
        {"args": {"path": "/x"}, "status": "applied", "result": {"content": [{"type": "text", "text": "small"}]}},
        {"args": {"big": "y" * 5000}, "status": "unknown", "note": "outcome unknown", "rule": "files.read_*"},
        {"args": None, "status": "applied", "result": [1, {"k": None}]},
    ]
    j.record_reads([{"run": run, "server": "files", "tool": "read_text_file", **r} for r in reads])
    rows = j.actions(run)
    assert [a.status for a in rows] == [r["status"] for r in reads] and [a.seq for a in rows] == list(range(1, 7))
    assert j.audit(run).ok
    for a, r in zip(rows, reads):
        assert j.get_json(a.args_ref) == r["args"]
        assert j.get_json(a.result_ref) == r.get("result")
        assert a.call_key == call_key("files", "read_text_file", r["args"])
    # one chained event for the batch; what it holds for each read is the general path's text of its row
    kinds = [k for (k,) in j._all("SELECT kind FROM events WHERE run_id = ? ORDER BY id", (run,))]
    assert kinds == ["run.begin", "reads.record"]
    (data,) = j._one("SELECT data FROM events WHERE run_id = ? AND kind = 'reads.record'", (run,))
    entries = json.loads(event_text(data))["reads"]
    assert [aid for aid, _ in entries] == [a.id for a in rows]
    for a, (_, state), r in zip(rows, entries, reads):
        # the chain holds a note as it was written; the row keeps a lone surrogate escaped
        assert canonical(state) == chain_texts({**action_state(a), "note": r.get("note")})[0]
