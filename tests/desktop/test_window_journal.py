"""The window and the terminal share one journal: a conversation in the window is runs the CLI
lists and undoes; a run made by another client (the mcp SDK's stdio client through the proxy)
shows in the window and can be undone from it. Everything goes through ``synartesis desktop``
as a subprocess, the real proxy and the real filesystem server."""

from __future__ import annotations

import asyncio
import json

from desktopkit import FS_ENTRY, cards, tool_messages
from helpers import cli, proxy_argv, sdk_session


def _write_turns(path, content: str) -> list[dict]:
    return [{"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": str(path), "content": content}}]},
            {"text": "Written."}]


def _talk(desk, text: str, profile: str = "custom") -> dict:
    conv = desk.post("/api/conversations", {"profile": profile})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": text})
    return desk.wait(conv["id"], lambda c: not c["busy"] and all(x["state"] in ("done", "error") for x in cards(c)))


def _held_mkdir(open_window, path, reply: str):
    """A window whose model asks to create ``path`` (held by the policy); returns
    (desk, model, conversation, its held card) once the card is held."""
    desk, model = open_window([{"tool_calls": [{"name": "create_directory", "arguments": {"path": str(path)}}]},
                               {"text": reply}])
    conv = desk.post("/api/conversations", {"profile": "custom"})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "make a folder"})
    held = desk.wait(conv["id"], lambda c: any(x["state"] == "held" for x in cards(c)))
    [card] = cards(held)
    return desk, model, held, card


def test_a_conversation_is_a_run_the_cli_lists_and_undoes_after_the_window_closes(files_root, open_window, tmp_path):
    target = files_root / "plan.md"
    target.write_bytes(b"# plan\n- a\n")
    desk, model = open_window(_write_turns(target, "# plan\n- b\n"))
    conv = _talk(desk, "Change the plan to b")
    assert target.read_text() == "# plan\n- b\n"
    [card] = cards(conv)
    assert (card["action"]["class"], card["action"]["prior"]) == ("reversible", "captured")
    code, err = desk.stop()  # closing the window ends its proxies' runs
    assert "Traceback" not in err

    runs = json.loads(cli("list", "--json", cwd=tmp_path).stdout)
    [run] = [r for r in runs if r["id"] in conv["runs"]]
    assert run["label"] == "Change the plan to b" and run["status"] == "complete"
    undo = cli("undo", run["id"][:8], cwd=tmp_path)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "restored (verified)" in undo.stdout
    assert target.read_bytes() == b"# plan\n- a\n"


def test_a_run_made_by_another_client_is_visible_in_the_window_and_undoable_from_it(files_root, open_window, fake_home,
                                                                                    tmp_path):
    target = files_root / "todo.txt"
    target.write_text("one\n")
    manifest = fake_home / ".synartesis" / "synartesis.yaml"
    journal = manifest.parent / "journal.db"

    async def other_client() -> None:
        async with sdk_session(proxy_argv("files", manifest, journal, ["node", str(FS_ENTRY), str(files_root)])) as s:
            r = await s.call_tool("write_file", {"path": str(target), "content": "two\n"})
            assert not r.is_error
    asyncio.run(other_client())
    assert target.read_text() == "two\n"

    desk, _ = open_window([{"text": "hi"}])
    history = desk.get("/api/history")["runs"]
    [run] = history
    assert run["conversation"] is None and run["label"] and run["status"] == "complete"
    detail = desk.get(f"/api/runs/{run['id']}")
    assert [(a["tool"], a["class"], a["status"]) for a in detail["actions"]] == [("write_file", "reversible", "applied")]
    assert detail["ledger"]["reversibleCaptured"] == 1

    plan = desk.post("/api/undo", {"run": run["id"], "dryRun": True})
    assert [s["kind"] for s in plan["reports"][0]["steps"]] == ["revert"] and target.read_text() == "two\n"
    done = desk.post("/api/undo", {"run": run["id"]})
    assert done["reports"][0]["status"] == "rolled_back", done
    assert target.read_text() == "one\n"
    shown = json.loads(cli("show", run["id"][:8], "--json", cwd=tmp_path).stdout)
    assert [a["status"] for a in shown["actions"]] == ["rolled_back"]


