"""A new user's findings (issue 10 follow-up): undo and redo tell the truth before and after.

Real proxy, real memory and filesystem servers, the shipped memory policy."""

from __future__ import annotations

import json
import re

from helpers import FS_MOVE_POLICY, FS_POLICY, GATED_FS_POLICY, RawSession, cli, kv_proxy, memory_run, proxy_argv


def _memory_session(tmp_path, memory_server):
    """A run of the shipped memory policy: create_entities (A, B), create_relations A→B, then
    delete_entities B (which the server cascades to the relation)."""
    mem, env, flags = memory_run(tmp_path, memory_server, [
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []},
                                          {"name": "B", "entityType": "t", "observations": []}]}),
        ("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "knows"}]}),
        ("delete_entities", {"entityNames": ["B"]})])
    return flags, env, mem


def test_undo_dry_run_leaves_a_step_a_newer_step_changes_by_another_read_to_the_real_undo(tmp_path, memory_server):
    # the session's own newer steps change what create_entities reads (open_nodes [A, B]) first:
    # not mistaken for drift, and not claimed either: checked only during the real undo
    j, env, mem = _memory_session(tmp_path, memory_server)
    dry = cli("undo", "--dry-run", "--json", *j, env=env)
    plan = json.loads(dry.stdout)
    assert plan["halted"] is None and plan["deferredChecks"] == 1, dry.stdout
    creates = next(s for s in plan["steps"] if s["tool"] == "memory.create_entities")
    assert creates["kind"] == "revert" and creates["check"] == "deferred", creates
    assert re.search(r"checked only during the real undo: step \w+:2 ", creates["reason"]), creates  # runs last before it
    text = cli("undo", "--dry-run", *j, env=env)
    assert "if it finds drift, it halts there" in text.stdout and "halted" not in text.stdout, text.stdout
    assert "if the real undo finds no drift at sequence" in text.stdout, text.stdout
    real = cli("undo", "--json", *j, env=env)
    assert real.returncode == 0, real.stdout + real.stderr
    assert json.loads(real.stdout)["halted"] is None
    assert '"A"' not in mem.read_text()


def test_redo_dry_run_plans_what_the_real_redo_sends(tmp_path, memory_server):
    j, env, mem = _memory_session(tmp_path, memory_server)
    assert cli("undo", *j, env=env).returncode == 0
    dry = json.loads(cli("redo", "--dry-run", "--json", *j, env=env).stdout)
    planned = [s["seq"] for s in dry["steps"] if s["kind"] == "redo"]
    real = cli("redo", "--json", *j, env=env)
    assert real.returncode == 0, real.stdout + real.stderr
    sent = [s["seq"] for s in json.loads(real.stdout)["steps"] if s["kind"] == "redo"]
    assert planned == sent == [1, 2, 3], (dry, real.stdout)
    assert dry["halted"] is None
    third = next(s for s in dry["steps"] if s["seq"] == 3)  # re-sent after create_relations touched B
    assert third["check"] == "deferred" and re.search(r"the real redo: step \w+:2 ", third["reason"]), third
    assert '"A"' in mem.read_text() and '"B"' not in mem.read_text()


def _files(tmp_path, fs_server, policy, files):
    """(root holding ``files`` {name: text}, the journal flags, the argv of a proxy in front of
    the real filesystem server under ``policy``)."""
    root = tmp_path / "root"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(policy)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    return root, j, proxy_argv("files", manifest, journal, [*fs_server, str(root)])


def _files_run(tmp_path, fs_server, n=3):
    """A run of ``n`` overwrites, one file each (``f1.txt``…), every file existing before."""
    root, j, argv = _files(tmp_path, fs_server, FS_POLICY, {f"f{i}.txt": f"old {i}\n" for i in range(1, n + 1)})
    with RawSession(argv) as s:
        s.handshake()
        for i in range(1, n + 1):
            r = s.call(i, "write_file", {"path": str(root / f"f{i}.txt"), "content": f"new {i}\n"})
            assert not r.get("isError"), r
    (run,) = json.loads(cli("list", "--runs", "--json", *j).stdout)
    return root, j, run["id"]


def test_a_partial_undo_that_did_all_it_was_asked_exits_0_and_says_the_rest_is_in_effect(tmp_path, fs_server):
    root, j, run = _files_run(tmp_path, fs_server)
    only = cli("undo", run, "--only", "2", *j)
    assert only.returncode == 0, only.stdout + only.stderr
    assert "partial — everything asked for was undone; the rest of the run is still in effect" in only.stdout, only.stdout
    assert (root / "f2.txt").read_text() == "old 2\n" and (root / "f3.txt").read_text() == "new 3\n"
    to = cli("undo", run, "--to", "3", *j)
    assert to.returncode == 0, to.stdout + to.stderr
    assert (root / "f3.txt").read_text() == "old 3\n" and (root / "f1.txt").read_text() == "new 1\n"
    assert json.loads(cli("list", "--runs", "--json", *j).stdout)[0]["status"] == "partial"


