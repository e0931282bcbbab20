"""A write recorded from parts prepared while its pre-read is at the server (issue 11 item 4):
the same row, payloads and chained event as the general path, blobs stored even when another
connection pruned them meanwhile, and every row honest when the transaction fails."""

from __future__ import annotations

import pytest

from synartesis.errors import JournalError
from synartesis.journal import Journal

TEXT = "file text long enough to be a blob of its own\n" * 40
VERIFY = {"server": "fs", "tool": "read_text_file", "args": {"path": "p"}, "absent_when": ["ENOENT"]}


def _same_but_numbering(a, b) -> bool:
    skip = {"id", "seq", "gseq", "idempotency_key", "created_at", "updated_at"}
    return all(getattr(a, f) == getattr(b, f) for f in a.__dataclass_fields__ if f not in skip)


def test_a_prepared_write_is_the_row_payloads_and_event_record_action_makes(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    args = {"path": "p", "content": TEXT + "new"}
    general = j.record_action(run, "fs", "write_file", "reversible", "fs.write_file", args, prior="captured",
                              snapshot={"content": TEXT}, verify=VERIFY)
    prep = j.prepare_action(run, "fs", "write_file", "reversible", "fs.write_file", args, verify=VERIFY)
    lean = j.record_prepared(prep, prior="captured", snapshot={"content": TEXT})
    assert lean.id == prep.id and lean.seq == general.seq + 1 and lean.gseq == general.gseq + 1
    assert _same_but_numbering(general, lean)
    stored = j.get_action(lean.id)
    assert stored == lean
    assert j.get_json(stored.args_ref) == args and j.get_json(stored.snapshot_ref) == {"content": TEXT}
    assert j.get_json(stored.verify_ref) == VERIFY
    absent = j.record_prepared(j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "q"}),
                               prior="absent")
    assert absent.prior == "absent" and absent.snapshot_ref is None and absent.verify_ref is None
    found = j.audit(run)
    assert found.ok, found.problems


def test_a_prepared_snapshot_with_a_lone_surrogate_reads_back_and_audits(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    odd = "caf\udce9 " + TEXT  # a read of a file that is not UTF-8, as a server may send it
    a = j.record_prepared(j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": "x"}),
                          prior="captured", snapshot={"content": odd})
    assert j.get_json(a.snapshot_ref) == {"content": odd}
    found = j.audit(run)
    assert found.ok, found.problems


def test_a_prepared_blob_pruned_by_another_connection_meanwhile_is_stored_again(tmp_path):
    # SQLite: on PostgreSQL a proxy's connection holds one run, whose payloads no prune takes
    # (JournalBase._forget_pruned_blobs); test_known_blobs_after_prune_elsewhere is the same for put_json
    path = tmp_path / "j.db"
    a = Journal.open(path, create=True)
    first = a.begin_run("one", {})
    a.record_action(first, "fs", "write_file", "reversible", None, {"content": TEXT})
    a.end_run(first)
    second = a.begin_run("two", {})
    prep = a.prepare_action(second, "fs", "write_file", "reversible", None, {"content": TEXT})  # known: not packed
    b = Journal.open(path)
    b.prune([first])  # takes the blob the prepared row points at
    b.close()
    act = a.record_prepared(prep, prior="absent")
    assert a.get_json(act.args_ref) == {"content": TEXT}
    found = a.audit(second)
    assert found.ok, found.problems
    a.close()


def _write(j, run, n):
    prep = j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"{TEXT}{n}"},
                            verify=VERIFY)
    return j.record_prepared(prep, prior="captured", snapshot={"content": f"{TEXT}{n - 1}"}, carry=False)


def _apply_later(j, action_id, n):
    j.defer_applied(action_id, result={"content": [{"type": "text", "text": "ok"}]},
                    inverse=[{"server": "fs", "tool": "write_file", "args": {"path": "p", "content": f"{TEXT}{n - 1}"}}],
                    verify=..., post={"present": True, "value": {"content": f"{TEXT}{n}"}}, note=None)


def _fail_action_inserts(j, monkeypatch):
    real = j.db.execute

    def execute(text, params=()):
        if text.startswith("INSERT INTO actions"):
            raise j.db.driver_error("injected: the disk is full")
        return real(text, params)
    monkeypatch.setattr(j.db, "execute", execute)


def _second_write_prepared(path):
    """A journal at ``path`` with one write whose outcome waits (deferred), and a second write
    prepared with that outcome, as the lane has them while the second's pre-read is at the
    server: (journal, run, first row, the second's preparation)."""
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    first = _write(j, run, 1)
    _apply_later(j, first.id, 1)
    prep = j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"{TEXT}2"},
                            verify=VERIFY)
    j.prepare_deferred()  # the lane does it while the pre-read is at the server
    return j, run, first, prep


