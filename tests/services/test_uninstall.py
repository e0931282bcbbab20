"""uninstall: per-entry restore, never over someone else's change."""

from __future__ import annotations

import json
from pathlib import Path

from installkit import DESKTOP, install, make_env, place, uninstall
from synartesis.services.install import apply_uninstall, plan_uninstall
from synartesis.services.install_state import load_state


def test_a_file_that_no_longer_parses_is_left_alone_and_its_records_kept(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    broken = cfg.read_text()[:-5]
    cfg.write_text(broken)
    plan, result = uninstall(env)
    assert plan.files[0].status == "error" and f"{cfg}:" in plan.files[0].message
    assert cfg.read_text() == broken
    assert len(load_state(env).entries) == 1
    assert not result.ok


def test_a_client_rewrite_during_uninstall_is_refused_and_the_records_kept(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    wrapped = cfg.read_text()
    plan = plan_uninstall(env)
    rewritten = wrapped.replace('"globalShortcut": ""', '"globalShortcut": "F1"')
    result = apply_uninstall(env, plan, before_compare=lambda p: p.write_text(rewritten))
    assert [o.status for o in result.files] == ["conflict"]
    assert cfg.read_text() == rewritten
    assert len(load_state(env).entries) == 1
    uninstall(env)  # a second try works on the new content
    assert json.loads(cfg.read_text())["globalShortcut"] == "F1"
    assert json.loads(cfg.read_text())["mcpServers"]["files"]["command"] == "npx"


def test_a_deleted_config_file_is_reported_and_forgotten(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    cfg.unlink()
    plan, result = uninstall(env)
    assert plan.files[0].status == "gone" and result.ok
    assert not cfg.exists() and load_state(env).entries == []


def test_shadow_is_removed_even_when_the_client_added_servers_beside_it(fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text('{"mcpServers": {"db": {"command": "uvx", "args": ["x"]}}}')
    cfg = place(fake_home, "claude-code", json.dumps({"projects": {str(proj): {"enabledMcpjsonServers": ["db"]}}}))
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    data = json.loads(cfg.read_text())
    data["projects"][str(proj)]["mcpServers"]["mine"] = {"command": "node", "args": ["m.js"]}
    cfg.write_text(json.dumps(data, indent=2))
    uninstall(env, client="claude-code")
    after = json.loads(cfg.read_text())["projects"][str(proj)]
    assert after["mcpServers"] == {"mine": {"command": "node", "args": ["m.js"]}}


def test_client_filter_only_touches_that_client(fake_home, tmp_path):
    desk = place(fake_home, "claude-desktop", DESKTOP)
    cur = place(fake_home, "cursor", '{"mcpServers": {"a": {"command": "npx"}}}')
    env = make_env(fake_home)
    install(env, tmp_path)
    uninstall(env, client="cursor")
    assert cur.read_text() == '{"mcpServers": {"a": {"command": "npx"}}}'
    assert "proxy" in desk.read_text()
    assert [e["client"] for e in load_state(env).entries] == ["claude-desktop"]


def test_nothing_recorded_means_nothing_to_do(fake_home, tmp_path):
    plan, result = uninstall(make_env(fake_home))
    assert plan.files == [] and not plan.changes and result.ok
    assert not Path(fake_home / ".synartesis" / "installed.json").exists()
