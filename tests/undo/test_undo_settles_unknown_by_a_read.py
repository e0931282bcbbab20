"""A write whose outcome is unknown (its proxy was killed mid-call) is settled by a read of the
resource at undo time: as before the call, nothing is left to undo; as the call would leave it
(the rule declares ``post_state``), it applied and is reverted; anything else halts with both
states shown. A fake server is needed here: a real one answers before a kill can land mid-call."""
from __future__ import annotations

import json

from helpers import FAKE_POLICY, cli, kill_mid_slow_put, open_journal

DECLARED = FAKE_POLICY.replace('''  - match: "kv.slow_put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}''', '''  - match: "kv.slow_put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
    post_state: {key: "$.key", value: "$.value"}''', 1)
assert DECLARED != FAKE_POLICY


def _killed_mid_call(tmp_path, policy):
    manifest, journal, state = kill_mid_slow_put(tmp_path, policy)
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "x"}
    return manifest, journal, state


def _cli(manifest, journal, *args):
    return cli(*args, "--manifest", str(manifest), "--journal", str(journal))


def _statuses(journal):
    with open_journal(journal) as j:
        [run] = j.list_runs()
        return [a.status for a in j.actions(run.id)], j.audit(run.id).ok


def test_an_unknown_write_found_as_the_call_leaves_it_is_undone(tmp_path):
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    assert _statuses(journal) == (["applied", "pending"], True)  # pending until the run is found stale
    preview = _cli(manifest, journal, "undo", "--dry-run")
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "as the call would have left it: it applied" in preview.stdout
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "x"}  # a dry run sends nothing
    done = _cli(manifest, journal, "undo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}
    assert _statuses(journal) == (["rolled_back", "rolled_back"], True)


def test_an_unknown_write_found_as_before_the_call_needs_no_undo(tmp_path):
    manifest, journal, state = _killed_mid_call(tmp_path, FAKE_POLICY)  # no post_state: the prior still settles it
    state.write_text(json.dumps({"k0": "agent", "k1": "v1"}))  # a person put k1 back by hand
    done = _cli(manifest, journal, "undo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "as it was before the call: nothing to undo" in done.stdout
    assert "already in the state this inverse would produce" not in done.stdout
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}  # the older write is undone too
    assert _statuses(journal) == (["rolled_back", "rolled_back"], True)


def test_an_unknown_write_found_in_a_third_state_halts_with_every_state_shown(tmp_path):
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    state.write_text(json.dumps({"k0": "agent", "k1": "someone"}))
    halted = _cli(manifest, journal, "undo")
    assert halted.returncode == 1, halted.stdout + halted.stderr
    out = " ".join(halted.stdout.split())
    assert "neither as it was before the call nor as the call would have left it" in out
    assert '"value":"v1"' in out and '"value":"x"' in out and '"value":"someone"' in out
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "someone"}  # nothing was changed
    assert _statuses(journal) == (["applied", "unknown"], True)  # left for a person, still unknown
    forced = _cli(manifest, journal, "undo", "--force", "--yes")  # after looking: step over it, undo the rest
    assert "stepped over because of --force" in forced.stdout, forced.stdout + forced.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "someone"}


def test_without_a_declared_post_state_a_changed_resource_still_halts(tmp_path):
    manifest, journal, state = _killed_mid_call(tmp_path, FAKE_POLICY)
    halted = _cli(manifest, journal, "undo")
    assert halted.returncode == 1, halted.stdout + halted.stderr
    out = " ".join(halted.stdout.split())
    assert "a read of the resource does not settle whether it applied" in out
    assert '"value":"v1"' in out and '"value":"x"' in out and "undo --force" in out
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "x"}
    assert _statuses(journal) == (["applied", "unknown"], True)


def test_force_still_settles_by_a_read_and_steps_over_only_what_it_cannot(tmp_path):
    """Adversarial review 10: `--force` stepped over an unknown write a read would have settled
    (applied, so reverted without it) and left the agent's write in place."""
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    state.write_text(json.dumps({"k0": "someone", "k1": "x"}))  # k1 as the call left it; k0 drifted
    forced = _cli(manifest, journal, "undo", "--force", "--yes")
    assert "as the call would have left it: it applied" in forced.stdout, forced.stdout + forced.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}  # both put back (k0 overwritten: --force)
    (tmp_path / "third").mkdir()
    manifest2, journal2, state2 = _killed_mid_call(tmp_path / "third", DECLARED)
    state2.write_text(json.dumps({"k0": "agent", "k1": "someone"}))  # a third state: --force steps over it
    forced = _cli(manifest2, journal2, "undo", "--force", "--yes")
    assert "a read does not settle it; stepped over because of --force" in " ".join(forced.stdout.split()), forced.stdout
    assert json.loads(state2.read_text()) == {"k0": "v0", "k1": "someone"}


