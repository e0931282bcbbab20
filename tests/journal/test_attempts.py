"""Undo and redo attempts: one live attempt per run, a crashed one taken over, per-run outcomes."""

from __future__ import annotations

import sys

import helpers




def test_a_second_attempt_on_a_run_is_refused_while_the_first_lives(new_journal):
    j = new_journal()
    a, b, c = (j.begin_run("t", {}) for _ in range(3))
    first = j.begin_attempt([a, b], "ana", "undo", {"session": "s-1"})
    assert first is not None and set(first.rows) == {a, b}
    assert j.begin_attempt([b, c], "bo", "redo") is None  # b is taken
    assert j.begin_attempt([c], "bo", "redo") is not None
    j.finish_attempt(first, {a: "rolled_back", b: "compensated"}, {"status": "compensated"})
    assert j.begin_attempt([b], "bo") is not None
    rows = [u for u in j.attempt_rows([a, b]) if u.attempt == first.id]
    assert {u.run_id: u.status for u in rows} == {a: "rolled_back", b: "compensated"}
    assert all(u.scope == {"session": "s-1"} and u.kind == "undo" for u in rows)


def test_an_attempt_whose_process_is_gone_is_abandoned_and_taken_over(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    code = ("import sys; from synartesis.journal import Journal; "
            "Journal.open(sys.argv[1]).begin_attempt([sys.argv[2]], 'crashed')")
    helpers.run([sys.executable, "-c", code, str(j.path), run], check=True)
    taken = j.begin_attempt([run], "ana")
    assert taken is not None
    assert [u.status for u in j.undos(run)] == ["abandoned", "running"]
    assert j.audit(run).ok


def test_a_settled_step_is_one_chained_event_carrying_the_step_and_the_action_state(new_journal):
    import json

    from synartesis.journal.rows import event_text

    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "/p", "content": "é \ud800"},
                        prior="captured", snapshot={"content": "before"})
    j.mark_applied(a.id, result={"ok": True}, inverse=[{"server": "fs", "tool": "write_file", "args": {"path": "/p"}}],
                   verify={"server": "fs", "tool": "read", "args": {"path": "/p"}}, post={"present": True, "value": 1},
                   note=None)
    attempt = j.begin_attempt([run], "ana")
    assert j.set_action_status(a.id, "rolling_back", expect=("applied",))
    step = {"action": a.id, "seq": a.seq, "kind": "revert", "outcome": "restored (verified)", "reason": "state ✓"}
    j.attempt_step(attempt, run, step, {"status": "rolled_back", "note": "restored (verified)", "reverted": "verified"})
    lost = {**step, "kind": "skip"}  # its condition no longer holds: the step is an event of its own
    j.attempt_step(attempt, run, lost, {"status": "rolled_back", "note": "x", "expect": ("applied",)})
    j.finish_attempt(attempt, {run: "rolled_back"}, {"steps": [step]})
    events = j.conn.execute("SELECT kind, undo_id, data FROM events WHERE run_id = ? ORDER BY id", (run,)).fetchall()
    kinds = [k for k, _, _ in events]
    assert kinds[-4:] == ["action.rolling_back", "action.rolled_back", "undo.step", "undo.end"], kinds
    _, undo_id, data = events[-3]
    state = json.loads(event_text(data))
    assert state["step"] == step and state["status"] == "rolled_back" and undo_id == attempt.row(run)
    assert j.get_action(a.id).status == "rolled_back"
    assert j.audit(run).ok, j.audit(run).problems
    # the step rides in the event, it is not a column: an edited row is still found
    j.conn.execute("UPDATE actions SET reverted = 'found' WHERE id = ?", (a.id,))
    if j.db.name == "sqlite":
        j.conn.commit()
    assert any("differs" in p for p in j.audit(run).problems)
