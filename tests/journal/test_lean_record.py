"""The record path's shortcuts (issue 11 item 4) give what the general code gives: an action row
built without its constructor, a remembered digest, a write inserted without its empty columns."""

from __future__ import annotations

from hashlib import sha256

from synartesis.journal.blobs import _DIGESTS_KEPT
from synartesis.journal.rows import ActionRow, action_from_row


def test_an_action_row_from_a_row_is_the_one_its_constructor_makes():
    row = tuple(f"v{k}" for k in range(26))
    made = action_from_row(row)
    assert made == ActionRow(*row) and repr(made) == repr(ActionRow(*row)) and hash(made) == hash(ActionRow(*row))
    assert made.qualified == "v3.v4" and made.gseq == "v24"
    older = action_from_row(row[:24])  # a row of another shape: the constructor's defaults
    assert older == ActionRow(*row[:24]) and older.gseq is None and older.reverted is None


def test_remembered_digests_are_the_texts_own_and_few(new_journal):
    j = new_journal()
    text = "line of a file\n" * 40
    first = j.payload_ref({"content": text})
    again = j.payload_ref({"content": "".join(["line of a file\n"] * 40)})  # equal, another object
    assert first == again and sha256(text.encode()).hexdigest() in first
    other = text[:-1] + "!"  # same length, one character changed
    assert sha256(other.encode()).hexdigest() in j.payload_ref({"content": other})
    for n in range(3 * _DIGESTS_KEPT):
        j.payload_ref({"content": f"{n} {text}"})
    assert len(j.__dict__["_digests"]) <= _DIGESTS_KEPT


def test_a_write_recorded_without_its_empty_columns_reads_back_as_recorded(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    pending = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p"}, prior="absent")
    held = j.record_action(run, "fs", "write_file", "irreversible", "fs.*", {"path": "q"}, status="gated",
                           note="held: needs approval")
    for a in (pending, held):
        assert j.get_action(a.id) == a
    assert pending.result_ref is None and pending.note is None and pending.decided_by is None
    assert j.get_action(held.id).note == "held: needs approval"
    found = j.audit(run)
    assert found.ok, found.problems
