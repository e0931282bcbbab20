"""Adversarial review 30, F1 — a payload stored ahead (``store_prepared``, while the write's
pre-read is at the server) has no row pointing at it until the record transaction commits. A
prune by another connection in that window collects it. SQLite notices the prune (its epoch
counter) and stores the payload again; PostgreSQL skipped that check ("a proxy's connection
holds one run, whose payloads no prune can take"), which no longer holds for a payload stored
ahead of its row: the row then points at a payload that is gone (audit BROKEN, undo cannot
restore). Both backends."""

from __future__ import annotations

import pytest

from synartesis.journal import Journal

TEXT = "file text long enough to be a blob of its own\n" * 40
VERIFY = {"server": "fs", "tool": "read_text_file", "args": {"path": "p"}, "absent_when": ["ENOENT"]}


@pytest.mark.parametrize("earlier", [False, True], ids=["first-write", "after-a-write-and-a-prune"])
def test_a_payload_stored_ahead_and_pruned_elsewhere_before_its_row_is_stored_again(journal_at, earlier):
    where = journal_at()
    a = Journal.open(where, create=True)
    old = a.begin_run("old", {})
    a.end_run(old)
    run = a.begin_run("t", {})
    if earlier:  # this connection has seen a prune already and written since: no first-time check helps
        gone = a.begin_run("gone", {})
        a.end_run(gone)
        b = Journal.open(where)
        b.prune([gone])
        b.close()
        a.record_prepared(a.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "q", "content": TEXT}),
                          prior="absent")
    args = {"path": "p", "content": f"{TEXT}new"}
    prep = a.prepare_action(run, "fs", "write_file", "reversible", None, args, verify=VERIFY)
    a.store_prepared(prep)  # the lane, while the pre-read is at the server
    b = Journal.open(where)
    b.prune([old])  # another process: collects every payload no row points at, this one too
    b.close()
    act = a.record_prepared(prep, prior="captured", snapshot={"content": TEXT}, carry=False)
    found = a.audit(run)
    assert found.ok, found.problems
    assert a.get_json(act.args_ref) == args
    a.close()


def test_audit_says_a_payload_that_is_gone_is_missing_not_altered(new_journal):
    """F6: a row pointing at a payload that is not stored (deleted by hand, or F1's race) was
    reported as 'unreadable (altered after it was written)'."""
    j = new_journal()
    run = j.begin_run("t", {})
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": TEXT})
    assert a.args_ref and j.conn.execute("SELECT count(*) FROM blobs").fetchone()[0]
    j.conn.execute("DELETE FROM blobs")
    j.conn.commit()
    found = j.audit(run)
    assert not found.ok and any("missing" in p for p in found.problems), found.problems
