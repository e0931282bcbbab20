"""A new user's round 7: undoing memory's `create_entities` printed `[unverified]` beside a read
back that showed the entity gone (nothing was captured before the create to compare with). The
shipped policy now pre-reads every name asked for, so the undo's re-read is checked against it
(the created entities gone, ones the server skipped as they were) and says verified; a step
with no read at all says why it is unverified. Real memory server, real proxy."""

from __future__ import annotations

import json

from helpers import cli, memory_run

GRACE = {"name": "Grace", "entityType": "person", "observations": ["navy"]}


def test_undoing_a_create_reads_it_back_against_the_pre_read(tmp_path, memory_server):
    (tmp_path / "mem.jsonl").write_text(json.dumps({"type": "entity", **GRACE}) + "\n")  # the person's own
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [GRACE, {"name": "Ada", "entityType": "person", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "Ada", "to": "Grace", "relationType": "knows"}]})])
    done = cli("undo", *flags, env=env)
    text = " ".join(done.stdout.split())
    assert done.returncode == 0, text
    assert "→ restored (verified)" in text and "nothing captured before the call" not in text, text
    assert "memory.create_relations no read declared, so drift could not be ruled out [unverified: no read declared]" in text, text
    assert "R E S U L T compensated (unverified: 1)" in text, text  # the relation's delete alone
    assert [json.loads(x)["name"] for x in mem.read_text().splitlines() if x.strip()] == ["Grace"]


def test_undoing_only_creates_ends_rolled_back(tmp_path, memory_server):
    _, env, flags = memory_run(tmp_path, memory_server, [("create_entities", {"entities": [GRACE]})])
    done = json.loads(cli("undo", "--json", *flags, env=env).stdout)
    assert done["statusText"] == "rolled_back" and done["steps"][0]["outcome"] == "restored (verified)", done
