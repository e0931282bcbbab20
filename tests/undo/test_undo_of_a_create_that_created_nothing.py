"""A create whose answer names nothing it created (the memory server's create_entities of an
entity that already exists answers {"entities": []}) has nothing to undo: `show` says so instead
of `undo: memory.delete_entities {"entityNames":[]}`, and undo sends nothing for it, counts it
as already reverted and goes on. New user round 15, #7. Real memory server, shipped policy."""

from __future__ import annotations

import json

from helpers import cli, memory_run, open_journal


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


def test_only_empty_lists_projected_from_the_result_are_nothing():
    """Told at record time from the rule's template (adversarial review 16, F3): an empty list
    that is a whole value ($result.previous, $snapshot.tags, a literal []) is a state to put
    back; only a projection over the result ($result.entities[].name) naming nothing is nothing."""
    from synartesis.policy import parse_policy
    from synartesis.proxy.pipeline import _created_nothing
    pol = parse_policy("""version: 1
servers: {m: {}}
tools:
  - {match: m.create, class: compensable, inverse: {tool: m.delete, args: {names: "$result.entities[].name"}}}
  - {match: m.set_prev, class: compensable, inverse: {tool: m.set, args: {tags: "$result.previous"}}}
  - {match: m.set_literal, class: compensable, inverse: {tool: m.set, args: {tags: []}}}
  - match: m.set_snap
    class: reversible
    snapshot: {tool: m.get}
    inverse: {tool: m.set, args: {tags: "$snapshot.tags"}}
  - {match: m.two, class: compensable, inverse: {tool: m.delete, args: {names: "$result.a[].n", path: "$.path"}}}
""", "p.yaml")
    empty = [{"server": "m", "tool": "delete", "args": {"names": []}}]
    assert _created_nothing(pol.rule_for("m", "create"), empty)
    assert not _created_nothing(pol.rule_for("m", "create"), [{"server": "m", "tool": "delete", "args": {"names": ["A"]}}])
    for tool in ("set_prev", "set_literal", "set_snap"):
        assert not _created_nothing(pol.rule_for("m", tool), [{"server": "m", "tool": "set", "args": {"tags": []}}]), tool
    assert not _created_nothing(pol.rule_for("m", "two"), [{"server": "m", "tool": "delete", "args": {"names": [], "path": []}}])


def test_a_create_of_nothing_before_a_delete_does_not_halt_the_undo(tmp_path, memory_server):
    """Adversarial review 16, F2: the delete's re-read claimed the next step ahead (rolling_back),
    and the create that created nothing then failed to settle from applied: the undo halted
    with "another undo is already working on this action" (the dry run said rolled_back)."""
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [ADA, {"name": "Carol", "entityType": "person", "observations": []}]}),
        ("create_entities", {"entities": [ADA]}),   # already there: creates nothing
        ("delete_entities", {"entityNames": ["Carol"]})])
    undo = cli("undo", *flags, env=env)
    assert undo.returncode == 0 and "another undo" not in undo.stdout, undo.stdout + undo.stderr
    assert "Ada" not in mem.read_text() and "Carol" not in mem.read_text()


def test_bare_undo_steps_past_a_session_whose_create_created_nothing(tmp_path, memory_server):
    """Adversarial review 16, F4: bare undo picked the newer session whose only call created
    nothing, reverted nothing and said rolled_back; the older session's Bob stayed."""
    import os

    from helpers import REPO, RawSession, proxy_argv
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text((REPO / "policies" / "memory.yaml").read_text())
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    argv = proxy_argv("memory", manifest, journal, memory_server)
    for name, entity in (("older", {"name": "Bob", "entityType": "person", "observations": []}), ("newer", ADA),
                         ("newest", ADA)):
        with RawSession(argv, env=dict(env, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            assert not s.call(1, "create_entities", {"entities": [entity]}).get("isError")
    # "newest" created nothing (Ada existed): undo skips it and undoes "newer" (Ada), then "older"
    first = cli("undo", *flags, env=env)
    assert first.returncode == 0 and "Ada" not in mem.read_text() and "Bob" in mem.read_text(), first.stdout
    second = cli("undo", *flags, env=env)
    assert second.returncode == 0 and "Bob" not in mem.read_text(), second.stdout
