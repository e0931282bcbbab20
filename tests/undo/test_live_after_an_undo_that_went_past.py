"""A new user's finding (round 16, #3): after a whole session was undone, `show --live` called
its delete_entities `drifted` ("changed since this run wrote it") and exited 1, though the
only change was the undo's own: it put the entity back, then undid the earlier
create_relations too, so the state before the delete (entity and relation) is not what the
undo left. An undone action whose earlier action on the same resource was undone too reads
`reverted`, naming that action."""

from __future__ import annotations

import json

from helpers import cli, memory_run


def test_live_says_reverted_when_an_earlier_call_on_the_resource_was_undone_too(tmp_path, memory_server):
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []},
                                          {"name": "Babbage", "entityType": "person", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "Ada", "to": "Babbage", "relationType": "knows"}]}),
        ("delete_entities", {"entityNames": ["Babbage"]})])
    done = cli("undo", *flags, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    live = cli("show", "--live", "--json", *flags, env=env)
    items = json.loads(live.stdout)["items"]
    states = {i["tool"]: i["state"] for i in items}
    assert states["memory.delete_entities"] == "reverted", items
    assert live.returncode == 0, live.stdout + live.stderr
