"""Agent sessions end to end: one client process, two proxies (the real filesystem and memory
servers), interleaved writes; bare undo puts both back in reverse journal-wide order."""

from __future__ import annotations

import json
import os

from helpers import (
    FS_POLICY,
    MEMORY_POLICY,
    RawSession,
    cli,
    kill_mid_slow_put,
    kv_proxy,
    open_journal,
    proxy_argv,
    run_async,
    sdk_session,
)

POLICY = FS_POLICY + MEMORY_POLICY.split("tools:\n", 1)[1].replace("servers:\n  memory: {}\n", "")
POLICY = POLICY.replace("servers:\n  files: {}\n", "servers:\n  files: {}\n  memory: {}\n")


def _setup(tmp_path, fs_server, memory_server):
    root = tmp_path / "root"
    root.mkdir()
    (root / "doc.txt").write_bytes("première\r\nligne 🚀\n".encode())
    (root / "b.txt").write_bytes(b"plain\n")
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "memory.jsonl"
    manifest.write_text(POLICY)
    env = dict(os.environ, MEMORY_FILE_PATH=str(mem))

    async def seed():
        async with sdk_session(memory_server, env=env) as s:  # the bare server, not through synartesis
            await s.call_tool("create_entities", {"entities": [{"name": "seed", "entityType": "t", "observations": ["o"]}]})
    run_async(seed())
    fs = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    memory = proxy_argv("memory", manifest, journal, memory_server)
    return root, manifest, journal, mem, env, fs, memory


def _cli(manifest, journal, *args, env=None):
    return cli(*args, "--manifest", str(manifest), "--journal", str(journal), env=env)


def test_bare_undo_restores_two_servers_of_one_session_in_reverse_journal_order(tmp_path, fs_server, memory_server):
    root, manifest, journal, mem, env, fs, memory = _setup(tmp_path, fs_server, memory_server)
    before = {p: p.read_bytes() for p in (root / "doc.txt", root / "b.txt", mem)}

    async def agent():
        async with sdk_session(fs, env=env) as files, sdk_session(memory, env=env) as graph:
            calls = [
                (files, "write_file", {"path": str(root / "doc.txt"), "content": "one"}),
                (graph, "create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []}]}),
                (files, "write_file", {"path": str(root / "b.txt"), "content": "two"}),
                (graph, "create_entities", {"entities": [{"name": "B", "entityType": "t", "observations": []}]}),
                (files, "write_file", {"path": str(root / "doc.txt"), "content": "three"}),
            ]
            for session, tool, args in calls:
                r = await session.call_tool(tool, args)
                assert not r.is_error, r
    run_async(agent())
    assert (root / "doc.txt").read_text() == "three" and b'"B"' in mem.read_bytes()

    listed = json.loads(_cli(manifest, journal, "list", "--json").stdout)
    assert len(listed) == 1 and len(listed[0]["runs"]) == 2 and listed[0]["actions"] == 5

    out = _cli(manifest, journal, "undo", "--json", env=env)  # the memory server needs its file
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["target"] == "session" and report["run"] == listed[0]["session"]
    assert "newest session with something to undo" in report["picked"]
    steps = [s for s in report["steps"] if s["kind"] == "revert"]
    assert [s["gseq"] for s in steps] == sorted((s["gseq"] for s in steps), reverse=True) and len(steps) == 5
    assert [s["tool"].split(".")[0] for s in steps] == ["files", "memory", "files", "memory", "files"]
    assert {p: p.read_bytes() for p in before} == before  # byte-exact, both servers
    # the memory server's creates were compensated with nothing to read back: honest status
    assert (report["status"], report["unverified"], report["statusText"]) == ("compensated", 2, "compensated (unverified: 2)")

    listed = json.loads(_cli(manifest, journal, "list", "--json").stdout)[0]
    assert listed["statusText"] == "compensated (unverified: 2)"
    assert sorted(r["statusText"] for r in listed["runs"]) == ["compensated (unverified: 2)", "rolled_back"]
    text = _cli(manifest, journal, "list").stdout
    assert "compensated (unverified: 2)" in text and text.count("  run ") == 2
    shown = json.loads(_cli(manifest, journal, "show", listed["session"][:8], "--json").stdout)
    assert shown["target"] == "session" and [a["gseq"] for a in shown["actions"]] == sorted(a["gseq"] for a in shown["actions"])
    assert shown["session"]["statusText"] == "compensated (unverified: 2)"

    again = _cli(manifest, journal, "undo")
    assert again.returncode == 1 and "nothing can be undone" in again.stdout and "skipped 1 session" in again.stdout


def test_a_session_named_by_the_environment_groups_proxies_of_other_processes(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    for key, session in (("k0", "chat-1"), ("k1", "chat-1"), ("k0", "chat-2")):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=session)) as s:
            s.handshake()
            s.call(1, "put", {"key": key, "value": f"{session}"})
            s.close()
    listed = json.loads(_cli(manifest, journal, "list", "--json").stdout)
    assert sorted((s["name"], len(s["runs"])) for s in listed) == [("chat-1", 2), ("chat-2", 1)]
    # `undo NAME` takes the session by the name the environment gave it; chat-2 wrote k0 after
    # chat-1, so chat-1's write to it has drifted: undo halts there, k1 is back
    out = _cli(manifest, journal, "undo", "chat-1")
    assert out.returncode == 1 and "drift detected" in out.stdout, out.stdout + out.stderr
    assert json.loads(state.read_text()) == {"k0": "chat-2", "k1": "v1"}


