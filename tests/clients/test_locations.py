"""Descriptors load from the package data, and their paths resolve against an injected Env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synartesis.clients.descriptor import DescriptorError, get_descriptor, load_descriptors, parse_descriptor
from synartesis.clients.discover import discover
from synartesis.clients.locations import expand_template, managed_paths, project_roots, user_locations
from synartesis.errors import UsageError
from synartesis.paths import Env


def env_for(home: Path, platform: str = "linux", cwd: Path | None = None, **environ: str) -> Env:
    return Env(home=home, environ=environ, platform=platform, cwd=cwd or home)


def touch(p: Path, text: str = "{}") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_every_shipped_descriptor_loads():
    ids = [d.id for d in load_descriptors()]
    assert ids == ["claude-code", "claude-desktop", "codex", "cursor"]
    with pytest.raises(UsageError):
        get_descriptor("nope")


def test_a_descriptor_with_an_unknown_key_is_refused():
    with pytest.raises(DescriptorError, match="unknown keys"):
        parse_descriptor({"schema_version": 1, "id": "x", "display_name": "X", "format": "json",
                          "files": [], "colour": "red"}, "clients/x.toml")


def test_claude_code_reads_both_claude_config_dir_and_home_files(tmp_path):
    home = tmp_path / "h"
    a = touch(home / "alt" / ".claude.json")
    b = touch(home / ".claude.json")
    locs, _ = user_locations(get_descriptor("claude-code"), env_for(home, CLAUDE_CONFIG_DIR=str(home / "alt")))
    assert [l.path for l in locs] == [a, b]
    locs, _ = user_locations(get_descriptor("claude-code"), env_for(home))
    assert [l.path for l in locs] == [b]


def test_codex_home_moves_the_config(tmp_path):
    home = tmp_path / "h"
    moved = touch(tmp_path / "elsewhere" / "config.toml", "")
    touch(home / ".codex" / "config.toml", "")
    locs, _ = user_locations(get_descriptor("codex"), env_for(home, CODEX_HOME=str(tmp_path / "elsewhere")))
    assert [l.path for l in locs] == [moved]


@pytest.mark.parametrize("platform, rel, environ", [
    ("darwin", "Library/Application Support/Claude/claude_desktop_config.json", {}),
    ("linux", ".config/Claude/claude_desktop_config.json", {}),
    ("linux", "xdg/Claude/claude_desktop_config.json", {"XDG_CONFIG_HOME": "{home}/xdg"}),
    ("win32", "AppData/Roaming/Claude/claude_desktop_config.json", {}),
])
def test_claude_desktop_path_per_platform(tmp_path, platform, rel, environ):
    home = tmp_path / "h"
    f = touch(home / rel)
    environ = {k: v.replace("{home}", str(home)) for k, v in environ.items()}
    locs, _ = user_locations(get_descriptor("claude-desktop"), env_for(home, platform, **environ))
    assert [l.path for l in locs] == [f]


def test_claude_desktop_msix_path_wins_over_appdata_and_several_are_not_guessed(tmp_path):
    home = tmp_path / "h"
    env = env_for(home, "win32", LOCALAPPDATA=str(home / "L"), APPDATA=str(home / "R"))
    touch(home / "R" / "Claude" / "claude_desktop_config.json")
    msix = touch(home / "L" / "Packages" / "Claude_pzs8sxrjxfjjc" / "LocalCache" / "Roaming" / "Claude"
                 / "claude_desktop_config.json")
    locs, notes = user_locations(get_descriptor("claude-desktop"), env)
    assert [l.path for l in locs] == [msix]
    assert any("not read by the app" in n for n in notes)
    touch(home / "L" / "Packages" / "Claude_other" / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json")
    locs, notes = user_locations(get_descriptor("claude-desktop"), env)
    assert locs == [] and any("not guessing" in n for n in notes)


def test_managed_paths_are_rerooted_for_tests_and_use_program_files_on_windows(tmp_path):
    desc = get_descriptor("claude-code")
    assert managed_paths(desc, env_for(tmp_path), tmp_path / "sys")["settings"] == \
        tmp_path / "sys" / "etc" / "claude-code" / "managed-settings.json"
    win = managed_paths(desc, env_for(tmp_path, "win32", ProgramFiles="D:\\PF"))
    assert str(win["mcp"]).replace("\\", "/") == "D:/PF/ClaudeCode/managed-mcp.json"
    assert expand_template("{env:NOPE}/x", env_for(tmp_path)) is None


def test_project_roots_from_claude_projects_cwd_cursor_workspaces_and_codex_trust(tmp_path):
    home = tmp_path / "h"
    proj = tmp_path / "p"
    touch(proj / ".cursor" / "mcp.json")
    sub = proj / "src"
    sub.mkdir()
    ws = home / ".config" / "Cursor" / "User" / "workspaceStorage" / "abc" / "workspace.json"
    touch(ws, json.dumps({"folder": "file://" + str(tmp_path / "w%20s")}))
    roots = project_roots(get_descriptor("cursor"), env_for(home, cwd=sub), [])
    assert roots == [(str(proj), proj), (str(tmp_path / "w s"), tmp_path / "w s")]
    roots = project_roots(get_descriptor("claude-code"), env_for(home, cwd=home), [{"projects": {"C:/x": {}, "/y": {}}}])
    assert [k for k, _ in roots] == ["C:/x", "/y"]
    codex_user = {"projects": {"/t": {"trust_level": "trusted"}, "/u": {"trust_level": "untrusted"}}}
    assert [k for k, _ in project_roots(get_descriptor("codex"), env_for(home, cwd=home), [codex_user])] == ["/t"]


def test_untrusted_codex_project_file_is_noted_not_read(tmp_path):
    home = tmp_path / "h"
    touch(home / ".codex" / "config.toml", "")
    proj = tmp_path / "p"
    touch(proj / ".codex" / "config.toml", "[mcp_servers.a]\ncommand = 'x'\n")
    found = discover(env_for(home, cwd=proj), [get_descriptor("codex")])
    assert [f.location.scope for f in found.files] == ["user"]
    assert any("not trusted" in n for n in found.notes)
