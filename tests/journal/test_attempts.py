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
