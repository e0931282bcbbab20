"""Undo against the real filesystem and memory servers, through the real proxy and CLI (the
filesystem tests on both journal backends: a SQLite file and a PostgreSQL database)."""

from __future__ import annotations

import asyncio
import json
import os

from helpers import FS_POLICY, MEMORY_POLICY, cli, open_journal, proxy_argv, sdk_session, text_of



def _fs(tmp_path, fs_server, journal_at):
    root = tmp_path / "root"
    root.mkdir()
    manifest, journal = tmp_path / "synartesis.yaml", journal_at()  # a file, or a PostgreSQL database
    manifest.write_text(FS_POLICY)
    return root, manifest, journal, proxy_argv("files", manifest, journal, [*fs_server, str(root)])


def _agent(argv, calls, env=None):
    async def go():
        out = []
        async with sdk_session(argv, env=env) as s:
            for name, args in calls:
                r = await s.call_tool(name, args)
                out.append((r.is_error, text_of(r)))
        return out
    return asyncio.run(go())


def _undo(manifest, journal, *extra):
    return cli("undo", "--manifest", str(manifest), "--journal", str(journal), *extra)


def test_overwrite_then_undo_restores_exact_bytes(tmp_path, fs_server, journal_at):
    root, manifest, journal, argv = _fs(tmp_path, fs_server, journal_at)
    original = "première ligne\r\nζωή — 中文 — emoji 🚀\r\n\ttabs and trailing spaces   \r\n".encode()
    (root / "doc.txt").write_bytes(original)
    (root / "b.txt").write_bytes(b"plain\n")
    results = _agent(argv, [
        ("write_file", {"path": str(root / "doc.txt"), "content": "clobbered"}),
        ("edit_file", {"path": str(root / "b.txt"), "edits": [{"oldText": "plain", "newText": "edited"}]}),
        ("write_file", {"path": str(root / "doc.txt"), "content": "clobbered twice"}),
    ])
    assert not any(err for err, _ in results)
    assert (root / "doc.txt").read_bytes() == b"clobbered twice"

    dry = _undo(manifest, journal, "--dry-run")
    assert dry.returncode == 0 and "would call" in dry.stdout
    assert (root / "doc.txt").read_bytes() == b"clobbered twice"  # the dry run sent nothing

    done = _undo(manifest, journal)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("restored (verified)") == 3 and "rolled_back" in done.stdout
    assert (root / "doc.txt").read_bytes() == original
    assert (root / "b.txt").read_bytes() == b"plain\n"
    # bare undo does not pick the same session again: nothing is left to undo
    again = _undo(manifest, journal)
    assert again.returncode == 1 and "nothing can be undone" in again.stdout and "called" not in again.stdout
    with open_journal(journal) as j:
        rid = j.list_runs()[0].id
    named = _undo(manifest, journal, rid[:8])
    # named, it says there is nothing left in it (exit 1), and sends nothing twice
    assert named.returncode == 1 and "called" not in named.stdout
    assert "nothing to undo in run" in named.stdout and "3 already rolled back" in named.stdout
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.status == "rolled_back"
        assert {a.status for a in j.actions(run.id)} == {"rolled_back"}
        assert len(j.undos(run.id)) == 2 and j.audit(run.id).ok


def test_human_edit_halts_with_both_values_and_force_yes_restores(tmp_path, fs_server, journal_at):
    root, manifest, journal, argv = _fs(tmp_path, fs_server, journal_at)
    (root / "a.txt").write_text("v0")
    (root / "b.txt").write_text("b0")
    _agent(argv, [("write_file", {"path": str(root / "a.txt"), "content": "agent"}),
                  ("write_file", {"path": str(root / "b.txt"), "content": "agent b"})])
    (root / "a.txt").write_text("the human's fix")  # between the agent's write and the undo

    halted = _undo(manifest, journal)
    assert halted.returncode == 1
    out = halted.stdout
    assert "halted at sequence 1" in out and "drift" in out
    assert '"agent"' in out and "the human's fix" in out
    assert "then run `synartesis undo" in out and "` again" in out and "--force" in out
    assert (root / "a.txt").read_text() == "the human's fix"  # untouched
    assert (root / "b.txt").read_text() == "b0"  # the newer write was undone before the halt

    preview = _undo(manifest, journal, "--force")
    assert preview.returncode == 1 and "would overwrite" in preview.stdout and "the human's fix" in preview.stdout
    assert (root / "a.txt").read_text() == "the human's fix"

    forced = _undo(manifest, journal, "--force", "--yes")
    assert forced.returncode == 0, forced.stdout
    assert (root / "a.txt").read_text() == "v0"


