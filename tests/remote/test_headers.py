"""Remote entries read as references, and resolved only from the proxy's environment."""

from __future__ import annotations

import pytest

from synartesis.errors import UsageError
from synartesis.remote.headers import (
    HeaderSpec,
    parse_header,
    remote_entry,
    run_headers_helper,
)


def test_claude_code_headers_keep_their_references_and_travel_in_env_not_args():
    e = remote_entry({"type": "http", "url": "https://mcp.example/mcp",
                      "headers": {"Authorization": "Bearer ${SYNAP_KEY}", "X-Team": "core"}}, "claude-code")
    assert e.transport == "http" and e.style == "claude" and not e.oauth
    args, env, passthrough = e.headers.to_proxy()
    assert "${SYNAP_KEY}" not in " ".join(args)
    assert env == {"SYNARTESIS_HEADER_1": "Bearer ${SYNAP_KEY}", "SYNARTESIS_HEADER_2": "core"}
    assert args == ["--header-env", "Authorization=SYNARTESIS_HEADER_1", "--header-env", "X-Team=SYNARTESIS_HEADER_2"]
    assert passthrough == []


def test_codex_env_names_become_pass_through_variables():
    e = remote_entry({"url": "https://api.example/mcp", "bearer_token_env_var": "EX_TOKEN",
                      "env_http_headers": {"X-Org": "EX_ORG"}, "http_headers": {"X-Plain": "v"}}, "codex")
    args, env, passthrough = e.headers.to_proxy()
    assert "--bearer-env" in args and "EX_TOKEN" in args and sorted(passthrough) == ["EX_ORG", "EX_TOKEN"]
    assert env == {"SYNARTESIS_HEADER_1": "v"}
    assert not e.oauth


def test_an_entry_without_credentials_or_with_oauth_settings_may_need_a_sign_in():
    assert remote_entry({"url": "https://mcp.notion.com/mcp"}, "cursor").oauth
    e = remote_entry({"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer t"},
                      "oauth": {"clientId": "abc"}}, "claude-code")
    assert e.oauth and e.explicit_oauth
    assert remote_entry({"type": "sse", "url": "https://x/sse"}, "claude-code").transport == "sse"
    assert remote_entry({"command": "npx"}, "claude-code") is None


def test_a_url_with_a_reference_or_a_key_goes_through_the_environment():
    assert remote_entry({"url": "https://x/mcp"}, "cursor").url_args() == (["--url", "https://x/mcp"], {})
    for url in ("https://x/mcp?api_key=${env:K}", "https://x/mcp?token=abc", "https://u:p@x/mcp"):
        args, env = remote_entry({"url": url}, "cursor").url_args()
        assert args == ["--url-env", "SYNARTESIS_URL"] and env == {"SYNARTESIS_URL": url}


def test_resolving_names_a_missing_variable_and_never_a_value():
    spec = HeaderSpec(literal=(("X-A", "1"),), from_env=(("X-B", "B_VAR"),), bearer_env="TOK")
    assert spec.resolve({"B_VAR": "b", "TOK": "s3cret"}) == {"x-a": "1", "x-b": "b", "authorization": "Bearer s3cret"}
    with pytest.raises(UsageError) as err:
        spec.resolve({"B_VAR": "b"})
    assert "$TOK" in err.value.message and "s3cret" not in err.value.message
    with pytest.raises(UsageError):
        HeaderSpec(literal=(("X", "a\r\nInjected: 1"),)).resolve({})


def test_headers_helper_runs_through_the_shell_with_the_server_name_and_url(tmp_path):
    got = run_headers_helper('printf \'{"X-Who":"%s %s"}\' "$CLAUDE_CODE_MCP_SERVER_NAME" "$CLAUDE_CODE_MCP_SERVER_URL"',
                             {"PATH": "/usr/bin:/bin"}, server="synap", url="https://s/mcp")
    assert got == {"x-who": "synap https://s/mcp"}
    for cmd, why in (("exit 3", "exited with 3"), ("echo not-json", "JSON object"), ("echo '[1]'", "object of strings"),
                     ("sleep 5", "did not finish")):
        with pytest.raises(UsageError) as err:
            run_headers_helper(cmd, {"PATH": "/usr/bin:/bin"}, server="s", url="u", timeout=1)
        assert why in err.value.message


def test_parse_header_rejects_what_is_not_a_header():
    assert parse_header("Authorization: Bearer x") == ("Authorization", "Bearer x")
    for bad in ("no colon", "bad name: v", ": v"):
        with pytest.raises(UsageError):
            parse_header(bad)


def test_a_reference_the_client_left_unexpanded_is_named_not_sent():
    spec = HeaderSpec(from_env=(("Authorization", "SYNARTESIS_HEADER_1"),))
    for left in ("Bearer ${CRM_TOKEN}", "Bearer ${env:CRM_TOKEN}"):
        with pytest.raises(UsageError) as err:
            spec.resolve({"SYNARTESIS_HEADER_1": left})
        assert left.split()[1] in err.value.message and "not set" in err.value.message
    assert spec.resolve({"SYNARTESIS_HEADER_1": "Bearer abc$"}) == {"authorization": "Bearer abc$"}
