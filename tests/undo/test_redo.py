"""Redo after undo, `undo --only SEQ`, and who undid what (`history`), against the real
filesystem server through the real proxy and CLI (a small fake only for a held call)."""

from __future__ import annotations

import json
import os
import re

from helpers import (
    FS_POLICY,
    RawSession,
    cli,
    kv_proxy,
    open_journal,
    proxy_argv,
    run_async,
    sdk_session,
)


def _fs(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes("première ligne\r\nζωή 🚀\n".encode())
    (root / "b.txt").write_bytes(b"plain\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(FS_POLICY)
    return root, manifest, journal, proxy_argv("files", manifest, journal, [*fs_server, str(root)])


def _agent(argv, calls):
    async def go():
        async with sdk_session(argv) as s:
            for name, args in calls:
                r = await s.call_tool(name, args)
                assert not r.is_error, r
    run_async(go())


def _cli(manifest, journal, *args, env=None):
    return cli(*args, "--manifest", str(manifest), "--journal", str(journal), env=env)


def _run_id(journal) -> str:
    with open_journal(journal) as j:
        return j.list_runs()[0].id


def test_redo_after_undo_restores_the_agents_state_byte_exact_and_undo_works_again(tmp_path, fs_server):
    root, manifest, journal, argv = _fs(tmp_path, fs_server)
    original = {p: p.read_bytes() for p in (root / "a.txt", root / "b.txt")}
    _agent(argv, [("write_file", {"path": str(root / "a.txt"), "content": "agent one"}),
                  ("edit_file", {"path": str(root / "b.txt"), "edits": [{"oldText": "plain", "newText": "edited"}]}),
                  ("write_file", {"path": str(root / "a.txt"), "content": "agent two\r\n"})])
    agent = {p: p.read_bytes() for p in original}
    assert _cli(manifest, journal, "undo").returncode == 0
    assert {p: p.read_bytes() for p in original} == original

    dry = _cli(manifest, journal, "redo", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.count("would call files.") == 3, dry.stdout
    assert {p: p.read_bytes() for p in original} == original  # a dry run sends nothing
    done = _cli(manifest, journal, "redo", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "redo" and report["status"] == "redone"
    assert [s["seq"] for s in report["steps"]] == [1, 2, 3]  # oldest first
    assert all(s["outcome"] == "re-applied (verified)" for s in report["steps"])
    assert {p: p.read_bytes() for p in original} == agent
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.status == "redone" and all(a.status == "applied" for a in j.actions(run.id)) and j.audit(run.id).ok

    again = _cli(manifest, journal, "undo")  # undo after redo works again
    assert again.returncode == 0, again.stdout
    assert {p: p.read_bytes() for p in original} == original
    nothing = _cli(manifest, journal, "redo", run.id[:8])
    assert nothing.returncode == 0 and {p: p.read_bytes() for p in original} == agent  # the second undo is redone
    assert _cli(manifest, journal, "redo").returncode == 1  # and now there is nothing left to redo


def test_redo_halts_on_drift_and_shows_both_values(tmp_path, fs_server):
    root, manifest, journal, argv = _fs(tmp_path, fs_server)
    _agent(argv, [("write_file", {"path": str(root / "b.txt"), "content": "agent b"}),
                  ("write_file", {"path": str(root / "a.txt"), "content": "agent a"})])
    assert _cli(manifest, journal, "undo").returncode == 0
    (root / "b.txt").write_text("a person's edit")  # after the undo, before the redo
    out = _cli(manifest, journal, "redo")
    assert out.returncode == 1 and "drift detected" in out.stdout and "a person's edit" in out.stdout, out.stdout
    assert "Three ways on" in out.stdout and " --force` to see what would be overwritten" in out.stdout
    # the ways on name the target: a bare `redo --force` could pick another undo (a new user's finding)
    assert re.search(r"`synartesis redo (s-[0-9a-f]+|[0-9a-f]{8}) --force`", out.stdout), out.stdout
    assert (root / "b.txt").read_text() == "a person's edit" and "agent" not in (root / "a.txt").read_text()
    preview = _cli(manifest, journal, "redo", "--force")
    assert preview.returncode == 1 and "would send the call anyway" in preview.stdout
    assert (root / "b.txt").read_text() == "a person's edit"


def test_an_irreversible_call_is_never_re_sent(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    log = tmp_path / "calls.jsonl"
    env = dict(os.environ, FAKE_LOG=str(log))
    with RawSession(argv, env=env) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "agent"})
        held = s.call(2, "delete", {"key": "k1"})  # no rule: irreversible, held
        action = held["content"][0]["text"].split("Action ")[1].split()[0]
        assert _cli(manifest, journal, "approve", action, "--no-read").returncode == 0
        s.call(3, "delete", {"key": "k1"})
        s.close()
    undo = _cli(manifest, journal, "undo", env=env)
    assert undo.returncode == 1 and "cannot be undone" in undo.stdout  # partial: the delete stays
    redo = _cli(manifest, journal, "redo", "--json", env=env)
    report = json.loads(redo.stdout)
    assert redo.returncode == 0, redo.stdout
    kinds = {s["tool"]: s["kind"] for s in report["steps"]}
    assert kinds == {"kv.put": "redo", "kv.delete": "left"}
    deletes = [c for c in map(json.loads, log.read_text().splitlines()) if c["name"] == "delete"]
    assert len(deletes) == 1  # the agent's, never a redo's
    assert json.loads(state.read_text()) == {"k0": "agent"}


def test_undo_only_refuses_when_a_later_action_touched_the_same_file(tmp_path, fs_server):
    root, manifest, journal, argv = _fs(tmp_path, fs_server)
    a0, b0 = (root / "a.txt").read_bytes(), (root / "b.txt").read_bytes()
    _agent(argv, [("write_file", {"path": str(root / "a.txt"), "content": "first"}),
                  ("write_file", {"path": str(root / "b.txt"), "content": "b"}),
                  ("write_file", {"path": str(root / "a.txt"), "content": "second"})])
    run = _run_id(journal)
    refused = _cli(manifest, journal, "undo", run[:8], "--only", "1")
    assert refused.returncode == 1 and "seq 3 (files.write_file) changed the same resource later" in refused.stderr
    assert (root / "a.txt").read_text() == "second"
    preview = _cli(manifest, journal, "undo", run[:8], "--only", "1", "--force")
    assert preview.returncode == 1 and "would overwrite" in preview.stdout
    assert '"second"' in preview.stdout and '"first"' in preview.stdout  # both values shown
    assert (root / "a.txt").read_text() == "second"

    one = _cli(manifest, journal, "undo", run[:8], "--only", "2")
    assert one.returncode == 0 and "restored (verified)" in one.stdout  # done; the run is partial: the rest is in effect
    assert (root / "b.txt").read_bytes() == b0 and (root / "a.txt").read_text() == "second"
    with open_journal(journal) as j:
        assert j.find_run(run).status == "partial"
        assert [a.status for a in j.actions(run)] == ["applied", "rolled_back", "applied"]
    assert _cli(manifest, journal, "undo", run[:8], "--only", "9").returncode == 2
    assert _cli(manifest, journal, "undo", run[:8]).returncode == 0  # the rest
    assert (root / "a.txt").read_bytes() == a0


def test_history_says_who_undid_redid_approved_and_denied_what(tmp_path, fs_server):
    root, manifest, journal, argv = _fs(tmp_path, fs_server)
    _agent(argv, [("write_file", {"path": str(root / "a.txt"), "content": "agent"})])
    run = _run_id(journal)
    assert _cli(manifest, journal, "undo", "--by", "ana").returncode == 0
    assert _cli(manifest, journal, "redo", run[:8], "--by", "bo").returncode == 0
    out = _cli(manifest, journal, "history", run[:8], "--json")
    assert out.returncode == 0, out.stderr
    entries = json.loads(out.stdout)
    assert [(e["kind"], e["by"], e["status"]) for e in entries] == [("undo", "ana", "rolled_back"), ("redo", "bo", "redone")]
    [step] = entries[0]["steps"]
    assert step["call"]["tool"] == "write_file" and step["call"]["args"]["content"] == "agent"
    assert step["outcome"] == "restored (verified)"
    text = _cli(manifest, journal, "history").stdout
    assert "undo of session" in text and "by ana" in text and "redo of run" in text and "write_file" in text
    assert _cli(manifest, journal, "audit").returncode == 0  # every attempt is chained


def test_history_says_a_halt_that_changed_nothing_left_the_run_as_it_was(tmp_path, fs_server):
    # a new user's finding: undo said "nothing was sent; the session stays complete", history "partial"
    root, manifest, journal, argv = _fs(tmp_path, fs_server)
    _agent(argv, [("write_file", {"path": str(root / "a.txt"), "content": "agent a"})])
    (root / "a.txt").write_text("a person's edit")
    assert _cli(manifest, journal, "undo").returncode == 1
    out = _cli(manifest, journal, "history", "--json")
    [entry] = [e for e in json.loads(out.stdout) if e["kind"] == "undo"]
    assert entry["status"] == "halted, nothing changed (the session stays complete)", entry