def test_a_denied_call_is_never_sent_and_the_model_is_told_who_denied_it_and_why(files_root, open_window, tmp_path):
    desk, model, conv, card = _held_mkdir(open_window, files_root / "nope", "Understood, I will not create it.")
    assert card["action"]["status"] == "gated" and "cannot be undone" in card["action"]["note"]
    gates = desk.get("/api/gates")["gated"]
    assert [g["id"] for g in gates] == [card["action"]["id"]]

    desk.post(f"/api/actions/{card['action']['id']}/deny", {"reason": "not in this folder", "by": "alex"})
    conv = desk.wait(conv["id"], lambda c: not c["busy"])
    [card] = cards(conv)
    assert card["action"]["status"] == "denied" and card["action"]["decidedBy"] == "alex"
    told = tool_messages(model.requests[-1])
    assert len(told) == 1 and "alex denied it" in told[0] and "not in this folder" in told[0]
    assert not (files_root / "nope").exists()
    conv = desk.wait(conv["id"], lambda c: c["ledger"]["denied"] == 1)
    assert (conv["ledger"]["held"], conv["ledger"]["approved"], conv["ledger"]["waiting"]) == (1, 0, 0)


def test_a_call_approved_in_the_terminal_lets_the_windows_retry_through_once(files_root, open_window, tmp_path):
    desk, model, conv, card = _held_mkdir(open_window, files_root / "yes", "Created.")
    aid = card["action"]["id"]
    r = cli("approve", aid[:8], "--by", "sam", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    conv = desk.wait(conv["id"], lambda c: not c["busy"])
    assert (files_root / "yes").is_dir()
    [card] = cards(conv)
    assert card["action"]["decidedBy"] == "sam"
    desk.wait(conv["id"], lambda c: cards(c)[0]["action"]["status"] == "applied")
    shown = json.loads(cli("show", "--json", cwd=tmp_path).stdout)["actions"]
    assert [(a["tool"], a["status"]) for a in shown] == [("create_directory", "applied")]
    assert "Successfully created directory" in tool_messages(model.requests[-1])[0]


def test_undo_back_to_a_card_leaves_older_writes_in_place(files_root, open_window, tmp_path):
    a, b = files_root / "a.txt", files_root / "b.txt"
    a.write_text("a0")
    b.write_text("b0")
    desk, _ = open_window([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": str(a), "content": "a1"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": str(b), "content": "b1"}}]},
        {"text": "Both written."},
    ])
    conv = _talk(desk, "write both")
    first, second = cards(conv)
    since = {"run": second["action"]["run"], "seq": second["action"]["seq"]}
    plan = desk.post("/api/undo", {"conversation": conv["id"], "since": since, "dryRun": True})
    assert [(s["seq"], s["kind"]) for r in plan["reports"] for s in r["steps"]] == [(2, "revert"), (1, "kept")]
    desk.post("/api/undo", {"conversation": conv["id"], "since": since})
    assert (a.read_text(), b.read_text()) == ("a1", "b0")
    conv = desk.wait(conv["id"], lambda c: c["ledger"]["undone"] == 1)
    assert [c["action"]["status"] for c in cards(conv)] == ["applied", "rolled_back"]
    # the conversation goes on after an undo (its servers reconnect on the next message)
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "thanks"})
    desk.wait(conv["id"], lambda c: not c["busy"] and c["items"][-1]["kind"] == "assistant")


