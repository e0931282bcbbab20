"""Every real-world config in tests/fixtures/configs (copied from the team's shared/cases/configs:
client config files people published): install then uninstall gives the original bytes exactly;
a file that does not parse is left untouched and reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from installkit import fake_proxy, install, make_env, options, place, uninstall
from synartesis.services.install import plan_install

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
FIXTURES = sorted(p for p in CASES.glob("*/*") if p.is_file()) if CASES.is_dir() else []


def test_the_fixture_folder_is_there():
    assert len(FIXTURES) >= 30, f"expected the real-world configs in {CASES}"


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_install_then_uninstall_gives_the_original_bytes(fixture, fake_home, tmp_path):
    client = fixture.parent.name
    original = fixture.read_bytes()
    cfg = place(fake_home, client, original)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client=client)
    assert result.ok, result.files
    wrapped = [e for e in plan.entries if e.action == "wrap"]
    if wrapped:
        assert cfg.read_bytes() != original
        text = cfg.read_text(encoding="utf-8")
        for e in wrapped:
            assert f'"--server", "{e.policy_key}", "--"' in text or f'"{e.policy_key}",' in text
    else:
        assert cfg.read_bytes() == original
    assert not plan_install(env, options(tmp_path, client=client)).changes  # idempotent
    uninstall(env, client=client)
    assert cfg.read_bytes() == original


@pytest.mark.parametrize("fixture", [p for p in FIXTURES if p.name.endswith(".mcp.json")],
                         ids=lambda p: p.name)
def test_claude_project_fixtures_stay_untouched_and_the_user_file_comes_back(fixture, fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_bytes(fixture.read_bytes())
    names = list(json.loads(fixture.read_text())["mcpServers"])
    user = json.dumps({"projects": {str(proj): {"enabledMcpjsonServers": names}}}, indent=2) + "\n"
    cfg = place(fake_home, "claude-code", user)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code")
    assert result.ok
    assert (proj / ".mcp.json").read_bytes() == fixture.read_bytes()
    shadows = [e.name for e in plan.entries if e.action == "shadow"]
    local = json.loads(cfg.read_text())["projects"][str(proj)].get("mcpServers", {})
    assert sorted(local) == sorted(shadows)
    for name in shadows:
        assert local[name]["command"] == fake_proxy(tmp_path)
    uninstall(env, client="claude-code")
    assert cfg.read_text() == user


def _broken_variants():
    out = []
    for p in FIXTURES:
        data = p.read_bytes()
        cut = data[: len(data) // 2] + (b"\n= broken\n" if p.suffix == ".toml" else b"")
        out.append(pytest.param(p.parent.name, cut, id=f"truncated-{p.name}"))
    out.append(pytest.param("cursor", b'{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', id="dup-json"))
    out.append(pytest.param("codex", b'[mcp_servers.a]\ncommand = "x"\n[mcp_servers.a]\ncommand = "y"\n', id="dup-toml"))
    out.append(pytest.param("claude-desktop", b"\xef\xbb\xbf" + b'{"mcpServers": {}} // c', id="comment-json"))
    out.append(pytest.param("claude-desktop", b"", id="empty-json"))
    out.append(pytest.param("codex", b'[mcp_servers.a]\ncommand = "C:\\Users\\x"\n', id="toml-backslash"))
    return out


@pytest.mark.parametrize("client, data", _broken_variants())
def test_a_file_that_does_not_parse_is_untouched_and_reported(client, data, fake_home, tmp_path):
    cfg = place(fake_home, client, data)
    plan, result = install(make_env(fake_home), tmp_path, client=client)
    assert cfg.read_bytes() == data
    (fp,) = plan.files
    assert fp.status == "error" and fp.message.startswith(str(cfg))
    assert [o.status for o in result.files] == ["error"]
    assert not list((fake_home / ".synartesis").glob("backups/*.bak"))
