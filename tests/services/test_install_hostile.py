"""Hostile but valid client configs (issue 9 items 5, 8, 9): never a traceback, never a changed
file that should not change, never the wrong summary, and the right exit code.

- item 5: lone surrogate escapes in a name, command or args; objects nested 450+ deep;
- item 8: Codex files that are valid TOML but were refused (inline tables, CRLF, ``nan``);
- item 9: something other than an object where servers belong is a configuration error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from installkit import cli as cli_in_process
from installkit import fake_proxy, install, make_env, place, uninstall

from synartesis.clients.jsonedit import MAX_DEPTH


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI as a user runs it: a real process writing to real pipes."""
    return helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=tmp_path, timeout=120)


def _args(tmp_path: Path, args: tuple[str, ...]) -> list[str]:
    return [*args, "--no-start", "--proxy-path", fake_proxy(tmp_path)] if args[0] == "install" else list(args)


def cli(tmp_path: Path, *args: str):
    """The same CLI in this process (the matrices below would take minutes as processes)."""
    return cli_in_process(tmp_path, *_args(tmp_path, args))


def test_each_family_once_as_a_real_process(fake_home, tmp_path):
    for client, text in (("cursor", SURROGATES["name"]), ("cursor", _deep(1000, "top")),
                         ("codex", "mcp_servers = 3\n")):
        cfg = place(fake_home, client, text)
        p = run(tmp_path, *_args(tmp_path, ("install", "--yes")))
        assert "Traceback" not in p.stderr and p.returncode in (0, 2), p.stdout + p.stderr
        p = run(tmp_path, "status")
        assert "Traceback" not in p.stderr, p.stderr
        run(tmp_path, "uninstall", "--yes")
        assert cfg.read_text() == text
        cfg.unlink()


# -- item 5: lone surrogates ---------------------------------------------------------------

SURROGATES = {
    "name": '{"mcpServers": {"\\ud800": {"command": "npx", "args": []}, "ok": {"command": "npx"}}}',
    "command": '{"mcpServers": {"a": {"command": "np\\ud800x", "args": []}, "ok": {"command": "npx"}}}',
    "args": '{"mcpServers": {"a": {"command": "npx", "args": ["\\udc00"]}, "ok": {"command": "npx"}}}',
    "env": '{"mcpServers": {"a": {"command": "npx", "env": {"K": "\\udfff"}}, "ok": {"command": "npx"}}}',
}


@pytest.mark.parametrize("where", sorted(SURROGATES))
def test_a_lone_surrogate_leaves_that_entry_alone_and_wraps_the_rest(fake_home, tmp_path, where):
    cfg = place(fake_home, "cursor", SURROGATES[where])
    for cmd in (("install", "--dry-run"), ("install", "--yes"), ("status",), ("status", "--json"),
                ("uninstall", "--yes")):
        p = cli(tmp_path, *cmd)
        out = p.stdout + p.stderr
        assert "Traceback" not in out and "UnicodeEncodeError" not in out, (cmd, out)
        assert p.returncode in (0, 1), (cmd, out)
        if cmd == ("install", "--dry-run"):
            assert "lone surrogate" in out and "ok [user]: wrap" in out, out
    assert cfg.read_text() == SURROGATES[where]  # uninstall put the one wrapped entry back


def test_a_lone_surrogate_in_codex_is_a_located_parse_error(fake_home, tmp_path):
    text = '[mcp_servers.a]\ncommand = "npx"\nargs = ["\\ud800"]\n'
    cfg = place(fake_home, "codex", text)
    p = cli(tmp_path, "install", "--yes")
    assert p.returncode == 2 and f"{cfg}:3:" in p.stdout and "Traceback" not in p.stderr
    assert cfg.read_text() == text


# -- item 5: deep nesting -------------------------------------------------------------------

