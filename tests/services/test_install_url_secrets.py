"""Secrets that used to leave where the user put them (adversarial review #5, #6): keys in a
remote URL's path or under a short query name, and the literal header values a Codex wrap
keeps as comments."""
import json

from helpers import cli

ZAPIER = "https://mcp.zapier.com/api/mcp/s/MzQ1NjdhYmMtZGVmMC0xMjM0LTU2NzgtOWFiY2RlZjAxMjM0OjEyMzQ1Ng==/mcp"
HEXKEY = "a8f5f167f44f4964e6c998dee827110c"


def test_a_url_whose_path_or_short_query_is_the_key_never_reaches_the_policy(fake_home):
    # Zapier-style MCP URLs carry the secret in the path; many hosted servers take ?k=/?key=-less
    # short names. install copies the URL into synartesis.yaml (and the journal's launch line).
    (fake_home / ".claude.json").write_text(json.dumps({"mcpServers": {
        "zap": {"type": "http", "url": ZAPIER},
        "smith": {"type": "http", "url": f"https://server.smithery.ai/@foo/bar/mcp?profile=x&k={HEXKEY}"},
    }}))
    for shown in (cli("install", "--dry-run", "--no-start", "--include-oauth"),
                  cli("install", "--dry-run", "--no-start", "--include-oauth", "--json")):
        assert shown.returncode == 0, shown.stderr
        assert "MzQ1NjdhYmMtZGVmMC0x" not in shown.stdout + shown.stderr
        assert HEXKEY not in shown.stdout + shown.stderr
    r = cli("install", "--yes", "--no-start", "--include-oauth")
    assert r.returncode == 0, r.stderr
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert "MzQ1NjdhYmMtZGVmMC0x" not in policy
    assert HEXKEY not in policy
    zap = json.loads((fake_home / ".claude.json").read_text())["mcpServers"]["zap"]
    assert "MzQ1NjdhYmMtZGVmMC0x" not in json.dumps(zap["args"])  # in env, out of `ps`
    installed = (fake_home / ".synartesis" / "installed.json").read_text()
    assert "MzQ1NjdhYmMtZGVmMC0x" not in installed and HEXKEY not in installed


def test_codex_install_dry_run_and_json_never_print_a_literal_http_header(fake_home):
    (fake_home / ".codex").mkdir()
    (fake_home / ".codex" / "config.toml").write_text(
        '[mcp_servers.hdrs]\nurl = "https://mcp.example.com/mcp"\n'
        'http_headers = { "X-Secret" = "lit-secret-value-123" }\n')
    dry = cli("install", "--dry-run", "--no-start")
    assert dry.returncode == 0, dry.stderr
    assert "lit-secret-value-123" not in dry.stdout + dry.stderr  # today: the "# synartesis: http_headers = …" line
    js = cli("install", "--dry-run", "--no-start", "--json")
    assert "lit-secret-value-123" not in js.stdout + js.stderr


def test_the_desktop_refuses_a_base_url_with_a_short_named_key(fake_home):
    from synartesis.desktop.settings import SettingsError, check_base_url
    import pytest
    with pytest.raises(SettingsError):
        check_base_url(f"https://api.openai.com/v1?k={HEXKEY}")
