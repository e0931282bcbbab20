"""A new user's findings (round 5), on the shipped memory policy and the real memory server:
- the `--force` preview of a drifted `create_entities` said "would end rolled_back" where
  `--force --yes` then ended `compensated (unverified: 1)` (nothing was captured before the
  create, so its inverse cannot be read back as verified): the preview now says what the real
  run will;
- `redo` said plain `redone` when a step was only sent again, not read back (`create_relations`
  has no read): it now says `redone (unverified: N)`."""
import json

from helpers import cli, memory_run


def test_the_force_preview_ends_as_the_forced_undo_does(tmp_path, memory_server):
    mem, env, j = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "Grace", "entityType": "person", "observations": []}]})])
    lines = [json.loads(x) for x in mem.read_text().splitlines() if x.strip()]
    lines[0]["observations"] = ["edited by hand"]  # a person's edit: drift
    mem.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    preview = json.loads(cli("undo", "--force", "--json", *j, env=env).stdout)
    forced = cli("undo", "--force", "--yes", "--json", *j, env=env)
    done = json.loads(forced.stdout)
    assert forced.returncode == 0, forced.stdout
    assert preview["forcePreview"] and preview["statusText"] == done["statusText"], (preview["statusText"], done["statusText"])
    assert done["statusText"] == "compensated (unverified: 1)"


def test_redo_counts_the_calls_it_could_not_read_back(tmp_path, memory_server):
    mem, env, j = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []},
                                          {"name": "B", "entityType": "t", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "knows"}]})])
    assert cli("undo", *j, env=env).returncode == 0
    plan = json.loads(cli("redo", "--dry-run", "--json", *j, env=env).stdout)
    redo = cli("redo", "--json", *j, env=env)
    done = json.loads(redo.stdout)
    sent_only = [s for s in done["steps"] if s["kind"] == "redo" and s["outcome"] == "sent (unverified)"]
    assert sent_only, done["steps"]
    assert done["statusText"] == f"redone (unverified: {len(sent_only)})", done["statusText"]
    assert plan["statusText"] == done["statusText"], plan["statusText"]  # the dry run says the same