def test_a_force_preview_and_a_halting_dry_run_say_what_the_run_would_really_be(tmp_path, fs_server):
    root, j, run = _files_run(tmp_path, fs_server, n=2)
    preview = cli("undo", run, "--force", *j)
    assert "R E S U L T  would end rolled_back (dry run)" in preview.stdout, preview.stdout
    only = cli("undo", run, "--only", "2", "--force", *j)
    assert "R E S U L T  would end partial (dry run)" in only.stdout, only.stdout
    (root / "f2.txt").write_text("someone else\n")  # drift: the newest step halts, nothing is undone
    dry = cli("undo", run, "--dry-run", *j)
    assert dry.returncode == 1, dry.stdout
    status = json.loads(cli("list", "--runs", "--json", *j).stdout)[0]["status"]
    assert status == "complete"
    assert (f"R E S U L T  would halt at sequence 2: nothing would be sent, the run stays {status} (dry run)"
            in dry.stdout), dry.stdout
    assert "The real undo would stop here too" in dry.stdout and f"synartesis undo {run[:8]} --force" in dry.stdout, dry.stdout
    real = cli("undo", run, *j)
    assert real.returncode == 1 and f"the run stays {status}" in real.stdout, real.stdout
    assert json.loads(cli("list", "--runs", "--json", *j).stdout)[0]["status"] == status


def test_show_live_calls_the_sessions_own_later_change_superseded_and_names_steps_run_colon_seq(tmp_path, memory_server):
    j, env, _mem = _memory_session(tmp_path, memory_server)
    out = cli("show", "--live", *j, env=env)  # the newest session
    assert out.returncode == 0, out.stdout + out.stderr
    assert "live check of session s-" in out.stdout, out.stdout
    rows = {line.split()[2]: line for line in out.stdout.splitlines()[1:] if line.strip() and ":" in line.split()[0]}
    assert "superseded" in rows["memory.create_entities"] and "drifted" not in out.stdout, out.stdout
    assert "changed again later by this session" in rows["memory.create_entities"]
    assert "matches" in rows["memory.delete_entities"], out.stdout
    report = json.loads(cli("show", "--live", "--json", *j, env=env).stdout)
    assert report["target"] == "session" and all(":" in i["where"] for i in report["items"])


def test_prune_reports_the_size_the_journal_has_after_it_shrank(tmp_path):
    manifest, journal, _state, argv = kv_proxy(tmp_path)
    for n in range(3):
        with RawSession(argv) as s:
            s.handshake()
            assert not s.call(1, "put", {"key": "k0", "value": "x" * 200_000 + str(n)}).get("isError")
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    out = cli("prune", "--older-than", "0", "--yes", *j)
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("journal "))
    before, after = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", line)[:2])
    wal = journal.parent / (journal.name + "-wal")
    on_disk = journal.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    assert after == on_disk and after < before, (line, on_disk)


def test_a_refused_retry_of_a_denied_call_is_journalled_as_denied_and_names_the_decision(tmp_path, fs_server):
    root, j, argv = _files(tmp_path, fs_server, GATED_FS_POLICY, {"a.txt": "before\n"})
    call = {"path": str(root / "a.txt"), "content": "agent\n"}
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "write_file", call).get("isError")  # held
    held = json.loads(cli("gates", "--no-read", "--json", *j).stdout)
    held_id = (held[0].get("id") or held[0].get("action"))
    assert cli("deny", held_id[:8], "--by", "alice", "--reason", "not today", *j).returncode == 0
    with RawSession(argv) as s:  # the agent, started again, retries
        s.handshake()
        refused = s.call(1, "write_file", call)
        assert refused.get("isError") and "alice denied it" in json.dumps(refused)
    assert (root / "a.txt").read_text() == "before\n"
    runs = json.loads(cli("list", "--runs", "--json", *j).stdout)
    assert [r["actions"] for r in runs] == [1, 1], runs
    shown = cli("show", runs[0]["id"], *j)
    assert "no actions recorded" not in shown.stdout, shown.stdout
    assert "denied" in shown.stdout and f"alice denied this call (action {held_id[:8]})" in shown.stdout, shown.stdout


def test_class_words_match_what_happens_to_a_held_new_file_and_an_unchecked_move(tmp_path, fs_server):
    root, j, argv = _files(tmp_path, fs_server, FS_MOVE_POLICY, {"a.txt": "a\n"})
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "move_file", {"source": str(root / "a.txt"), "destination": str(root / "b.txt")}).get("isError")
        assert s.call(2, "write_file", {"path": str(root / "new.txt"), "content": "x"}).get("isError")  # held
    gates = cli("gates", "--no-read", *j)
    assert "held (reversible rule): the file does not exist yet, so there is nothing to restore" in gates.stdout, gates.stdout
    assert "reversible: nothing was captured" not in gates.stdout
    shown = cli("show", *j)
    assert "reversible rule, this call held" in shown.stdout, shown.stdout
    undo = cli("undo", *j)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "a.txt").read_text() == "a\n"
    assert "1 inverse (files.move_file) was sent but could not be checked" in undo.stdout, undo.stdout
    assert "its rule declares no read" in undo.stdout and "compensation" not in undo.stdout.split("R E S U L T")[0]