def test_a_proxy_killed_mid_call_needs_no_close_and_its_call_is_unknown(tmp_path):
    manifest, journal, state = kill_mid_slow_put(tmp_path, delay=2)  # the orphan finishes it
    with open_journal(journal) as j:
        [run] = j.list_runs()
        assert run.status == "active" and run.stale and run.unknown == 1  # counted as unknown already
    listed = json.loads(_cli(manifest, journal, "list", "--runs", "--json").stdout)[0]
    assert (listed["statusText"], listed["unknown"], listed["stale"]) == ("complete", 1, True)
    halted = _cli(manifest, journal, "undo")  # no `close`, no --force
    assert halted.returncode == 1, halted.stdout + halted.stderr
    assert "still active" not in halted.stderr and "halted at sequence 2" in halted.stdout
    assert "outcome unknown" in halted.stdout
    with open_journal(journal) as j:
        run = j.find_run(run.id)
        assert run.status == "complete" and "is gone" in run.end_note
        assert [a.status for a in j.actions(run.id)] == ["applied", "unknown"] and j.audit(run.id).ok
    forced = _cli(manifest, journal, "undo", run.id[:8], "--force", "--yes")
    assert "stepped over because of --force" in forced.stdout
    assert json.loads(state.read_text())["k0"] == "v0"


def test_bare_undo_never_takes_an_older_session_in_place_of_a_live_one(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="yesterday")) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "yesterday"})
        s.close()
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="now")) as s:
        s.handshake()
        s.call(1, "put", {"key": "k1", "value": "now"})
        refused = _cli(manifest, journal, "undo")  # the agent of "now" is still running
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "newest session with something to undo is still active" in refused.stderr
        with open_journal(journal) as j:
            now = j.find_session("now")
        assert f"synartesis undo {now.id[:10]} --force" in " ".join(refused.stderr.split())
        assert json.loads(state.read_text()) == {"k0": "yesterday", "k1": "now"}  # nothing older was undone
        s.close()
    done = _cli(manifest, journal, "undo")  # once it has stopped, the newest session is undone
    assert done.returncode == 0 and json.loads(state.read_text()) == {"k0": "yesterday", "k1": "v1"}, done.stdout
