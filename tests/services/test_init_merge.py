"""merge_policy_text: servers are added to the user's policy without losing their comments or
rules (issue 5 item 4; reference-spec §10 gap 28: a round-trip YAML library, not text)."""

from __future__ import annotations

import pytest

from synartesis.errors import PolicyError
from synartesis.policy import parse_policy
from synartesis.services.policies import merge_policy_text, plan_server_policy

USER_POLICY = """\
# My policy — hand written.  Keep this line!
version: 1

servers:
  # the CRM I use every day
  crm:
    command: python3        # inline comment on command
    args: ["-m", "synartesis.demo.crm_server"]
    note: "mine"

tools:
  # reads are fine
  - match: "crm.get_customer"
    class: readonly
  - match: "crm.send_email"   # never without me
    class: irreversible
    gate: always
# closing remark
"""

TOOLS = [
    {"name": "lookup", "description": "Look something up.", "annotations": {"readOnlyHint": True}},
    {"name": "launch", "description": "Launch the rocket."},
]


def _plan(name: str = "acme", tools=TOOLS):
    return plan_server_policy(name, "./acme", ["--x"], tools=tools, server_info=None, origin=None)


def test_merge_keeps_comments_and_rules() -> None:
    out = merge_policy_text(USER_POLICY, [_plan()])
    for line in ["# My policy — hand written.  Keep this line!", "# the CRM I use every day",
                 "# inline comment on command", "# reads are fine", "# never without me",
                 "# closing remark", 'note: "mine"']:
        assert line in out, line
    policy = parse_policy(out, "t.yaml")
    assert set(policy.servers) == {"crm", "acme"}
    assert policy.rule_for("crm", "get_customer", {}).cls == "readonly"
    assert policy.rule_for("crm", "send_email", {}).gate == "always"
    assert policy.rule_for("acme", "lookup", {}).cls == "readonly"
    assert policy.rule_for("acme", "launch", {}).gate == "always"
    # the user's part of the file is unchanged, line for line, up to our additions
    head = USER_POLICY.split("\n\ntools:")[0].split("  crm:")[1]
    assert head.rstrip() in out


def test_merge_twice_replaces_our_block_and_keeps_user_rules_for_it() -> None:
    first = merge_policy_text(USER_POLICY, [_plan()])
    # the user refines one drafted rule and adds their own
    edited = first.replace('- match: "acme.launch"\n    class: irreversible\n    gate: always',
                           '- match: "acme.launch"\n    class: irreversible\n    gate: never   # I trust it')
    assert edited != first
    edited += '  - match: "acme.extra"\n    class: readonly\n'
    second = merge_policy_text(edited, [_plan(tools=TOOLS + [{"name": "abort", "description": "Abort."}])])
    policy = parse_policy(second, "t.yaml")
    assert policy.rule_for("acme", "launch", {}).gate == "never"          # user's choice kept
    assert "# I trust it" in second
    assert policy.rule_for("acme", "extra", {}).cls == "readonly"
    assert policy.rule_for("acme", "abort", {}).gate == "always"          # new tool drafted
    assert second.count('match: "acme.lookup"') == 1                      # no duplicates
    assert "# the CRM I use every day" in second


def test_shipped_rule_upgrades_a_bare_draft() -> None:
    drafted = plan_server_policy("files", "./fs-wrapper", [], tools=[{"name": "write_file"}],
                                 server_info=None, origin=None)
    text = merge_policy_text(None, [drafted])
    fs_tools = [{"name": n} for n in ["read_file", "read_text_file", "read_media_file", "read_multiple_files",
                                      "list_directory", "list_directory_with_sizes", "directory_tree",
                                      "search_files", "get_file_info", "list_allowed_directories",
                                      "write_file", "edit_file", "create_directory", "move_file"]]
    shipped = plan_server_policy("files", "npx", ["@modelcontextprotocol/server-filesystem", "/d"],
                                 tools=fs_tools, server_info=None, origin=None)
    out = merge_policy_text(text, [shipped])
    policy = parse_policy(out, "t.yaml")
    assert policy.rule_for("files", "write_file", {}).cls == "reversible"
    assert policy.servers["files"].command == "npx"


def test_a_server_the_user_declared_is_not_overwritten() -> None:
    with pytest.raises(PolicyError, match="already declared"):
        merge_policy_text(USER_POLICY, [_plan("crm")])


def test_pins_of_a_replaced_block_are_kept() -> None:
    first = merge_policy_text(None, [_plan()])
    pinned = first.replace('    note: "written by synartesis',
                           '    pins: {lookup: "sha256:' + "a" * 64 + '"}\n    note: "written by synartesis')
    out = merge_policy_text(pinned, [_plan()])
    assert parse_policy(out, "t.yaml").servers["acme"].pins == {"lookup": "sha256:" + "a" * 64}


@pytest.mark.parametrize("text", [
    "version: 1\nservers: {}\ntools: []\n",
    "version: 1\nservers:\ntools:\n",
    "# only a comment\n",
    "",
])
def test_empty_and_flow_style_files_can_be_extended(text: str) -> None:
    out = merge_policy_text(text, [_plan()])
    assert parse_policy(out, "t.yaml").rule_for("acme", "launch", {}).gate == "always"
    if text.startswith("# only"):
        assert "# only a comment" in out


def test_invalid_yaml_is_refused_with_a_location() -> None:
    with pytest.raises(PolicyError) as err:
        merge_policy_text("version: 1\nservers:\n  a: [unclosed\n", [_plan()], filename="p.yaml")
    assert str(err.value).startswith("p.yaml:")


@pytest.mark.parametrize("text", ["- a list\n", "version: 1\nservers: [a]\n", "version: 1\nservers: {}\ntools: {}\n"])
def test_shapes_we_cannot_extend_are_refused(text: str) -> None:
    with pytest.raises(PolicyError):
        merge_policy_text(text, [_plan()])


def test_crlf_and_bom_are_kept() -> None:
    text = "\ufeff" + USER_POLICY.replace("\n", "\r\n")
    out = merge_policy_text(text, [_plan()])
    assert out.startswith("\ufeff")
    assert "\r\n" in out and "\n" not in out.replace("\r\n", "")
    assert "# closing remark" in out


def test_other_indentation_is_respected() -> None:
    text = "version: 1\nservers:\n    crm:\n        command: x\ntools:\n-   match: \"crm.a\"\n    class: readonly\n"
    out = merge_policy_text(text, [_plan()])
    assert "\n    acme:\n" in out
    parse_policy(out, "t.yaml")