def test_undo_halts_on_a_persons_edit_showing_both_values_and_force_overwrites_it(files_root, open_window):
    target = files_root / "doc.txt"
    target.write_text("v1")
    desk, _ = open_window(_write_turns(target, "v2"))
    conv = _talk(desk, "write v2")
    target.write_text("v2 + a person's edit")  # someone edits the file after the model did

    live = desk.post("/api/live", {"conversation": conv["id"]})
    [item] = live["reports"][0]["items"]
    assert item["state"] == "drifted" and item["actual"] == {"present": True, "value": {"content": "v2 + a person's edit"}}

    plan = desk.post("/api/undo", {"conversation": conv["id"], "dryRun": True})
    assert plan["reports"][0]["halted"]["reason"] == "drift detected"
    done = desk.post("/api/undo", {"conversation": conv["id"]})
    halt = done["reports"][0]["halted"]
    assert halt["expected"] == {"present": True, "value": {"content": "v2"}}
    assert halt["actual"] == {"present": True, "value": {"content": "v2 + a person's edit"}}
    assert target.read_text() == "v2 + a person's edit"  # a halt changes nothing

    preview = desk.post("/api/undo", {"conversation": conv["id"], "force": True})
    assert [s["kind"] for s in preview["reports"][0]["steps"]] == ["overwrite"]
    assert target.read_text() == "v2 + a person's edit"
    forced = desk.post("/api/undo", {"conversation": conv["id"], "force": True, "yes": True})
    assert forced["reports"][0]["status"] == "rolled_back" and target.read_text() == "v1"


def test_a_conversation_over_two_servers_is_undone_newest_first_across_both(fake_home, tmp_path, open_window,
                                                                            monkeypatch):
    from desktopkit import FS_ENTRY, MEMORY_ENTRY, write_shipped_policy
    root = tmp_path / "root"
    root.mkdir()
    memory = tmp_path / "memory.jsonl"
    monkeypatch.setenv("MEMORY_FILE_PATH", str(memory))
    write_shipped_policy(fake_home, {"files": ("filesystem", ["node", str(FS_ENTRY), str(root)]),
                                     "memory": ("memory", ["node", str(MEMORY_ENTRY)])})
    note = root / "note.txt"
    note.write_text("n0")
    ada = {"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}
    desk, model = open_window([
        {"tool_calls": [{"name": "files__write_file", "arguments": {"path": str(note), "content": "n1"}}]},
        {"tool_calls": [{"name": "memory__create_entities", "arguments": {"entities": [ada]}}]},
        {"tool_calls": [{"name": "files__write_file", "arguments": {"path": str(note), "content": "n2"}}]},
        {"text": "All three done."},
    ])
    conv = _talk(desk, "note, remember Ada, note again")
    assert [c["server"] for c in cards(conv)] == ["files", "memory", "files"]
    assert note.read_text() == "n2" and "Ada" in memory.read_text()
    conv = desk.wait(conv["id"], lambda c: len(c["runs"]) == 2 and c["ledger"]["calls"] == 3)
    assert conv["ledger"]["compensable"] == 1 and conv["ledger"]["reversibleCaptured"] == 2

    plan = desk.post("/api/undo", {"conversation": conv["id"], "dryRun": True})
    assert note.read_text() == "n2" and len(plan["reports"]) == 2
    done = desk.post("/api/undo", {"conversation": conv["id"]})
    order = [(r["run"] == cards(conv)[1]["action"]["run"], s["seq"], s["kind"]) for r in done["reports"] for s in r["steps"]
             if s["kind"] == "revert"]
    assert [k for _, _, k in order] == ["revert", "revert", "revert"]
    assert [is_memory for is_memory, _, _ in order] == [False, True, False]  # files seq 2, memory, files seq 1
    assert note.read_text() == "n0" and "Ada" not in memory.read_text()
    statuses = {r["id"]: r["status"] for r in json.loads(cli("list", "--json", cwd=tmp_path).stdout)}
    assert [statuses[r] for r in conv["runs"]] == ["rolled_back", "rolled_back"]
