"""A new user's round 7: undoing memory's `create_entities` printed a bare `[unverified]` beside
a read back that showed the entity gone. Nothing was captured before the create, so that read
has nothing to be compared with; the tag now says so, and a step with no read at all says that
instead. Shipped memory policy, real memory server, real proxy."""

from __future__ import annotations

import json

from helpers import cli, memory_run

GRACE = {"name": "Grace", "entityType": "person", "observations": ["navy"]}


def test_each_unverified_step_says_why_beside_it(tmp_path, memory_server):
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [GRACE, {"name": "Ada", "entityType": "person", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "Ada", "to": "Grace", "relationType": "knows"}]})])
    done = cli("undo", *flags, env=env)
    text = " ".join(done.stdout.split())
    assert done.returncode == 0, text
    assert ("memory.create_relations no read declared, so drift could not be ruled out "
            "[unverified: no read declared]") in text, text
    assert ("memory.create_entities state matches; applying inverse "
            "[unverified: nothing captured before the call to compare with]") in text, text
    assert "read back now: " in text and "R E S U L T compensated (unverified: 2)" in text, text
    assert not [x for x in mem.read_text().splitlines() if x.strip()]
    plain = json.loads(cli("list", "--json", *flags, env=env).stdout)[0]
    assert plain["statusText"] == "compensated (unverified: 2)"


def test_an_unverified_count_that_includes_an_earlier_only_undo_says_which_step_that_was(tmp_path, memory_server):
    # new user round 10, #5: the RESULT counted a step an earlier `--only` sent unverified,
    # and no line of this undo said so
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [GRACE]}),
        ("create_relations", {"relations": [{"from": "Grace", "to": "Grace", "relationType": "knows"}]})])
    run = json.loads(cli("list", "--json", *flags, env=env).stdout)[0]["runs"][0]["id"]
    first = cli("undo", run, "--only", "2", *flags, env=env)
    assert first.returncode == 0, first.stdout
    done = cli("undo", run, *flags, env=env)
    text = " ".join(done.stdout.split())
    assert done.returncode == 0 and "R E S U L T compensated (unverified: 2)" in text, text
    assert ("1 of the 2 unverified was reverted by an earlier undo (step 2; `synartesis history` lists it), "
            "not by this one") in text, text
    # it does not guess how the earlier undo came to revert it (new user round 22, #6: the guess
    # named "an --only, or an undo that was interrupted" after a run-level undo that halted)
    assert "interrupted" not in text, text
