"""Adversarial review, round 3, #7 — data loss (latent): a connection's _known_blobs (payloads it stored) is not invalidated by a
prune in another process, so the same text written again through that connection is referenced
but never stored: the new action's payload is missing (audit BROKEN, its undo cannot restore).
Found by a SIGKILL/prune stress where one writer connection spans runs; today's proxies hold one
run per connection, the console and any long-lived library user do not. Predates today (e6284d0)."""
from synartesis.journal import Journal


def test_a_payload_pruned_by_another_connection_is_stored_again_when_written_again(tmp_path):
    path = tmp_path / "j.db"
    text = "file text long enough to be a blob of its own. " * 100
    a = Journal.open(path, create=True)
    first = a.begin_run("one", {})
    a.record_action(first, "fs", "write_file", "reversible", None, {"content": text})
    a.end_run(first)
    b = Journal.open(path)
    assert b.prunable(b.find_run(first)) is None
    b.prune([first])
    b.close()
    second = a.begin_run("two", {})
    act = a.record_action(second, "fs", "write_file", "reversible", None, {"content": text})
    found = a.audit(second)
    assert found.ok, found.problems
    assert a.get_json(act.args_ref) == {"content": text}
    a.close()
