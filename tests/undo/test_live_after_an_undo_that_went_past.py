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


def test_live_says_drifted_when_the_resource_changed_after_the_undo(tmp_path):
    """Adversarial review 17, F3: put k0 twice, undo both, then a hand edit: show --live said
    the second put was "reverted ... back in the state before that call" and exited 0. It is
    drifted, against the state the undo left (v0), not the value the write left."""
    from helpers import RawSession, kv_proxy
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        s.handshake()
        for n, v in enumerate(("A0", "A1"), 1):
            assert not s.call(n, "put", {"key": "k0", "value": v}).get("isError")
    assert cli("undo", *flags).returncode == 0
    live = json.loads(cli("show", "--live", "--json", *flags).stdout)
    assert [i["state"] for i in live["items"]] == ["superseded", "reverted"], live  # 1: written again by 2
    data = json.loads(state.read_text())
    data["k0"] = "hand"
    state.write_text(json.dumps(data))
    out = cli("show", "--live", "--json", *flags)
    items = json.loads(out.stdout)["items"]
    assert out.returncode == 1 and [i["state"] for i in items] == ["superseded", "drifted"], items
    assert items[1]["expected"]["value"]["value"] == "v0", items  # the state the undo left