@pytest.mark.parametrize("carry", [False, True])
def test_a_burst_whose_record_transaction_fails_leaves_every_row_honest(tmp_path, monkeypatch, carry):
    """The next write is not recorded (so never sent); the earlier write's outcome, prepared
    while the failed write's pre-read was out, either commits later (``carry=False``, the
    proxy's lane) or is lost with the transaction and the write becomes ``unknown`` when the
    run closes: never ``applied`` without its row's state, never a row without its event."""
    path = tmp_path / "j" / "journal.db"
    j, run, first, prep = _second_write_prepared(path)
    with monkeypatch.context() as m:
        _fail_action_inserts(j, m)
        with pytest.raises(JournalError):
            j.record_prepared(prep, prior="captured", snapshot={"content": f"{TEXT}1"}, carry=carry)
    other = Journal.open(path)
    assert [a.id for a in other.actions(run)] == [first.id]  # no row for the write that was not sent
    assert other.get_action(first.id).status == "pending"
    third = _write(j, run, 3)  # the journal works again: the next write is recorded
    j.flush()
    status = other.get_action(first.id).status
    if carry:
        assert j.deferred == 0 and status == "pending"  # lost with the failed transaction
        j.close_run(run, "done")
        assert other.get_action(first.id).status == "unknown"  # undo settles it by a read
    else:
        assert status == "applied" and other.get_action(first.id).post_ref  # committed after all
    assert other.get_action(third.id).seq > first.seq
    found = other.audit(run)
    assert found.ok, found.problems
    other.close()
    j.close()


def _blob_inserts(j, monkeypatch) -> list:
    seen: list = []
    real = j.db.execute

    def execute(text, params=()):
        if text.startswith("INSERT INTO blobs"):
            seen.append(params[0])
        return real(text, params)
    monkeypatch.setattr(j.db, "execute", execute)
    return seen


def test_payloads_stored_ahead_leave_the_record_transaction_the_row_and_its_event(tmp_path, monkeypatch):
    """store_prepared (the lane, while the pre-read is at the server) commits the write's
    payloads and the earlier write's deferred outcome; the record transaction then stores no
    payload, and the rows, payloads and chain are what they were without it."""
    path = tmp_path / "j.db"
    j, run, first, prep = _second_write_prepared(path)
    seen = _blob_inserts(j, monkeypatch)
    j.store_prepared(prep)
    assert j.deferred == 0 and seen  # the outcome and the new content, committed
    other = Journal.open(path)
    assert other.get_action(first.id).status == "applied"
    assert [a.id for a in other.actions(run)] == [first.id]  # no row yet: the call is not sent
    seen.clear()
    second = j.record_prepared(prep, prior="captured", snapshot={"content": f"{TEXT}1"}, carry=False)
    assert seen == []  # every payload the row points at was committed before it
    assert other.get_json(other.get_action(second.id).args_ref) == {"path": "p", "content": f"{TEXT}2"}
    j.store_prepared(j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"{TEXT}2"}))
    assert seen == []  # nothing new and nothing deferred: no transaction at all
    found = other.audit(run)
    assert found.ok, found.problems
    other.close()
    j.close()


def test_a_payload_stored_ahead_and_pruned_before_its_row_is_stored_again(tmp_path):
    """Stored ahead, a payload has no row pointing at it until the record commits: a prune by
    another process in between collects it, and the record transaction stores it again."""
    path = tmp_path / "j.db"
    a = Journal.open(path, create=True)
    old = a.begin_run("old", {})
    a.end_run(old)
    run = a.begin_run("t", {})
    prep = a.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"{TEXT}new"},
                            verify=VERIFY)
    a.store_prepared(prep)
    b = Journal.open(path)
    b.prune([old])  # collects every payload no row points at: the one stored ahead too
    assert b.conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == 0
    b.close()
    act = a.record_prepared(prep, prior="absent", carry=False)
    assert a.get_json(act.args_ref) == {"path": "p", "content": f"{TEXT}new"}
    found = a.audit(run)
    assert found.ok, found.problems
    a.close()


def test_a_failed_store_ahead_leaves_the_record_to_store_the_payloads(tmp_path, monkeypatch):
    path = tmp_path / "j.db"
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    prep = j.prepare_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"{TEXT}x"})
    real = j.db.execute

    def execute(text, params=()):
        if text.startswith("INSERT INTO blobs"):
            raise j.db.driver_error("injected: the disk is full")
        return real(text, params)
    with monkeypatch.context() as m:
        m.setattr(j.db, "execute", execute)
        with pytest.raises(JournalError):
            j.store_prepared(prep)
    act = j.record_prepared(prep, prior="absent")
    assert j.get_json(act.args_ref) == {"path": "p", "content": f"{TEXT}x"}
    found = j.audit(run)
    assert found.ok, found.problems
    j.close()
