"""Undo's report says what it did (issue 10 item 2, issue 9 item 1): a run in which nothing was
reverted never becomes rolled_back, nothing to undo exits 1, and no report says nothing was
sent after it sent something."""

from __future__ import annotations

import json

from helpers import FAKE_POLICY, RawSession, cli, kv_proxy, open_journal


def _undo(manifest, journal, *extra):
    return cli("undo", "--manifest", str(manifest), "--journal", str(journal), *extra)


def test_a_run_that_only_holds_a_call_is_not_reported_rolled_back(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "agent"})  # the agent's write, in its own run
        s.close()
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "delete", {"key": "k1"})["isError"]  # a newer run that only holds a call
        s.close()
    with open_journal(journal) as j:
        held_run, write_run = j.list_runs()
    named = _undo(manifest, journal, held_run.id[:8])
    assert named.returncode == 1, named.stdout
    assert "nothing to undo in run" in named.stdout and "never applied (awaiting approval)" in named.stdout
    assert "rolled_back" not in named.stdout
    # bare undo: the session's newest action is the held call, but its write is what it undoes
    bare = _undo(manifest, journal)
    assert bare.returncode == 0, bare.stdout
    assert json.loads(state.read_text())["k0"] == "v0"
    with open_journal(journal) as j:
        assert j.find_run(held_run.id).status == "complete"  # nothing of it was reverted
        assert j.find_run(write_run.id).status == "rolled_back"
    again = _undo(manifest, journal)
    assert again.returncode == 1 and "nothing can be undone" in again.stdout


def test_an_inverse_that_was_sent_is_never_reported_as_nothing_sent(tmp_path):
    wrong = FAKE_POLICY.replace('inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}',
                                'inverse: {tool: kv.put, args: {key: "$.key", value: "not what was there"}}', 1)
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=wrong)
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "agent"})
        s.close()
    out = _undo(manifest, journal, "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 1 and report["halted"]["reason"] == "the inverse did not restore the captured state"
    assert report["sent"] == 1
    text = _undo(manifest, journal, "--force", "--yes")  # the same again, as text
    assert "nothing was sent" not in text.stdout and "nothing was changed" not in text.stdout
