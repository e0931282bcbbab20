"""Held calls in the journal: twins reused, decisions resolve one way, approvals spent once."""

from __future__ import annotations

from synartesis.journal import Journal



def test_two_deciders_resolve_one_way(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    held, _ = j.hold(run, "s", "t", "irreversible", None, {"a": 1}, "why")
    other = Journal.open(j.path)
    assert j.decide(held.id, True, "ana") is True
    assert other.decide(held.id, False, "bo", "no") is False
    assert other.get_action(held.id).decided_by == "ana"


def test_a_retry_reuses_the_waiting_row_and_an_approval_is_spent_once(new_journal):
    j = new_journal()
    a, b = j.begin_run("t", {}), j.begin_run("t", {})
    held, reused = j.hold(a, "s", "send", "irreversible", None, {"to": "x"}, "why")
    again, reused2 = j.hold(b, "s", "send", "irreversible", None, {"to": "x"}, "why")
    assert (reused, reused2, again.id) == (False, True, held.id)
    j.decide(held.id, True, "ana")
    carrier = j.take_approval(b, "s", "send", "irreversible", None, {"to": "x"})
    assert carrier is not None and carrier.run_id == b and carrier.decided_by == "ana"
    assert j.take_approval(b, "s", "send", "irreversible", None, {"to": "x"}) is None
    assert j.get_action(held.id).label == "used"


def test_decisions_are_read_from_the_chain(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    yes, _ = j.hold(run, "s", "a", "irreversible", None, {}, "why")
    no, _ = j.hold(run, "s", "b", "irreversible", None, {}, "why")
    j.decide(yes.id, True, "ana")
    j.decide(no.id, False, "bo", "not now")
    j.take_approval(run, "s", "a", "irreversible", None, {})  # the approved row moves on
    j.mark_applied(yes.id, result={}, inverse=None, verify=None, post=None, note=None)
    got = [(kind, row.id, row.decided_by) for _, kind, row in j.decisions()]
    assert got == [("approved", yes.id, "ana"), ("denied", no.id, "bo")]
    assert j.decisions([j.begin_run("other", {})]) == []
