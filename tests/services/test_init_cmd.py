"""`synartesis init NAME -- CMD ARGS…` (issue 5 item 4) with real servers: the shipped policy
is adopted for a recognised server, an unknown server gets a fail-closed draft, and merging
into an existing file keeps the user's comments and rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import helpers

from synartesis.policy import load_policy

# A small but real MCP server (stdio, newline-delimited JSON-RPC) that synartesis does not know.
UNKNOWN_SERVER = r'''
import json, sys
TOOLS = [
    {"name": "list_widgets", "description": "List the widgets.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True}},
    {"name": "scrap_widget", "description": "Scrap a widget.\n  For good.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "paint_widget", "description": "Paint a widget.", "inputSchema": {"type": "object"}},
]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "widget-works", "version": "0.1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": TOOLS}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''

USER_FILE = """\
# Alex's policy. Do not lose this comment.
version: 1
servers:
  # the CRM (mine)
  crm:
    command: python3
    args: ["-m", "synartesis.demo.crm_server"]
tools:
  # my own rule
  - match: "crm.get_customer"
    class: readonly   # trailing note
"""


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return helpers.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)


def test_init_adopts_the_shipped_policy_and_keeps_the_users_file(tmp_path: Path, fs_server, synartesis_cmd) -> None:
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(USER_FILE)
    root = tmp_path / "notes"
    root.mkdir()
    res = _run(synartesis_cmd + ["init", "notes", "--", *fs_server, str(root)], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"EXTENDED {policy}" in res.stdout
    assert "Recognised as filesystem" in res.stdout and "live" in res.stdout
    text = policy.read_text()
    for kept in ("# Alex's policy. Do not lose this comment.", "# the CRM (mine)", "# my own rule",
                 "# trailing note"):
        assert kept in text, kept
    loaded = load_policy(policy)
    assert set(loaded.servers) == {"crm", "notes"}
    assert loaded.rule_for("crm", "get_customer", {}).cls == "readonly"
    w = loaded.rule_for("notes", "write_file", {"path": "x"})
    assert w.cls == "reversible" and w.snapshot.server == "notes"
    assert loaded.rule_for("notes", "move_file", {}).cls == "reversible"
    assert loaded.rule_for("notes", "create_directory", {}).gate == "always"
    assert loaded.servers["notes"].provenance == "live"
    assert list(loaded.servers["notes"].args)[-1] == str(root)
    assert "TODO" not in text
    # the proxy command to use is printed with the real command line
    assert f"proxy --server notes --manifest {policy}" in res.stdout


def test_init_drafts_an_unknown_server_fail_closed(tmp_path: Path, synartesis_cmd) -> None:
    script = tmp_path / "widgets.py"
    script.write_text(UNKNOWN_SERVER)
    policy = tmp_path / "p.yaml"
    res = _run(synartesis_cmd + ["init", "widgets", "--manifest", str(policy), "--",
                                 sys.executable, str(script), "--verbose"], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"WROTE {policy}" in res.stdout and "Drafted" in res.stdout
    assert "2 rule(s) marked TODO" in res.stdout
    text = policy.read_text()
    loaded = load_policy(policy)
    assert loaded.rule_for("widgets", "list_widgets", {}).cls == "readonly"
    for tool in ("scrap_widget", "paint_widget"):
        rule = loaded.rule_for("widgets", tool, {})
        assert (rule.cls, rule.gate, rule.matched) == ("irreversible", "always", True)
    assert "# scrap_widget: Scrap a widget. For good." in text
    assert "readOnlyHint" in text
    assert loaded.servers["widgets"].provenance is None
    assert list(loaded.servers["widgets"].args) == [str(script), "--verbose"]  # flags after -- are the server's


def test_init_refuses_a_name_the_user_declared(tmp_path: Path, fs_server, synartesis_cmd) -> None:
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(USER_FILE)
    res = _run(synartesis_cmd + ["init", "crm", "--", *fs_server, str(tmp_path)], cwd=tmp_path)
    assert res.returncode == 2 and "already declared" in res.stderr
    assert policy.read_text() == USER_FILE


def test_init_usage_errors(tmp_path: Path, synartesis_cmd) -> None:
    assert _run(synartesis_cmd + ["init", "a.b", "--", "x"], cwd=tmp_path).returncode == 2
    res = _run(synartesis_cmd + ["init", "nocmd"], cwd=tmp_path)
    assert res.returncode == 2 and "needs a server name and a command" in res.stderr
    assert _run(synartesis_cmd + ["init", "x", "--bogus", "--", "y"], cwd=tmp_path).returncode == 2


def test_init_reports_a_server_that_does_not_start(tmp_path: Path, synartesis_cmd) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import sys; sys.stderr.write('boom: no config\\n'); sys.exit(3)\n")
    res = _run(synartesis_cmd + ["init", "dies", "--", sys.executable, str(script)], cwd=tmp_path)
    assert res.returncode == 1
    assert "boom: no config" in res.stderr
    assert not (tmp_path / "synartesis.yaml").exists()


def test_init_twice_updates_our_block(tmp_path: Path, synartesis_cmd, fake_home: Path) -> None:
    script = tmp_path / "widgets.py"
    script.write_text(UNKNOWN_SERVER)
    # no synartesis.yaml here or above: the policy goes to $SYNARTESIS_HOME
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    argv = synartesis_cmd + ["init", "widgets", "--", sys.executable, str(script)]
    assert _run(argv, cwd=tmp_path).returncode == 0
    policy.write_text(policy.read_text() + "# my note at the end\n")
    assert _run(argv + ["--again"], cwd=tmp_path).returncode == 0
    text = policy.read_text()
    assert "# my note at the end" in text
    assert text.count('match: "widgets.paint_widget"') == 1
    assert list(load_policy(policy).servers["widgets"].args)[-1] == "--again"
