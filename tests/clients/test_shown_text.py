"""What a ``--dry-run`` diff may show of a client config: the document walked with the one
redaction rule set, whatever the layout or the escapes (issue 9 item 3)."""

from __future__ import annotations

import json
import tomllib

import pytest

from synartesis.clients.adapters import shown_text
from synartesis.clients.descriptor import get_descriptor

SECRETS = ["S1sek", "S2sek", "S3sek", "hunter22", "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"]

JSON_SHAPES = {
    "compact": json.dumps({"mcpServers": {"gh": {"command": "docker", "args": ["-k", "S1sek", "-e", "API_KEY=S2sek"],
                                                 "env": {"LEVEL": "S3sek"}}}, "primaryApiKey": "hunter22"}),
    "pretty-crlf": json.dumps({"mcpServers": {"gh": {"command": "npx", "args": ["--token", "S1sek", "x"],
                                                     "env": {"A": "S2sek", "B": "${B}"},
                                                     "headers": {"Authorization": "Bearer S3sek"}}}},
                              indent="\t").replace("\n", "\r\n"),
    "escaped": '{"mcpServers": {"gh": {"command": "npx", "args": ["-k", "\\u0053\\u0031sek", "postgres://u:S2sek@h/d"],'
               ' "env": {"X": "S\\u0033sek"}}}, "nested": {"deep": {"password": "hunter22"}}}',
    "wrapped": json.dumps({"mcpServers": {"gh": {"command": "/bin/synartesis", "args": [
        "proxy", "--server", "gh", "--", "npx", "-y", "pkg", "--api-key", "S1sek", SECRETS[4]]}}}),
}

TOML_SHAPES = {
    "tables": '[mcp_servers.gh]\ncommand = "docker"\nargs = ["-k", "S1sek", "-e", \'API_KEY=S2sek\']\n'
              '[mcp_servers.gh.env]\nLEVEL = "S3sek"\n[other]\npassword = "hunter22"\n',
    "inline-crlf": 'mcp_servers = { gh = { command = "npx", args = ["--token", "S1sek"], env = { A = "S2sek" } } }\r\n'
                   'x = "\\u0053\\u0033sek"  # not secret by itself\r\ntoken = """hunter22"""\r\n',
    "multiline": '[mcp_servers.gh]\ncommand = "npx"\nargs = [\n  "-k",  # the key\n  \'\'\'S1sek\'\'\',\n'
                 f'  "{SECRETS[4]}",\n]\nenv.API = "S2sek"\nenv.B = "S3sek"\nauth_token = "hunter22"\n',
}


def _hidden(text: str, shown: str, present: list[str]) -> None:
    for s in present:
        assert s not in shown, (s, shown)
    assert "***" in shown


@pytest.mark.parametrize("shape", sorted(JSON_SHAPES))
def test_json_configs_are_shown_without_their_secrets_and_still_parse(shape):
    text = JSON_SHAPES[shape]
    shown = shown_text(get_descriptor("cursor"), text.encode())
    present = [s for s in SECRETS if s in json.dumps(json.loads(text), ensure_ascii=False)]
    assert present
    _hidden(text, shown, present + ["\\u0053\\u0031sek"])
    json.loads(shown)  # the same layout, still a document
    assert shown.count("\n") == text.count("\n")


TOML_VISIBLE = {"inline-crlf": ["S3sek"]}  # under a key that says nothing: kept


@pytest.mark.parametrize("shape", sorted(TOML_SHAPES))
def test_toml_configs_are_shown_without_their_secrets_and_still_parse(shape):
    text = TOML_SHAPES[shape]
    shown = shown_text(get_descriptor("codex"), text.encode())
    plain = json.dumps(tomllib.loads(text), ensure_ascii=False)
    visible = TOML_VISIBLE.get(shape, [])
    _hidden(text, shown, [s for s in SECRETS if s in plain and s not in visible])
    assert all(s in json.dumps(tomllib.loads(shown), ensure_ascii=False) for s in visible)
    assert shown.count("\n") == text.count("\n")


def test_references_and_paths_stay_visible():
    text = json.dumps({"mcpServers": {"f": {"command": "npx", "args": ["-y", "@mcp/fs", "/home/alex/notes"],
                                            "env": {"TOKEN": "${TOKEN}"}}}})
    assert shown_text(get_descriptor("cursor"), text.encode()) == text


def test_text_that_does_not_parse_still_gets_the_line_backstop():
    text = '{"mcpServers": {"gh": {"args": ["' + SECRETS[4] + '"'  # cut short
    assert SECRETS[4] not in shown_text(get_descriptor("cursor"), text.encode())
