"""A new user's round 31, #7: with no client config at all, `install --yes` printed "No client
config files found. Nothing to change: every server that can be wrapped already is." and
`status` ended "0 of 0 … covered; no policy yet (`synartesis install` writes …)", though install
writes nothing. Both now say plainly that no MCP client config was found and where they looked."""

from __future__ import annotations

import json

from installkit import cli, fake_proxy


def _looked(text: str) -> list[str]:
    [line] = [x for x in text.splitlines() if x.startswith("No MCP client config found; looked in: ")]
    return line.split("looked in: ", 1)[1].split(" (and for project files", 1)[0].split(", ")


def test_install_with_no_client_config_says_none_was_found_and_where_it_looked(fake_home, tmp_path):
    res = cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "already is" not in res.stdout and "No client config files found" not in res.stdout, res.stdout
    looked = _looked(res.stdout)
    assert str(fake_home / ".claude.json") in looked and str(fake_home / ".cursor" / "mcp.json") in looked
    assert str(fake_home / ".codex" / "config.toml") in looked, looked
    assert not (fake_home / ".synartesis" / "synartesis.yaml").exists()
    doc = json.loads(cli(tmp_path, "install", "--json", "--no-start", "--proxy-path", fake_proxy(tmp_path)).stdout)
    assert str(fake_home / ".claude.json") in doc["looked_in"]


def test_status_with_no_client_config_says_none_was_found_and_does_not_send_you_to_install(fake_home, tmp_path):
    res = cli(tmp_path, "status")
    looked = _looked(res.stdout)
    assert str(fake_home / ".claude.json") in looked, res.stdout
    assert "No MCP servers found" not in res.stdout
    assert "`synartesis install` writes" not in res.stdout, res.stdout
    doc = json.loads(cli(tmp_path, "status", "--json").stdout)
    assert str(fake_home / ".claude.json") in doc["looked_in"]


def test_a_client_config_that_lists_no_server_is_found_but_install_still_writes_no_policy(fake_home, tmp_path):
    """A config with no servers is found (not "no config"): status does not promise a policy."""
    from pathlib import Path

    from installkit import place
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "claude-desktop" / "davay-globalshortcut-empty-servers.json"
    cfg = place(fake_home, "claude-desktop", fixture.read_bytes())
    res = cli(tmp_path, "status")
    assert "No MCP client config found" not in res.stdout and "`synartesis install` writes" not in res.stdout, res.stdout
    res = cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    assert res.returncode == 0 and "already is" not in res.stdout, res.stdout
    assert cfg.read_bytes() == fixture.read_bytes()
