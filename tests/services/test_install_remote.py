"""install / status / uninstall for remote entries (issue 12 item 5): wrapped where the client
allows, in place, every other key kept, credentials by reference, Codex never mixing ``url``
with ``command``, OAuth entries only with ``--include-oauth``, and uninstall byte for byte."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from installkit import cli, fake_proxy, install, make_env, options, place, uninstall
from synartesis.paths import Env
from synartesis.remote.tokens import TokenRecord, TokenStore
from synartesis.services.install import plan_install
from synartesis.services.install_state import state_path
from synartesis.services.status import collect_status

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
REMOTE_FIXTURES = sorted(p for p in CASES.glob("*/*") if p.is_file() and (
    b'"url"' in p.read_bytes() or b"\nurl = " in p.read_bytes() or p.read_bytes().startswith(b"[mcp_servers")))

SECRET = "sk-live-DO-NOT-LEAK-0123456789abcdef"


def by_name(plan) -> dict:
    return {e.name: e for e in plan.entries}


@pytest.mark.parametrize("oauth", [False, True], ids=["plain", "include-oauth"])
@pytest.mark.parametrize("fixture", REMOTE_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_with_remote_entries_round_trips_byte_for_byte(fixture, oauth, fake_home, tmp_path):
    client = fixture.parent.name
    original = fixture.read_bytes()
    cfg = place(fake_home, client, original)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client=client, include_oauth=oauth)
    assert result.ok, result.files
    if client == "codex":
        doc = tomllib.loads(cfg.read_text(encoding="utf-8"))
        for name, entry in doc.get("mcp_servers", {}).items():
            assert not ("url" in entry and "command" in entry), f"{name} mixes url and command"
    remote_wraps = [e for e in plan.entries if e.action in ("wrap", "shadow") and "remote" in e.reason]
    if client == "claude-desktop":
        assert not remote_wraps
    else:  # every remote entry is wrapped, unless the client skips it or it waits for --include-oauth
        acts = {e.name: e for e in plan.entries}
        after = _servers(fixture, cfg.read_bytes())
        for name in _remote_names(fixture, original):
            e = acts[name]
            if e.action == "invalid":
                assert 'without a "type"' in e.reason, (name, e.reason)
                continue
            assert e.action == "wrap" or (e.action == "remote" and not oauth and "OAuth" in e.reason), (name, e)
            if e.action == "wrap":
                args = after[name]["args"]
                assert args[:3] == ["proxy", "--server", e.policy_key] and ("--url" in args or "--url-env" in args)
    assert not plan_install(env, options(tmp_path, client=client, include_oauth=oauth)).changes  # idempotent
    uninstall(env, client=client)
    assert cfg.read_bytes() == original


def _servers(fixture: Path, data: bytes) -> dict:
    text = data.decode("utf-8-sig")
    if fixture.suffix == ".toml":
        return tomllib.loads(text).get("mcp_servers", {})
    return json.loads(text).get("mcpServers", {})


def _remote_names(fixture: Path, data: bytes) -> list[str]:
    return [n for n, v in _servers(fixture, data).items() if isinstance(v, dict) and "url" in v]


def test_the_corpus_has_remote_entries_of_every_client_that_can_hold_them():
    assert {p.parent.name for p in REMOTE_FIXTURES} >= {"claude-code", "cursor", "codex"}


def test_claude_code_remote_entry_keeps_its_keys_and_its_references(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {"synap": {
        "type": "http", "url": "https://mcp.synap.example/mcp", "headers": {"Authorization": "Bearer ${SYNAP_KEY}"},
        "timeout": 30000, "alwaysLoad": True, "x-custom": [1, 2]}}}, indent=2) + "\n"
    cfg = place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code")
    assert result.ok and by_name(plan)["synap"].action == "wrap"
    entry = json.loads(cfg.read_text())["mcpServers"]["synap"]
    assert entry["type"] == "stdio" and entry["command"] == fake_proxy(tmp_path)
    assert entry["args"] == ["proxy", "--server", "synap", "--url", "https://mcp.synap.example/mcp",
                             "--header-env", "Authorization=SYNARTESIS_HEADER_1", "--transport", "http"]
    assert entry["env"] == {"SYNARTESIS_HEADER_1": "Bearer ${SYNAP_KEY}"}  # the client expands it, we never do
    assert entry["timeout"] == 30000 and entry["alwaysLoad"] is True and entry["x-custom"] == [1, 2]
    assert entry["headers"] == {"Authorization": "Bearer ${SYNAP_KEY}"}
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert '["remote-relay", "--server", "synap", "--url", "https://mcp.synap.example/mcp", "--header-env", ' \
           '"Authorization=SYNARTESIS_HEADER_1", "--transport", "http"]' in policy  # references, not values
    uninstall(env, client="claude-code")
    assert cfg.read_text() == text


def test_cursor_keeps_env_references_and_a_url_holding_a_key_stays_out_of_args(fake_home, tmp_path):
    text = ('{\n\t"mcpServers": {\n\t\t"bright": {\n\t\t\t"url": "https://${env:BRIGHT_HOST}/mcp?key=${env:K}",\n'
            '\t\t\t"headers": {"Api-Key": "${env:BRIGHT_KEY}"}\n\t\t}\n\t}\n}')
    cfg = place(fake_home, "cursor", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="cursor")
    assert result.ok and by_name(plan)["bright"].action == "wrap"
    entry = json.loads(cfg.read_text())["mcpServers"]["bright"]
    assert entry["type"] == "stdio"
    assert "--url-env" in entry["args"] and not any("${env:" in a for a in entry["args"])
    assert entry["env"] == {"SYNARTESIS_URL": "https://${env:BRIGHT_HOST}/mcp?key=${env:K}",
                            "SYNARTESIS_HEADER_1": "${env:BRIGHT_KEY}"}
    uninstall(env, client="cursor")
    assert cfg.read_text() == text


def test_codex_bearer_and_env_headers_become_pass_through_names_and_url_goes_into_a_comment(fake_home, tmp_path):
    text = ('# my servers\n[mcp_servers.synap]\nurl = "https://mcp.synap.example/mcp"  # hosted\n'
            'bearer_token_env_var = "SYNAP_KEY"\nstartup_timeout_sec = 20\nenabled_tools = ["recall_context"]\n\n'
            '[mcp_servers.synap.env_http_headers]\nX-Org = "SYNAP_ORG"\n\n'
            '[mcp_servers.synap.http_headers]\nX-Static = "' + SECRET + '"\n\n[other]\nk = 1\n')
    cfg = place(fake_home, "codex", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="codex")
    assert result.ok and by_name(plan)["synap"].action == "wrap"
    new = cfg.read_text()
    entry = tomllib.loads(new)["mcp_servers"]["synap"]
    assert "url" not in entry and "bearer_token_env_var" not in entry and "http_headers" not in entry
    assert entry["command"] == fake_proxy(tmp_path)
    assert entry["args"][:5] == ["proxy", "--server", "synap", "--url", "https://mcp.synap.example/mcp"]
    assert "--bearer-env" in entry["args"] and "X-Org=SYNAP_ORG" in entry["args"]
    assert sorted(entry["env_vars"]) == ["SYNAP_KEY", "SYNAP_ORG"]
    assert entry["env"] == {"SYNARTESIS_HEADER_1": SECRET}  # a literal stays literal, in the same file
    assert entry["startup_timeout_sec"] == 20 and entry["enabled_tools"] == ["recall_context"]
    assert '# synartesis: url = "https://mcp.synap.example/mcp"  # hosted' in new
    assert "# synartesis: [mcp_servers.synap.http_headers]" in new
    record = state_path(env).read_text()
    assert SECRET not in record and "SYNAP_KEY" not in record
    assert SECRET not in (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    uninstall(env, client="codex")
    assert cfg.read_text() == text


def test_oauth_entries_wait_for_include_oauth_and_then_list_the_login_commands(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {
        "notion": {"type": "http", "url": "https://mcp.notion.com/mcp"},
        "linear": {"type": "sse", "url": "https://mcp.linear.app/sse", "oauth": {"clientId": "abc"}},
        "keyed": {"type": "http", "url": "https://k.example/mcp", "headers": {"Authorization": "Bearer ${K}"}},
        "Company Docs": {"type": "http", "url": "https://docs.example/mcp"}}},
        indent=2)
    cfg = place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan = plan_install(env, options(tmp_path, client="claude-code"))
    acts = by_name(plan)
    assert acts["notion"].action == "remote" and "--include-oauth" in acts["notion"].reason
    assert "`synartesis login notion`" in acts["notion"].reason
    # a name with a space is quoted, so the command can be pasted (new user 18, #4)
    assert "`synartesis login 'Company Docs'`" in acts["Company Docs"].reason
    assert acts["linear"].action == "remote" and acts["keyed"].action == "wrap"
    assert plan.logins == []
    plan, result = install(env, tmp_path, client="claude-code", include_oauth=True)
    assert result.ok
    acts = by_name(plan)
    assert acts["notion"].action == acts["linear"].action == "wrap"
    assert plan.logins[:2] == ["synartesis login notion", "synartesis login linear"]
    entry = json.loads(cfg.read_text())["mcpServers"]["linear"]
    assert entry["oauth"] == {"clientId": "abc"} and "--transport" in entry["args"] and "sse" in entry["args"]
    uninstall(env, client="claude-code")
    assert cfg.read_text() == text


def test_claude_desktop_remote_entries_are_reported_as_living_in_the_app(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {"remote": {"url": "https://example.net/mcp"}}})
    cfg = place(fake_home, "claude-desktop", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-desktop", include_oauth=True)
    assert "Connectors" in by_name(plan)["remote"].reason
    assert any("Connectors" in w for w in plan.warnings)
    assert cfg.read_text() == text


def test_a_claude_project_remote_server_is_covered_by_a_local_entry(fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    shared = json.dumps({"mcpServers": {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp",
                                                   "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"}}}})
    (proj / ".mcp.json").write_text(shared)
    user = json.dumps({"projects": {str(proj): {"enabledMcpjsonServers": ["sentry"]}}}, indent=2) + "\n"
    cfg = place(fake_home, "claude-code", user)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code")
    assert result.ok and (proj / ".mcp.json").read_text() == shared
    local = json.loads(cfg.read_text())["projects"][str(proj)]["mcpServers"]["sentry"]
    assert local["type"] == "stdio" and "--url" in local["args"]
    assert local["env"] == {"SYNARTESIS_HEADER_1": "Bearer ${SENTRY_TOKEN}"}
    uninstall(env, client="claude-code")
    assert cfg.read_text() == user


def test_status_shows_the_sign_in_of_each_bridged_server(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {
        "notion": {"type": "http", "url": "https://mcp.notion.com/mcp"},
        "keyed": {"type": "http", "url": "https://k.example/mcp", "headers": {"Authorization": "Bearer ${K}"}}}})
    place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code", include_oauth=True)
    rows = {r.name: r for r in collect_status(env, "claude-code").rows}
    assert rows["keyed"].covered and rows["keyed"].sign_in == "not needed"
    assert rows["notion"].sign_in.startswith("not signed in") and "synartesis login notion" in rows["notion"].sign_in
    TokenStore(Env.current()).put(TokenRecord(server="notion", url="https://mcp.notion.com/mcp",
                                              access_token="at", refresh_token="rt", token_endpoint="https://t"))
    rows = {r.name: r for r in collect_status(env, "claude-code").rows}
    assert rows["notion"].sign_in == "signed in" and not rows["notion"].drift
    shown = {line.split()[1]: line for line in cli(tmp_path, "status", "--client", "claude-code").stdout.splitlines()
             if line.strip().startswith(("✓", "✗"))}
    assert shown["notion"].endswith("sign-in: signed in") and shown["keyed"].endswith("sign-in: not needed")
    uninstall(env, client="claude-code")
    rows = {r.name: r for r in collect_status(env, "claude-code").rows}
    assert rows["notion"].state == "remote" and "--include-oauth" in rows["notion"].reason
    assert rows["keyed"].state == "remote" and "not bridged yet" in rows["keyed"].reason


def test_a_dry_run_diff_hides_literal_header_secrets(fake_home, tmp_path):
    from synartesis.services.install import shown_config_text
    text = json.dumps({"mcpServers": {"x": {"type": "http", "url": "https://x.example/mcp",
                                            "headers": {"Authorization": f"Bearer {SECRET}"}}}}, indent=2)
    place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan = plan_install(env, options(tmp_path, client="claude-code"))
    (fp,) = [f for f in plan.files if f.status == "change"]
    assert SECRET not in shown_config_text("claude-code", fp.new)


def test_login_finds_a_remote_server_by_name_wrapped_or_not(fake_home, tmp_path, monkeypatch):
    from synartesis.errors import UsageError
    from synartesis.services.remote import find_remote
    monkeypatch.setenv("NOTES_KEY", "k-123")
    text = json.dumps({"mcpServers": {
        "notes": {"type": "http", "url": "https://notes.example/mcp", "headers": {"X-Key": "${NOTES_KEY}"},
                  "oauth": {"clientId": "cid", "callbackPort": 8123, "scopes": ["a", "b"]}}}})
    place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    before = find_remote(env, "notes")
    assert before.url == "https://notes.example/mcp" and before.client_id == "cid"
    assert before.callback_port == 8123 and before.scopes == "a b"
    assert before.headers.resolve(before.environ) == {"x-key": "k-123"}  # expanded as Claude Code would, in memory
    install(env, tmp_path, client="claude-code", include_oauth=True)
    after = find_remote(env, "notes")
    assert after.url == "https://notes.example/mcp" and after.headers.resolve(after.environ) == {"x-key": "k-123"}
    assert after.client_id == "cid" and after.callback_port == 8123
    with pytest.raises(UsageError):
        find_remote(env, "nope")
    assert find_remote(env, "nope", "https://x.example/mcp").url == "https://x.example/mcp"


def test_a_claude_code_headers_helper_is_carried_to_the_bridge_as_written(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {"corp": {"type": "http", "url": "https://mcp.corp.example/mcp",
                                               "headersHelper": "~/bin/corp-token --json"}}}, indent=2) + "\n"
    cfg = place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code")
    assert result.ok and by_name(plan)["corp"].action == "wrap"  # a helper gives Authorization: no OAuth wait
    entry = json.loads(cfg.read_text())["mcpServers"]["corp"]
    assert entry["args"] == ["proxy", "--server", "corp", "--url", "https://mcp.corp.example/mcp",
                             "--headers-helper", "~/bin/corp-token --json", "--transport", "http"]
    assert entry["headersHelper"] == "~/bin/corp-token --json"
    uninstall(env, client="claude-code")
    assert cfg.read_text() == text


def test_claude_desktop_without_remote_entries_gets_no_connectors_warning(fake_home, tmp_path):
    """A new user's round 8: the warning came for every Claude Desktop file, remote entries or not."""
    place(fake_home, "claude-desktop", json.dumps({"mcpServers": {"files": {"command": "node", "args": ["x.js"]}}}))
    plan, result = install(make_env(fake_home), tmp_path, client="claude-desktop")
    assert result.ok and not [w for w in plan.warnings if "Connectors" in w]
