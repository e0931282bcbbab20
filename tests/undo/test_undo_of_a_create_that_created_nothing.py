"""A create whose answer names nothing it created (the memory server's create_entities of an
entity that already exists answers {"entities": []}) has nothing to undo: `show` says so instead
of `undo: memory.delete_entities {"entityNames":[]}`, and undo sends nothing for it, counts it
as already reverted and goes on. New user round 15, #7. Real memory server, shipped policy."""

from __future__ import annotations

import json

from helpers import cli, memory_run, open_journal

from synartesis.journal.rows import acts_on_nothing

ADA = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}


def test_a_create_that_created_nothing_is_nothing_to_undo(tmp_path, memory_server):
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [ADA]}),
        ("create_entities", {"entities": [ADA]})])   # already there: the server creates nothing
    show = cli("show", *flags, env=env)
    assert show.returncode == 0, show.stdout + show.stderr
    assert '"entityNames":[]' not in show.stdout.replace(" ", ""), show.stdout
    assert "nothing to undo (its answer names nothing it changed)" in show.stdout, show.stdout
    undo = cli("undo", "--json", *flags, env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    report = json.loads(undo.stdout)
    steps = {s["seq"]: s for s in report["steps"]}
    assert steps[2]["kind"] == "already-reverted" and steps[2]["reason"].startswith("nothing to undo"), steps
    assert steps[1]["kind"] == "revert", steps
    # step 1's delete is read back with nothing captured before it (compensated, unverified: 1);
    # step 2 adds nothing unverified: nothing was sent for it
    assert report["status"] in ("rolled_back", "compensated") and report["unverified"] <= 1, report
    assert steps[2].get("outcome") in (None, ""), steps[2]
    assert "Ada" not in mem.read_text()
    with open_journal(flags[-1]) as j:
        assert [a.status for a in j.actions(j.list_runs()[0].id)] == ["rolled_back", "rolled_back"]


def test_acts_on_nothing_only_for_every_argument_an_empty_list():
    empty = [{"server": "m", "tool": "delete_entities", "args": {"entityNames": []}}]
    assert acts_on_nothing(empty, "none")
    # an empty list from the snapshot is a state to put back (tags that were []), not nothing
    assert not acts_on_nothing([{"server": "m", "tool": "set_tags", "args": {"tags": []}}], "captured")
    assert not acts_on_nothing([{"server": "m", "tool": "delete_entities", "args": {"entityNames": ["A"]}}], "none")
    assert not acts_on_nothing([{"server": "m", "tool": "x", "args": {"names": [], "path": "/a"}}], "none")
    assert not acts_on_nothing([{"server": "m", "tool": "x", "args": {}}], "none")
    assert not acts_on_nothing([{"server": "m", "tool": "x", "args": {"a": []}}, {"server": "m", "tool": "y", "args": {"b": [1]}}], "none")
    assert not acts_on_nothing(None, "none") and not acts_on_nothing([], "none")
