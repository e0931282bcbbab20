"""Server-declared compensation (issue 10 item 9): init drafts a held compensable rule from a
real mcp-SDK server's ``_meta["dev.chronomcp/compensate"]``, refuses what is not a static path,
and the drafted inverse really undoes the call once the person lifts the hold."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters

import helpers
from helpers import cli, open_journal, proxy_argv, text_of
from synartesis.policy import load_policy
from synartesis.services.declared import map_path
from synartesis.services.policies import draft_rules

SERVER = [sys.executable, str(Path(__file__).resolve().parent.parent / "declaring_server.py")]


@pytest.mark.parametrize("path,ref", [
    ("$.output.structuredContent.id", "$result.id"),
    ("$.input.id", "$.id"),
    ("$.input", "$"),
    ("$.output.structuredContent", "$result"),
    ("$.output.structuredContent.items[0].name", "$result.items[0].name"),
    ("$.input['file-name']", "$.file-name"),
    ('$["output"]["structuredContent"]["id"]', "$result.id"),
])
def test_a_static_mapping_becomes_a_synartesis_reference(path, ref):
    assert map_path(path) == ref


@pytest.mark.parametrize("path,why", [
    ("$.input.ids[*]", "wildcard"),
    ("$.input.*", "wildcard"),
    ("$..id", "recursive descent"),
    ("$.input.items[?(@.id)]", "filter"),
    ("$.input.items[-1]", "negative index, a slice or a union"),
    ("$.input.items[0:2]", "negative index, a slice or a union"),
    ("$.output.content[0].text", "reads the raw result"),
    ("$.output.id", "reads the raw result"),
    ("$.result.id", "must start with $.input"),
    ("id", "does not start with $"),
    (7, "is not a path"),
    ("$.input['a b']", "cannot be written as a synartesis reference"),
    ("$.input.", "a key must follow '.'"),
])
def test_a_mapping_that_is_not_a_static_path_is_refused_with_the_reason(path, why):
    with pytest.raises(ValueError) as info:
        map_path(path)
    assert why in str(info.value)


def test_claims_that_contradict_each_other_hold_the_call():
    tools = [{"name": "odd", "annotations": {"readOnlyHint": True, "destructiveHint": True}},
             {"name": "weird", "_meta": {"dev.chronomcp/compensate": {"reversibility": "reversible"}}},
             {"name": "ok", "annotations": {"readOnlyHint": True}}]
    notes: list[str] = []
    rules, comments, todo = draft_rules("s", tools, notes=notes)
    assert [(r["match"], r["class"], r.get("gate")) for r in rules] == [
        ("s.odd", "irreversible", "always"), ("s.weird", "irreversible", "always"), ("s.ok", "readonly", None)]
    assert todo == 2 and any("read-only" in line and "destructive" in line for line in comments[0])
    assert notes == ["weird: _meta dev.chronomcp/compensate not used: reversibility 'reversible' is not one of "
                     "readonly, compensable, irreversible"]


def test_init_drafts_the_declared_compensation_held_and_refuses_the_rest(tmp_path):
    policy = tmp_path / "synartesis.yaml"
    done = cli("init", "notes", "--manifest", str(policy), "--", *SERVER, "--state", str(tmp_path / "notes.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "create_note: compensable as the server declares (delete_note), not checked" in out
    assert "archive_note: the declared compensation was refused: parameterMapping id: " \
           "'$.output.content[0].text' reads the raw result" in out
    assert "tag_notes: the declared compensation was refused: parameterMapping ids: '$.input.ids[*]' uses a " \
           "wildcard, which is not a static path" in out
    assert "export_note: the declared compensation was refused: compensation.toolName unexport is not a tool" in out
    assert "touch_note: the server's claims disagree" in out
    text = policy.read_text()
    pol = load_policy(policy)
    create = pol.rule_for("notes", "create_note", {})
    assert (create.cls, create.gate, create.note) == (
        "compensable", "always", "compensation declared by the server (dev.chronomcp/compensate), not checked")
    assert [(c.tool, c.args) for c in create.inverse] == [("delete_note", {"id": "$result.id"})]
    rename = pol.rule_for("notes", "rename_note", {})
    assert rename.inverse[0].args == {"id": "$.id", "title": "$result.previous"} and rename.gate == "always"
    for refused in ("archive_note", "tag_notes", "export_note", "touch_note", "purge_notes"):
        rule = pol.rule_for("notes", refused, {})
        assert (rule.cls, rule.gate) == ("irreversible", "always"), refused
    assert pol.rule_for("notes", "get_note", {}).cls == "readonly"
    assert "# compensable: declared by the server, not checked" in text
    assert "#   (synartesis undo), then delete the `gate: always` line and this TODO." in text
    assert "#   parameterMapping ids: '$.input.ids[*]' uses a wildcard, which is not a static path." in text


async def _call(argv: list[str], tool: str, args: dict) -> dict:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with helpers.stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, args)
            return {"isError": bool(result.is_error), "text": text_of(result), "structured": result.structured_content}


def test_the_declared_compensation_is_held_until_the_todo_is_removed_then_undoes_the_call(tmp_path):
    policy, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "notes.json"
    argv = [*SERVER, "--state", str(state)]
    assert cli("init", "notes", "--manifest", str(policy), "--", *argv).returncode == 0
    proxy = proxy_argv("notes", policy, journal, argv)
    held = asyncio.run(_call(proxy, "create_note", {"title": "draft"}))
    assert held["isError"] and "synartesis approve" in held["text"]
    assert not state.exists() or json.loads(state.read_text())["notes"] == {}  # nothing was created
    # the person checked it and removes the hold (the TODO's last step)
    text = policy.read_text()
    block = text[text.index('  - match: "notes.create_note"'):]
    policy.write_text(text.replace(block, block.replace('    gate: "always"\n', "", 1)))
    made = asyncio.run(_call(proxy, "create_note", {"title": "agent's note"}))
    assert not made["isError"], made
    nid = made["structured"]["id"]
    assert json.loads(state.read_text())["notes"] == {nid: "agent's note"}
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        (action,) = [a for a in j.actions(run.id) if a.status == "applied"]
        assert j.get_json(action.inverse_ref) == [{"server": "notes", "tool": "delete_note", "args": {"id": nid}}]
    undone = cli("undo", run.id, "--manifest", str(policy), "--journal", str(journal))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert json.loads(state.read_text())["notes"] == {}



def test_install_drafts_the_declared_compensation_and_counts_it(tmp_path):
    import installkit

    home = Path(os.environ["HOME"])  # the test's temporary HOME
    entry = {"command": SERVER[0], "args": [SERVER[1], "--state", str(tmp_path / "notes.json")]}
    installkit.place(home, "claude-code", json.dumps({"mcpServers": {"notes": entry}}))
    done = installkit.cli(tmp_path, "install", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "2 compensation(s) declared by the server drafted (not checked, held); 4 declaration(s) refused" in out
    [policy] = [Path(w) for w in done.stdout.split() if w.endswith("synartesis.yaml")]
    pol = load_policy(policy)
    create = pol.rule_for("notes", "create_note", {})
    assert (create.cls, create.gate) == ("compensable", "always")
    assert [(c.tool, c.args) for c in create.inverse] == [("delete_note", {"id": "$result.id"})]
    assert pol.rule_for("notes", "tag_notes", {}).cls == "irreversible"
