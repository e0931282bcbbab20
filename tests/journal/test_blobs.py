"""Payloads: stored once by content hash, compressed, round-tripped exactly, collected after prune."""

from __future__ import annotations





def test_large_payloads_are_stored_once(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    text = "the same file text, long enough to be its own blob. " * 400
    a = j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": text})
    j.set_prior(a.id, "captured", {"content": text})
    j.mark_applied(a.id, result={}, inverse=[{"server": "fs", "tool": "write_file", "args": {"content": text}}],
                   verify=None, post={"present": True, "value": {"content": text}}, note=None)
    stored = j.conn.execute("SELECT count(*) FROM blobs WHERE size >= ?", (len(text),)).fetchone()[0]
    assert stored == 1
    total = j.conn.execute("SELECT sum(length(data)) FROM blobs").fetchone()[0]
    assert total < len(text) / 4  # compressed
    assert j.get_json(j.get_action(a.id).post_ref)["value"]["content"] == text
    j.close()


def test_a_json_value_that_looks_like_our_marker_round_trips(new_journal):
    j = new_journal()
    run = j.begin_run("t", {})
    tricky = {"$synartesis.blob": "not-a-hash", "nested": [{"$synartesis.lit": 1}], "s": "\ud800 lone"}
    a = j.record_action(run, "s", "t", "readonly", None, tricky)
    assert j.get_json(a.args_ref) == tricky
    j.close()


def test_prune_deletes_whole_runs_their_sessions_and_unreferenced_payloads(new_journal):
    j = new_journal()
    keep, gone = j.begin_run("keep", {}), j.begin_run("gone", {})
    shared = "text both runs wrote. " * 200
    only_gone = "text only the pruned run wrote. " * 200
    j.record_action(keep, "s", "w", "reversible", None, {"c": shared})
    j.record_action(gone, "s", "w", "reversible", None, {"c": shared, "d": only_gone})
    j.end_run(keep)
    j.end_run(gone)
    assert j.prunable(j.find_run(gone)) is None
    j.prune([gone])
    assert [r.id for r in j.list_runs()] == [keep]
    sizes = {r[0] for r in j.conn.execute("SELECT size FROM blobs")}
    assert len(shared.encode()) in sizes and len(only_gone.encode()) not in sizes
    assert j.conn.execute("SELECT count(*) FROM events WHERE run_id = ?", (gone,)).fetchone()[0] == 0
    assert j.audit(keep).ok
