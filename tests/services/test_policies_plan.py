"""plan_server_policy: adopt a shipped policy only when every tool it names is advertised;
otherwise draft fail-closed (issue 5 items 3 and 4; INTERFACES.md)."""

from __future__ import annotations

import copy

import pytest

from synartesis.errors import PolicyError
from synartesis.policy import parse_policy
from synartesis.services.policies import (
    SYNARTESIS_NOTE_PREFIX,
    load_shipped,
    merge_policy_text,
    named_tools,
    plan_server_policy,
)


def _tool(name: str, desc: str = "", read_only: bool | None = None, **extra) -> dict:
    t = {"name": name, "description": desc, "inputSchema": {"type": "object", "properties": {}}}
    if read_only is not None:
        t["annotations"] = {"readOnlyHint": read_only}
    t.update(extra)
    return t


def _fs_tools() -> list[dict]:
    """The tool names of server-filesystem 2026.8.31 (FINDINGS.md, filesystem-tools.json)."""
    reads = ["read_file", "read_text_file", "read_media_file", "read_multiple_files",
             "list_directory", "list_directory_with_sizes", "directory_tree", "search_files",
             "get_file_info", "list_allowed_directories"]
    writes = ["write_file", "edit_file", "create_directory", "move_file"]
    return [_tool(n, f"{n} desc", True) for n in reads] + [_tool(n, f"{n} desc", False) for n in writes]


UNKNOWN_TOOLS = [
    _tool("list_things", "Lists things.", True),
    _tool("delete_thing", "Deletes   a thing\n forever.", False),
    _tool("update_thing", "Updates a thing."),                      # no annotations at all
    _tool("weird", "Claims read-only falsely?", None, annotations={"readOnlyHint": "yes"}),
    _tool("send-mail", "x" * 300, False),
]


def _load(plan) -> object:
    return parse_policy(merge_policy_text(None, [plan]), "t.yaml")


def test_unknown_server_draft_gates_every_non_readonly_tool() -> None:
    plan = plan_server_policy("acme", "./acme-server", ["--flag"], tools=UNKNOWN_TOOLS,
                              server_info={"name": "acme", "version": "1"}, origin=None)
    assert plan.source == "drafted" and plan.policy_id is None and plan.provenance is None
    assert plan.todo_count == 4
    policy = _load(plan)
    for tool in UNKNOWN_TOOLS:
        rule = policy.rule_for("acme", tool["name"], {})
        if tool.get("annotations", {}).get("readOnlyHint") is True:
            assert rule.cls == "readonly"
        else:
            assert (rule.cls, rule.gate, rule.matched) == ("irreversible", "always", True), tool["name"]
    # a tool the server did not advertise is held too (fail closed)
    assert policy.rule_for("acme", "new_tool", {}).gate == "always"
    assert policy.servers["acme"].command == "./acme-server"
    assert list(policy.servers["acme"].args) == ["--flag"]
    assert policy.servers["acme"].provenance is None


def test_draft_comments_carry_description_todo_and_the_readonly_claim() -> None:
    plan = plan_server_policy("acme", "./acme-server", [], tools=UNKNOWN_TOOLS,
                              server_info=None, origin=None)
    text = merge_policy_text(None, [plan])
    assert "# delete_thing: Deletes a thing forever." in text        # whitespace collapsed
    assert text.count("TODO") >= 4
    assert "readOnlyHint" in text and "verify it" in text
    assert "x" * 200 not in text                                     # description truncated
    assert "readonly from the server's own readOnlyHint claim" in text


def test_shipped_policy_adopted_and_rekeyed() -> None:
    plan = plan_server_policy("files", "npx", ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                              tools=_fs_tools(), server_info={"name": "secure-filesystem-server"},
                              origin={"client": "claude-code", "file": "/h/.claude.json",
                                      "scope": "user", "entry": "files"})
    assert (plan.source, plan.policy_id, plan.provenance, plan.checked) == ("shipped", "filesystem", "live", True)
    assert plan.todo_count == 0 and plan.uncovered == []
    assert all(r["match"].startswith("files.") for r in plan.rules)
    text = merge_policy_text(None, [plan])
    assert "filesystem." not in text.replace("@modelcontextprotocol/server-filesystem", "")
    policy = parse_policy(text, "t.yaml")
    w = policy.rule_for("files", "write_file", {"path": "a"})
    assert w.cls == "reversible" and w.snapshot.tool == "read_text_file" and w.snapshot.server == "files"
    assert w.snapshot.absent_when == ("ENOENT",) and w.snapshot.refuse_when == ("\ufffd",)
    assert w.inverse[0].server == "files" and w.inverse[0].args == {"path": "$.path", "content": "$snapshot.content"}
    assert policy.rule_for("files", "edit_file", {"dryRun": True}).cls == "readonly"
    assert policy.rule_for("files", "edit_file", {"dryRun": False}).cls == "reversible"
    assert policy.rule_for("files", "create_directory", {}).gate == "always"
    spec = policy.servers["files"]
    assert spec.provenance == "live" and spec.origin["entry"] == "files"
    assert spec.note.startswith(SYNARTESIS_NOTE_PREFIX)


