"""A write's "applied", deferred to the lane's next transaction: committed with it in order,
or lost with a killed proxy and then honestly ``unknown``."""

from __future__ import annotations

from synartesis.journal import Journal


def _write(j, run, n):
    return j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": f"v{n}"},
                           prior="captured", snapshot={"content": f"v{n - 1}"})


def _apply_later(j, action_id, n):
    j.defer_applied(action_id, result={"content": []}, inverse=[{"server": "fs", "tool": "write_file",
                    "args": {"path": "p", "content": f"v{n - 1}"}}], verify=None,
                    post={"present": True, "value": {"content": f"v{n}"}}, note=None)


def test_a_deferred_applied_commits_with_the_next_record_and_its_event_comes_first(tmp_path):
    j = Journal.open(tmp_path / "j" / "journal.db", create=True)
    run = j.begin_run("t", {})
    first = _write(j, run, 1)
    _apply_later(j, first.id, 1)
    other = Journal.open(tmp_path / "j" / "journal.db")
    assert other.get_action(first.id).status == "pending"  # not committed yet
    second = _write(j, run, 2)
    assert other.get_action(first.id).status == "applied" and other.get_action(first.id).inverse_ref
    kinds = [k for k, a in other.conn.execute("SELECT kind, action_id FROM events WHERE action_id IS NOT NULL ORDER BY id")]
    assert kinds == ["action.record", "action.applied", "action.record"]
    assert other.get_action(second.id).status == "pending"
    _apply_later(j, second.id, 2)
    j.flush()
    assert other.get_action(second.id).status == "applied" and j.deferred == 0
    assert other.audit(run).ok
    other.close()
    j.close()


def test_a_proxy_killed_before_the_deferred_applied_commits_leaves_it_pending_then_unknown(tmp_path):
    path = tmp_path / "j" / "journal.db"
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    a = _write(j, run, 1)
    _apply_later(j, a.id, 1)
    j.db.close()  # killed: the connection goes without committing what waited
    later = Journal.open(path)
    assert later.get_action(a.id).status == "pending"
    later.close_run(run, "its proxy is gone")
    assert later.get_action(a.id).status == "unknown" and later.audit(run).ok
    later.close()
