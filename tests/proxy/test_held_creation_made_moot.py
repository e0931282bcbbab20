"""A new user's finding (round 15, #1): a new file's write was held as a creation; a person
then made the file by hand and the agent's identical retry went through without an approval
(what it writes existed by then). The held row stayed `gated` for ever: `list` counted a held
call, `approve` still offered it with a reason that was no longer true, and `prune` kept its
run ("it holds a call waiting for approval"). The retry that went through settles it: the
held row becomes `failed` (never sent) and names the action that was sent. A journal written
before that (a held row with a later sent twin) is settled by `prune` and the held-call
listings."""

from __future__ import annotations

import json

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def _new_file_write(tmp_path, fs_server):
    """(root, proxy argv, journal, CLI flags, a write_file of a file that does not exist yet)."""
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    journal = tmp_path / "j.db"
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]
    return root, argv, journal, flags, {"path": str(root / "new.txt"), "content": "agent\n"}


def _held_then_sent(tmp_path, fs_server):
    root, argv, journal, flags, call = _new_file_write(tmp_path, fs_server)
    with RawSession(argv) as s:
        s.handshake()
        held = s.call(1, "write_file", call)
        assert held.get("isError") and "holding this call" in json.dumps(held), held
        (root / "new.txt").write_text("a person made it\n")  # now the write replaces something
        sent = s.call(2, "write_file", call)
        assert not sent.get("isError"), sent
    assert (root / "new.txt").read_text() == "agent\n"
    return root, journal, flags


def test_the_sent_retry_settles_the_held_call(tmp_path, fs_server):
    root, journal, flags = _held_then_sent(tmp_path, fs_server)
    with open_journal(journal) as j:
        [run] = j.list_runs()
        acts = j.actions(run.id)
        assert [a.status for a in acts] == ["failed", "applied"], [(a.status, a.note) for a in acts]
        assert acts[0].note.startswith("never sent") and acts[1].id[:8] in acts[0].note
        assert j.list_gated() == []
    held = cli("approve", "--all", *flags)
    assert "nothing" in (held.stdout + held.stderr).lower(), held.stdout + held.stderr
    pruned = cli("prune", run.id[:8], "--yes", *flags)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    with open_journal(journal) as j:
        assert j.list_runs() == []


def test_prune_settles_a_held_call_a_sent_twin_made_moot(tmp_path, fs_server):
    """An older journal: the held row is still `gated` though its twin went through."""
    root, journal, flags = _held_then_sent(tmp_path, fs_server)
    with open_journal(journal) as j:
        [run] = j.list_runs()
        first = j.actions(run.id)[0]
        with j._tx():  # as a journal written before the settling existed left it
            j._q("UPDATE actions SET status = 'gated', note = 'would create it' WHERE id = ?", (first.id,))
        assert [h.id for h, _ in j.superseded_holds()] == [first.id]
    pruned = cli("prune", run.id[:8], "--yes", *flags)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    with open_journal(journal) as j:
        assert j.list_runs() == []


def test_an_unspent_approval_of_the_call_that_went_through_unheld_is_withdrawn(tmp_path, fs_server):
    """Adversarial review 17, F2: the held creation was approved, then the file was made by hand
    and the identical call went through unheld; the approval stayed unspent, and the agent's
    next identical write within the hour (after the person deleted the file) spent it silently,
    out of the journal's order, so undo later recreated the deleted file. It is withdrawn."""
    root, argv, journal, flags, call = _new_file_write(tmp_path, fs_server)
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "write_file", call).get("isError")  # held: a creation
        with open_journal(journal) as j:
            [held] = j.list_gated()
        assert cli("approve", held.id[:8], "--no-read", "--by", "ana", *flags).returncode == 0
        (root / "new.txt").write_text("by hand\n")
        assert not s.call(2, "write_file", call).get("isError")  # replaces something: unheld
        (root / "new.txt").unlink()
        again = s.call(3, "write_file", call)
        assert again.get("isError") and "holding this call" in json.dumps(again), again  # held again, not carried
    with open_journal(journal) as j:
        first = j.get_action(held.id)
        assert first.status == "failed" and "withdrawn" in (first.note or ""), (first.status, first.note)