def test_creating_a_file_is_held_because_the_server_cannot_delete(tmp_path, fs_server, journal_at):
    root, manifest, journal, argv = _fs(tmp_path, fs_server, journal_at)
    [(err, text)] = _agent(argv, [("write_file", {"path": str(root / "new.txt"), "content": "x"})])
    # in words, not the server's raw ENOENT (new user round 9)
    assert err and "the file does not exist yet, so there is nothing to restore" in text and "ENOENT" not in text, text
    assert not (root / "new.txt").exists()


def test_binary_file_write_is_refused_not_corrupted(tmp_path, fs_server, journal_at):
    root, manifest, journal, argv = _fs(tmp_path, fs_server, journal_at)
    blob = bytes(range(256))
    (root / "img.bin").write_bytes(blob)
    [(err, text)] = _agent(argv, [("write_file", {"path": str(root / "img.bin"), "content": "text"})])
    assert err and "cannot represent this resource exactly" in text
    assert (root / "img.bin").read_bytes() == blob


def test_oversized_prior_state_refuses_the_write(tmp_path, fs_server, journal_at):
    root, manifest, journal, _ = _fs(tmp_path, fs_server, journal_at)
    (root / "big.txt").write_text("x" * 5000)
    argv = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    argv.insert(argv.index("--"), "--max-snapshot-bytes")
    argv.insert(argv.index("--"), "1000")
    [(err, text)] = _agent(argv, [("write_file", {"path": str(root / "big.txt"), "content": "small"})])
    assert err and "snapshot cap" in text
    assert (root / "big.txt").read_text() == "x" * 5000


def test_show_live_answers_for_every_write(tmp_path, fs_server, journal_at):
    root, manifest, journal, argv = _fs(tmp_path, fs_server, journal_at)
    for n in range(5):
        (root / f"f{n}.txt").write_text(f"orig {n}")
    _agent(argv, [("write_file", {"path": str(root / f"f{n}.txt"), "content": f"agent {n}"}) for n in range(5)])
    (root / "f1.txt").write_text("human one")
    (root / "f3.txt").write_text("human three")
    live = cli("show", "--live", "--manifest", str(manifest), "--journal", str(journal), "--json")
    assert live.returncode == 1
    items = json.loads(live.stdout)["items"]
    assert [(i["seq"], i["state"]) for i in items] == [(1, "matches"), (2, "drifted"), (3, "matches"),
                                                        (4, "drifted"), (5, "matches")]
    assert items[1]["actual"]["value"]["content"] == "human one"
    assert [(root / f"f{n}.txt").read_text() for n in range(5)] == ["agent 0", "human one", "agent 2", "human three", "agent 4"]


def test_memory_create_entities_undo_removes_only_what_it_created(tmp_path, memory_server):
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(MEMORY_POLICY)
    graph = tmp_path / "memory.jsonl"
    env = dict(os.environ, MEMORY_FILE_PATH=str(graph))
    argv = proxy_argv("memory", manifest, journal, memory_server)
    # a graph that already holds Ada (written directly, not through the proxy)
    graph.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": ["first"]}))
    before = graph.read_text()
    results = _agent(argv, [("create_entities", {"entities": [
        {"name": "Ada", "entityType": "robot", "observations": []},
        {"name": "Grace", "entityType": "person", "observations": ["navy"]}]})], env=env)
    assert not results[0][0]
    assert "Grace" in graph.read_text()
    done = cli("undo", "--manifest", str(manifest), "--journal", str(journal), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sent (unverified)" in done.stdout  # a compensation with no read is never claimed verified
    assert "Grace" not in graph.read_text()
    assert json.loads(graph.read_text().splitlines()[0]) == json.loads(before)
