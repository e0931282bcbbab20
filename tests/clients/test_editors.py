"""The style-preserving editors: strict parsing with locations, and edits that keep every other byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from synartesis.clients import jsonedit, tomledit
from synartesis.clients.adapters import (AddShadow, RemoveShadow, Unwrap, Wrap, adapter_for, expected_after)
from synartesis.clients.descriptor import get_descriptor
from synartesis.clients.locations import ConfigLocation
from synartesis.errors import ConfigParseError

PREFIX = ("/opt/syn/bin/synartesis", "proxy", "--server", "x", "--")


def _view(client: str, data: bytes, scope: str = "user"):
    desc = get_descriptor(client)
    loc = ConfigLocation(desc.id, scope, Path("/nowhere/config"), desc.files[0])
    adapter = adapter_for(desc)
    return adapter, adapter.read(loc, data)


def _roundtrip(client: str, data: bytes) -> bytes:
    """Wrap every stdio entry, check the value, unwrap, return the wrapped bytes."""
    adapter, view = _view(client, data)
    changes = [Wrap(e.locator, PREFIX[:3] + (e.name, "--")) for e in view.entries if e.kind == "stdio"]
    rendered = adapter.render(view, changes)
    new_view = adapter.read(view.location, rendered.data)
    assert new_view.value == expected_after(view.value, changes)
    back = adapter.render(new_view, [Unwrap(r) for r in rendered.records])
    assert back.data == data
    return rendered.data


@pytest.mark.parametrize("text, where", [
    ('{"a": 1,}', "line 1 column 9: trailing comma"),
    ('{\n  "a": 1,\n  "a": 2\n}', "line 3 column 3: duplicate key 'a' (first at line 2 column 3)"),
    ('{\n  // c\n  "a": 1\n}', "line 2 column 3: comments are not allowed"),
    ('{"a": "x\ny"}', "line 1 column 9: control character in string"),
    ('{"a": 1} {"b": 2}', "line 1 column 10: unexpected data after the JSON value"),
    ('', "line 1 column 1: unexpected end of file"),
    ('{"a": NaN}', "line 1 column 7: unexpected character 'N'"),
])
def test_json_parser_refuses_what_json_parse_refuses_and_says_where(text, where):
    with pytest.raises(jsonedit.JsonSyntaxError) as exc:
        jsonedit.parse(text)
    assert str(exc.value).startswith(where)


def test_json_adapter_reports_file_line_and_column():
    with pytest.raises(ConfigParseError) as exc:
        _view("cursor", b'{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    assert str(exc.value).startswith("/nowhere/config:3:26: trailing comma")


def test_json_not_utf8_is_refused():
    with pytest.raises(ConfigParseError, match="not UTF-8"):
        _view("cursor", b'{"mcpServers": {"a": {"command": "\xff"}}}')


def test_wrap_keeps_bom_crlf_tabs_and_missing_final_newline():
    data = ('\ufeff{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"command": "npx",\r\n'
            '\t\t\t"args": ["-y", "pkg"],\r\n\t\t\t"env": {"K": "v"}\r\n\t\t}\r\n\t}\r\n}').encode("utf-8")
    wrapped = _roundtrip("cursor", data)
    assert wrapped.startswith(b"\xef\xbb\xbf{\r\n\t\"mcpServers\"")
    assert b"\n" not in wrapped.replace(b"\r\n", b"")
    assert not wrapped.endswith(b"\n")
    assert b'\t\t\t"args": ["proxy", "--server", "a", "--", "npx", "-y", "pkg"],\r\n' in wrapped
    assert b'\t\t\t"env": {"K": "v"}' in wrapped


def test_wrap_inserts_args_after_command_in_the_entry_style():
    data = b'{\n  "mcpServers": {\n    "solo": {\n      "command": "mcp-rust-docs"\n    },\n    "inline": {"command": "x", "env": {}}\n  }\n}\n'
    wrapped = _roundtrip("claude-desktop", data).decode()
    assert ('    "solo": {\n      "command": "/opt/syn/bin/synartesis",\n      "args": [\n'
            '        "proxy",\n        "--server",\n        "solo",\n        "--",\n        "mcp-rust-docs"\n'
            '      ]\n    },') in wrapped
    assert '"inline": {"command": "/opt/syn/bin/synartesis", "args": ["proxy", "--server", "inline", "--", "x"], "env": {}}' in wrapped


def test_wrap_copies_original_strings_with_their_escapes_and_never_expands_vars():
    data = b'{"mcpServers": {"a": {"command": "C:\\\\node\\u00e9.exe", "args": ["${API_KEY}", "caf\\u00e9"]}}}'
    wrapped = _roundtrip("claude-code", data)
    assert b'"C:\\\\node\\u00e9.exe", "${API_KEY}", "caf\\u00e9"]' in wrapped


def test_other_members_bytes_are_untouched_by_a_wrap():
    data = b'{ "x" :1,"mcpServers":{"a":{"command":"n","args":[ "1" ,"2" ],"weird"  :  [1,2 ,3]}}, "y":[ ] }'
    wrapped = _roundtrip("cursor", data)
    assert wrapped == (b'{ "x" :1,"mcpServers":{"a":{"command":"/opt/syn/bin/synartesis","args":[ '
                       b'"proxy" ,"--server" ,"a" ,"--" ,"n" ,"1" ,"2" ],"weird"  :  [1,2 ,3]}}, "y":[ ] }')


@pytest.mark.parametrize("projects", [
    '{}',
    '{\n    "/p": {\n      "allowedTools": []\n    }\n  }',
    '{\n    "/p": {\n      "mcpServers": {}\n    }\n  }',
    '{\n    "/p": {\n      "mcpServers": {\n        "other": {"command": "y"}\n      }\n    }\n  }',
])
def test_shadow_add_then_remove_is_byte_exact(projects):
    data = ('{\n  "numStartups": 3,\n  "projects": ' + projects + ',\n  "userID": "0"\n}\n').encode()
    adapter, view = _view("claude-code", data)
    value = {"command": "/opt/syn/bin/synartesis", "args": ["proxy", "--server", "s", "--", "node", "s.js"],
             "env": {"K": "${K}"}}
    rendered = adapter.render(view, [AddShadow(("projects", "/p", "mcpServers"), "s", value)])
    new_view = adapter.read(view.location, rendered.data)
    assert new_view.value["projects"]["/p"]["mcpServers"]["s"] == value
    assert adapter.record_state(new_view, rendered.records[0]) == "exact"
    back = adapter.render(new_view, [RemoveShadow(rendered.records[0])])
    assert back.data == data


def test_unwrap_after_the_client_reformatted_the_file_restores_the_value():
    data = b'{"mcpServers": {"a": {"command": "npx", "args": ["-y", "p"]}, "b": {"command": "q"}}}'
    adapter, view = _view("cursor", data)
    rendered = adapter.render(view, [Wrap(e.locator, PREFIX) for e in view.entries])
    import json

    reformatted = (json.dumps(json.loads(rendered.data), indent=4) + "\n").encode()
    re_view = adapter.read(view.location, reformatted)
    assert [adapter.record_state(re_view, r) for r in rendered.records] == ["equal", "equal"]
    back = adapter.render(re_view, [Unwrap(r) for r in rendered.records])
    assert json.loads(back.data) == json.loads(data)
    assert "args" not in json.loads(back.data)["mcpServers"]["b"]


def test_record_state_tells_edited_missing_and_original_apart():
    data = b'{"mcpServers": {"a": {"command": "npx", "args": ["p"]}}}'
    adapter, view = _view("cursor", data)
    rendered = adapter.render(view, [Wrap(view.entries[0].locator, PREFIX)])
    rec = rendered.records[0]
    edited = rendered.data.replace(b'"p"]', b'"p", "--extra"]')
    assert adapter.record_state(adapter.read(view.location, edited), rec) == "edited"
    assert adapter.record_state(adapter.read(view.location, b'{"mcpServers": {}}'), rec) == "missing"
    assert adapter.record_state(adapter.read(view.location, data), rec) == "original"


def test_toml_parse_error_names_line_and_column():
    with pytest.raises(ConfigParseError) as exc:
        _view("codex", b'model = "x"\n[mcp_servers.a]\ncommand = "npx"\ncommand = "y"\n')
    assert str(exc.value).startswith("/nowhere/config:4:")


def test_toml_wrap_keeps_comments_literal_strings_crlf_and_subtables():
    data = (b"# top\r\n[mcp_servers.a]   # header comment\r\ncommand = 'C:\\tools\\npx.cmd'   # literal\r\n"
            b"args = [\r\n  \"-y\",   # yes\r\n  \"pkg\",\r\n]\r\nstartup_timeout_sec = 30\r\n\r\n"
            b"[mcp_servers.a.env]\r\nTOKEN = \"${TOKEN}\"\r\n\r\n[mcp_servers.b]\r\ncommand = \"x\"\r\n"
            b"enabled = false\r\n")
    wrapped = _roundtrip("codex", data).decode()
    assert "[mcp_servers.a]   # header comment\r\n" in wrapped
    assert 'command = "/opt/syn/bin/synartesis"   # literal\r\n' in wrapped
    assert '"C:\\\\tools\\\\npx.cmd"' not in wrapped  # the original literal string is copied as written
    assert "'C:\\tools\\npx.cmd'," in wrapped
    assert 'args = ["proxy", "--server", "b", "--", "x"]\r\nenabled = false' in wrapped
    assert "\n" not in wrapped.replace("\r\n", "")


def test_toml_inline_table_entry_is_wrapped_and_restored():
    data = b'[mcp_servers]\na = { command = "npx", args = ["-y", "p"], env = { K = "v" } }\n'
    wrapped = _roundtrip("codex", data).decode()
    assert 'a = { command = "/opt/syn/bin/synartesis", args = ["proxy", "--server", "a", "--", "npx", "-y", "p"]' in wrapped


def test_tomlkit_refusal_is_an_edit_error_not_a_crash():
    assert tomledit.find_table(tomledit.editable('[a]\nb = 1\n'), ["a", "b"]) is None