def _deep(depth: int, where: str) -> str:
    inner = '{"a":' * depth + "1" + "}" * depth
    if where == "entry":
        return '{"mcpServers": {"a": {"command": "npx", "z": ' + inner + "}}}"
    return '{"mcpServers": {"a": {"command": "npx"}}, "x": ' + inner + "}"


@pytest.mark.parametrize("depth", [450, 499, 1000, 5000])
def test_deep_nesting_is_refused_with_the_file_named_and_nothing_changed(fake_home, tmp_path, depth):
    text = _deep(depth, "top")
    cfg = place(fake_home, "cursor", text)
    for cmd in (("install", "--dry-run"), ("install", "--yes"), ("status",)):
        p = cli(tmp_path, *cmd)
        out = p.stdout + p.stderr
        assert "Traceback" not in out and "RecursionError" not in out, out
        assert p.returncode == 2, (cmd, out)
        assert str(cfg) in out and "levels deep" in out
    assert cfg.read_text() == text


@pytest.mark.parametrize("where", ["top", "entry"])
def test_nesting_up_to_the_limit_installs_and_uninstalls_exactly(fake_home, tmp_path, where):
    text = _deep(MAX_DEPTH - 4, where)
    cfg = place(fake_home, "cursor", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok and [e.action for e in plan.entries] == ["wrap"]
    from synartesis.services.status import collect_status

    assert collect_status(env).rows[0].state == "wrapped"
    uninstall(env)
    assert cfg.read_text() == text


def test_deep_nesting_in_codex_is_refused_without_a_traceback(fake_home, tmp_path):
    text = "x = " + "[" * 3000 + "]" * 3000 + '\n[mcp_servers.a]\ncommand = "npx"\n'
    cfg = place(fake_home, "codex", text)
    p = cli(tmp_path, "install", "--yes")
    out = p.stdout + p.stderr
    assert "Traceback" not in out and p.returncode in (1, 2) and str(cfg) in out, out
    assert cfg.read_text() == text


# -- item 8: Codex files that are valid --------------------------------------------------------

CODEX_VALID = {
    "inline-other-key": 'x = 1\n[mcp_servers]\nx = { command = "npx", a = 1 }\n',
    "inline-crlf": 'mcp_servers = { a = { command = "npx" } }\r\n',
    "inline-crlf-args": 'mcp_servers = { a = { command = "npx", args = ["-y", \'pkg\'] } }\r\n',
    "inline-comment-after": '[mcp_servers]\nx = {command="npx",args=["a"]}  # keep me\n[other]\ny = 2\n',
    "inline-only-key-first": '[mcp_servers]\nx = { args = ["a"], command = "npx", env = { K = "v" } }\n',
    "nan-elsewhere": 'x = nan\ny = [inf, -inf, +nan]\n[mcp_servers.a]\ncommand = "npx"\n',
    "nan-in-entry": '[mcp_servers.a]\ncommand = "npx"\nstartup_timeout_sec = nan\n',
    "date-in-entry": '[mcp_servers.a]\ncommand = "npx"\nwhen = 1979-05-27 07:32:00Z\n',
}


@pytest.mark.parametrize("case", sorted(CODEX_VALID))
def test_valid_codex_files_are_wrapped_and_uninstalled_byte_for_byte(fake_home, tmp_path, case):
    text = CODEX_VALID[case]
    cfg = place(fake_home, "codex", text.encode())
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok, [(e.name, e.action, e.reason) for e in plan.entries]
    assert [e.action for e in plan.entries] == ["wrap"], [(e.name, e.action, e.reason) for e in plan.entries]
    import tomllib

    wrapped = tomllib.loads(cfg.read_text())
    entry = wrapped["mcp_servers"][next(iter(wrapped["mcp_servers"]))]
    assert entry["command"] == fake_proxy(tmp_path) and "--" in entry["args"]
    if "crlf" in case:
        assert b"\r\n" in cfg.read_bytes() and b"\r" not in cfg.read_bytes().replace(b"\r\n", b"")
    uninstall(env)
    assert cfg.read_bytes() == text.encode()


def test_a_codex_entry_that_cannot_be_edited_is_reported_with_its_reason_not_as_all_done(fake_home, tmp_path):
    text = 'mcp_servers = { x = { "command" = "npx" }, y.command = "uvx" }\n'  # dotted key inside an inline table
    cfg = place(fake_home, "codex", text)
    p = cli(tmp_path, "install", "--yes")
    out = p.stdout + p.stderr
    assert "every server that can be wrapped already is" not in out, out
    assert "Traceback" not in out
    import tomllib

    after = tomllib.loads(cfg.read_text())["mcp_servers"]
    assert after["x"]["command"] == fake_proxy(tmp_path)  # the plain one is wrapped
    assert after["y"]["command"] == "uvx" and "dotted keys" in out  # the dotted one reported, with why


def test_nothing_to_change_never_claims_everything_is_covered_when_entries_were_skipped(fake_home, tmp_path):
    place(fake_home, "cursor", '{"mcpServers": {"s": {"command": "dotenvx run -- npx"}}}')
    p = cli(tmp_path, "install", "--yes")
    assert "every server that can be wrapped already is" not in p.stdout
    assert "not wrapped" in p.stdout and "reasons are listed above" in p.stdout


# -- item 9: wrong types where servers belong ---------------------------------------------------

WRONG_TYPES = [
    ("cursor", '{"mcpServers": "x"}', "mcpServers is a string"),
    ("cursor", '{"mcpServers": []}', "mcpServers is a list"),
    ("cursor", '{"mcpServers": 3}', "mcpServers is a number"),
    ("cursor", '{"mcpServers": null}', "mcpServers is null"),
    ("claude-desktop", '{"mcpServers": true}', "mcpServers is a boolean"),
    ("claude-code", '{"projects": "x"}', "projects is a string"),
    ("claude-code", '{"projects": {"/p": {"mcpServers": ["a"]}}}', "projects./p.mcpServers is a list"),
    ("claude-code", '{"projects": {"/p": 7}}', "projects./p is a number"),
    ("codex", "mcp_servers = 3\n", "mcp_servers is a number"),
    ("codex", 'mcp_servers = "x"\n', "mcp_servers is a string"),
    ("codex", "mcp_servers = [1]\n", "mcp_servers is a list"),
    ("codex", "[[mcp_servers]]\ncommand = \"npx\"\n", "mcp_servers is a list"),
]


@pytest.mark.parametrize(("client", "text", "says"), WRONG_TYPES, ids=[f"{c}-{i}" for i, (c, _t, _s) in enumerate(WRONG_TYPES)])
def test_wrong_types_where_servers_belong_are_configuration_errors(fake_home, tmp_path, client, text, says):
    cfg = place(fake_home, client, text)
    for cmd in (("install", "--dry-run"), ("install", "--yes"), ("status",)):
        p = cli(tmp_path, *cmd)
        out = p.stdout + p.stderr
        assert p.returncode == 2, (cmd, out)
        assert str(cfg) in out and says in out, out
        assert "no servers" not in out
    assert cfg.read_text() == text


def test_a_wrong_type_in_one_file_does_not_stop_the_others(fake_home, tmp_path):
    bad = place(fake_home, "cursor", '{"mcpServers": "x"}')
    good = place(fake_home, "claude-desktop", '{"mcpServers": {"a": {"command": "npx"}}}')
    p = cli(tmp_path, "install", "--yes")
    assert p.returncode == 2
    assert json.loads(good.read_text())["mcpServers"]["a"]["command"] == fake_proxy(tmp_path)
    assert bad.read_text() == '{"mcpServers": "x"}'
    p = cli(tmp_path, "status", "--json")
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and {f["status"] for f in doc["files"]} == {"ok", "error"}