def test_shipped_policy_not_adopted_when_a_named_tool_is_missing() -> None:
    tools = [t for t in _fs_tools() if t["name"] != "read_text_file"]
    plan = plan_server_policy("files", "npx", ["@modelcontextprotocol/server-filesystem", "/x"],
                              tools=tools, server_info=None, origin=None)
    assert plan.source == "drafted" and plan.policy_id == "filesystem"
    assert "read_text_file" in plan.reason and "not used" in plan.reason
    policy = _load(plan)
    assert policy.rule_for("files", "write_file", {}).cls == "irreversible"


def test_advertised_tools_the_shipped_policy_does_not_mention_are_drafted() -> None:
    tools = _fs_tools() + [_tool("delete_file", "Deletes a file.", False), _tool("stat2", "", True)]
    plan = plan_server_policy("files", "npx", ["@modelcontextprotocol/server-filesystem"], tools=tools,
                              server_info=None, origin=None)
    assert plan.source == "shipped" and plan.uncovered == ["delete_file", "stat2"]
    assert plan.todo_count == 1
    policy = _load(plan)
    assert policy.rule_for("files", "delete_file", {}).gate == "always"
    assert "Not mentioned by the shipped filesystem policy" in merge_policy_text(None, [plan])


def test_not_started_recognised_server_is_marked_unchecked() -> None:
    plan = plan_server_policy("notes", "uvx", ["mcp-server-git", "--repository", "/r"], tools=None,
                              server_info=None, origin=None)
    assert (plan.source, plan.policy_id, plan.checked) == ("shipped", "git", False)
    assert "not checked against this install" in plan.reason
    text = merge_policy_text(None, [plan])
    assert "NOT CHECKED" in text
    assert _load(plan).rule_for("notes", "git_status", {}).cls == "readonly"


def test_not_started_unknown_server_gets_one_catch_all_gated_rule() -> None:
    plan = plan_server_policy("mystery", "./srv", [], tools=None, server_info=None, origin=None)
    assert plan.source == "drafted" and plan.todo_count == 1
    assert plan.rules == [{"match": "mystery.*", "class": "irreversible", "gate": "always"}]
    policy = _load(plan)
    assert policy.rule_for("mystery", "anything", {}).matched is True
    assert policy.rule_for("mystery", "anything", {}).gate == "always"


def test_env_names_are_recorded_as_references_never_values(monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_FILE_PATH", "/secret/place/memory.jsonl")
    tools = [_tool(n, "", None) for n in named_tools(load_shipped("memory").rules, "memory")]
    with_env = plan_server_policy("mem", "npx", ["-y", "@modelcontextprotocol/server-memory"], tools=tools,
                                  server_info=None, origin=None, env_names=["MEMORY_FILE_PATH", "OTHER"])
    assert with_env.server["env"] == {"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"}
    text = merge_policy_text(None, [with_env])
    assert "/secret/place" not in text and "OTHER" not in text
    without = plan_server_policy("mem", "npx", ["-y", "@modelcontextprotocol/server-memory"], tools=tools,
                                 server_info=None, origin=None)
    assert "env" not in without.server
    # drafted servers never get env entries
    drafted = plan_server_policy("x", "./x", [], tools=UNKNOWN_TOOLS, server_info=None, origin=None,
                                 env_names=["API_KEY"])
    assert "env" not in drafted.server


def test_memory_rules_are_rekeyed_inside_inverse_lists() -> None:
    tools = [_tool(n) for n in named_tools(load_shipped("memory").rules, "memory")]
    plan = plan_server_policy("brain", "npx", ["@modelcontextprotocol/server-memory"], tools=tools,
                              server_info=None, origin=None)
    policy = _load(plan)
    rule = policy.rule_for("brain", "delete_entities", {})
    assert [c.tool for c in rule.inverse] == ["create_entities", "create_relations"]
    assert {c.server for c in rule.inverse} == {"brain"}


@pytest.mark.parametrize("bad", ["", "a.b", "a__b", "x*"])
def test_bad_names_are_refused(bad: str) -> None:
    with pytest.raises(PolicyError):
        plan_server_policy(bad, "x", [], tools=[], server_info=None, origin=None)


def test_plan_does_not_mutate_the_shipped_cache() -> None:
    before = copy.deepcopy(load_shipped("filesystem").rules)
    plan_server_policy("files", "npx", ["@modelcontextprotocol/server-filesystem"], tools=_fs_tools(),
                       server_info=None, origin=None)
    assert load_shipped("filesystem").rules == before


def test_bad_tool_lists_never_crash_and_stay_fail_closed() -> None:
    tools = [{"name": 'we"ird name: #x'}, {"name": "tab\there"}, {"name": "a.b.c", "annotations": {"readOnlyHint": True}},
             {"name": "*"}, "junk", None, {"name": None}, {"name": "ünï", "description": None, "annotations": "bad"},
             {"name": "$x", "description": ["not", "text"]}]
    plan = plan_server_policy("s", "cmd", ["a", 1], tools=tools, server_info={"name": 5, "version": []},
                              origin={"client": "x", "nested": {"a": 1}})
    policy = _load(plan)
    assert [r.match for r in policy.rules] == ['s.we"ird name: #x', "s.tab\there", "s.a.b.c", "s.ünï", "s.$x"]
    assert policy.rule_for("s", "a.b.c", {}).cls == "readonly"
    assert policy.rule_for("s", "ünï", {}).gate == "always"
    assert policy.rule_for("s", "*", {}).matched is False          # never a glob rule from a tool name
    assert policy.servers["s"].origin == {"client": "x"}