def test_redo_after_a_settled_unknown_says_what_it_knows(tmp_path):
    """Adversarial review 10: redo of a write whose unknown outcome undo settled by a read said
    "the resource differs from what the first call left", but no read of what the first call
    left is on record (it was killed before its read-back): it says that instead."""
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    assert _cli(manifest, journal, "undo").returncode == 0
    redone = _cli(manifest, journal, "redo")
    assert redone.returncode == 0, redone.stdout + redone.stderr
    out = " ".join(redone.stdout.split())
    assert "differs from what the first call left" not in out, out
    assert "the first call's outcome was unknown until an undo settled it by a read" in out, out
    assert "R E S U L T redone (unverified: 1)" in out, out  # new user round 10: the step is tagged so
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "x"}
    assert _statuses(journal) == (["applied", "applied"], True)


def test_a_halt_on_an_unknown_outcome_offers_what_can_be_done_not_the_way_the_run_left_it(tmp_path):
    """Adversarial review 10: the halt's menu offered "put the resource back the way the run left
    it", the one state nobody knows for a call whose outcome is unknown."""
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    state.write_text(json.dumps({"k0": "agent", "k1": "someone"}))
    halted = _cli(manifest, journal, "undo")
    out = " ".join(halted.stdout.split())
    assert halted.returncode == 1 and "neither as it was before the call" in out, out
    assert "the way the run left it" not in out, out
    assert "put the resource back as it was before the call (shown above)" in out, out
    # and doing it works as the menu says: nothing to undo there, the older write undone
    state.write_text(json.dumps({"k0": "agent", "k1": "v1"}))
    again = _cli(manifest, journal, "undo")
    assert again.returncode == 0 and "nothing to undo" in again.stdout, again.stdout
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "v1"}


def test_a_halt_no_read_can_settle_offers_only_force_after_a_look(tmp_path):
    manifest, journal, state = _killed_mid_call(tmp_path, FAKE_POLICY.replace(
        '''    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}''', '''    inverse: {tool: kv.delete, args: {key: "$.key"}}''').replace("class: reversible", "class: compensable"))
    halted = _cli(manifest, journal, "undo")
    out = " ".join(halted.stdout.split())
    assert halted.returncode == 1 and "outcome unknown" in out, out
    assert "the way the run left it" not in out and "No read can settle this outcome. Two ways on" in out, out


def test_an_unknown_write_whose_resource_a_newer_run_changed_since_is_not_settled_by_a_read(tmp_path):
    # new user round 10: another session's write left the very state this call would have; the
    # read said "it applied" and the undo removed that session's write. A read cannot tell them apart.
    from helpers import FAKE_SERVER, RawSession, proxy_argv
    manifest, journal, state = _killed_mid_call(tmp_path, DECLARED)
    with open_journal(journal) as j:
        [first] = j.list_runs()
    with RawSession(proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])) as s:
        s.handshake()
        s.call(1, "put", {"key": "k1", "value": "x"})  # a newer run writes what the unknown call would have
    done = _cli(manifest, journal, "undo", first.id)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a newer call still in effect changed the same resource since" in done.stdout
    assert "so a read cannot tell whether this call applied" in done.stdout
    assert json.loads(state.read_text()) == {"k0": "agent", "k1": "x"}  # nothing sent: the newer write stays
    forced = _cli(manifest, journal, "undo", first.id, "--force", "--yes")
    assert forced.returncode == 1 and "R E S U L T  partial" in forced.stdout, forced.stdout + forced.stderr
    assert json.loads(state.read_text()) == {"k0": "v0", "k1": "x"}  # stepped over and left; the older write undone


def test_a_halt_on_an_error_answer_no_read_settles_does_not_say_no_answer_was_recorded(tmp_path):
    from synartesis.undo.engine import unknown_halt

    class A:  # the two notes a row can carry (journal mark_unknown / mark_error_after_write)
        def __init__(self, note):
            self.note = note
    assert "no answer was recorded" in unknown_halt(A("outcome unknown: the client cancelled the call after it was sent"))
    err = unknown_halt(A("outcome unknown: the server reported an error and no read could tell whether it applied: boom"))
    assert "no answer was recorded" not in err and "answered with an error" in err
