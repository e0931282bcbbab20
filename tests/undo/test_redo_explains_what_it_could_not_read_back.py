"""A new user's finding (round 6): `redo` ended `redone (unverified: 1)` with no word on why,
where undo's `compensated (unverified: N)` has a paragraph naming the calls and the reason. A
redo now says which calls were sent again without a read back, and why. Shipped memory policy
(`create_relations` declares no read), real memory server, real proxy."""

from __future__ import annotations

from helpers import cli, memory_run


def test_redo_says_which_calls_it_could_not_read_back_and_why(tmp_path, memory_server):
    _, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []},
                                          {"name": "B", "entityType": "t", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "k"}]})])
    assert cli("undo", *flags, env=env).returncode == 0
    done = cli("redo", *flags, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert "R E S U L T redone (unverified: 1)" in text, text
    assert ("1 call (memory.create_relations) was sent again but could not be checked by reading the resource "
            "back (its rule declares no read of the resource), so marked unverified: check by hand.") in text, text
