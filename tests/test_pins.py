"""Pins (issue 5 item 6): fingerprints over a tool's shape, `synartesis pin` printing the
block, `check` reporting a moved tool, and the real proxy refusing every call of a server
whose pinned tool changed, with both fingerprints and the re-pin command."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
import yaml

from synartesis.canonical import canonical
from synartesis.pins import check_pins, diff_fields, fingerprint, is_pin, pin_problems
from synartesis.policy import parse_policy

WRITE_FILE = {
    "name": "write_file", "title": "Write File",
    "description": "Create a new file or completely overwrite an existing file.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"]},
    "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}}},
    "annotations": {"readOnlyHint": False, "destructiveHint": True},
    "execution": {"taskSupport": "forbidden"},
}


def test_fingerprint_is_sha256_over_the_pinned_fields_only() -> None:
    import hashlib

    fp = fingerprint(WRITE_FILE)
    assert is_pin(fp)
    shape = {k: WRITE_FILE[k] for k in ("name", "title", "description", "inputSchema", "outputSchema", "annotations")}
    assert fp == "sha256:" + hashlib.sha256(canonical(shape).encode()).hexdigest()
    # key order and fields outside the pin do not matter
    reordered = json.loads(json.dumps(WRITE_FILE, sort_keys=True))
    reordered["execution"] = {"taskSupport": "required"}
    reordered["_meta"] = {"x": 1}
    assert fingerprint(reordered) == fp


@pytest.mark.parametrize("field,value", [
    ("inputSchema", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ("description", "Deletes everything."),
    ("annotations", {"readOnlyHint": True}),
    ("title", None),
])
def test_each_field_moves_the_pin_and_is_named(field: str, value) -> None:
    changed = copy.deepcopy(WRITE_FILE)
    if value is None:
        del changed[field]
    else:
        changed[field] = value
    assert fingerprint(changed) != fingerprint(WRITE_FILE)
    assert diff_fields(WRITE_FILE, changed) == [field]


def test_pin_problems_and_refusal_text() -> None:
    old = fingerprint(WRITE_FILE)
    moved = copy.deepcopy(WRITE_FILE)
    moved["inputSchema"]["properties"]["mode"] = {"type": "string"}
    catalog = {"write_file": moved}
    assert pin_problems("files", {}, catalog) == []                  # no pins: not checked
    assert pin_problems("files", {"write_file": old}, {"write_file": WRITE_FILE}) == []
    lines = pin_problems("files", {"write_file": old}, catalog, shapes={old: WRITE_FILE})
    assert lines == [f"write_file: pinned {old}, now {fingerprint(moved)} (changed: inputSchema)"]
    gone = pin_problems("files", {"write_file": old}, {})
    assert gone and "gone" in gone[0]
    text = check_pins("files", {"write_file": old}, catalog, None, cli="synartesis")
    assert old in text and fingerprint(moved) in text and "write_file" in text
    assert "synartesis pin --server files" in text


def test_a_new_tool_under_a_covering_rule_breaks_the_pins() -> None:
    policy = parse_policy('version: 1\nservers: {files: {command: x}}\ntools:\n'
                          '  - {match: "files.*", class: readonly}\n', "p.yaml")
    pins = {"write_file": fingerprint(WRITE_FILE)}
    catalog = {"write_file": WRITE_FILE, "delete_all": {"name": "delete_all"}}
    lines = pin_problems("files", pins, catalog, policy)
    assert len(lines) == 1 and lines[0].startswith("delete_all: not pinned")


def test_pins_module_imports_nothing_heavy() -> None:
    code = ("import sys, synartesis.pins; "
            "bad=[m for m in sys.modules if m.split('.')[0] in ('yaml','typer','rich','pydantic','mcp','ruamel')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    assert helpers.run([sys.executable, "-c", code]).returncode == 0


# -- with the real filesystem server -----------------------------------------------------------

def _policy(tmp: Path, fs_server: list[str]) -> tuple[Path, Path]:
    root = tmp / "root"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    policy = tmp / "synartesis.yaml"
    policy.write_text(
        "version: 1\nservers:\n  files:\n"
        f"    command: {json.dumps(fs_server[0])}\n"
        f"    args: {json.dumps(fs_server[1:] + [str(root)])}\n"
        "tools:\n  - match: \"files.*\"\n    class: readonly\n")
    return policy, root


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return helpers.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def _with_pins(policy: Path, block: str) -> None:
    pins = yaml.safe_load(block)["pins"]
    text = policy.read_text().replace("tools:\n", f"    pins: {json.dumps(pins)}\ntools:\n")
    policy.write_text(text)


def test_pin_prints_and_check_holds_then_catches_a_changed_schema(tmp_path: Path, fs_server, synartesis_cmd) -> None:
    policy, _ = _policy(tmp_path, fs_server)
    before = policy.read_text()
    res = _run(synartesis_cmd + ["pin", "--manifest", str(policy)])
    assert res.returncode == 0, res.stderr
    assert policy.read_text() == before, "pin must not write"
    block = res.stdout
    pins = yaml.safe_load(block)["pins"]
    assert set(pins) >= {"write_file", "read_text_file", "move_file"} and all(is_pin(v) for v in pins.values())

    _with_pins(policy, block)
    ok = _run(synartesis_cmd + ["check", "--manifest", str(policy)])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"pins: {len(pins)} pinned, all hold" in ok.stdout

    # the pin was taken when write_file had another schema: the live one has "moved"
    old_shape = {"name": "write_file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    stale = fingerprint(old_shape)
    policy.write_text(policy.read_text().replace(pins["write_file"], stale))
    bad = _run(synartesis_cmd + ["check", "--manifest", str(policy)])
    assert bad.returncode == 1
    assert stale in bad.stdout and pins["write_file"] in bad.stdout and "write_file" in bad.stdout


def test_proxy_refuses_every_call_after_a_schema_change(tmp_path: Path, fs_server, synartesis_cmd) -> None:
    policy, root = _policy(tmp_path, fs_server)
    block = _run(synartesis_cmd + ["pin", "--manifest", str(policy)]).stdout
    pins = yaml.safe_load(block)["pins"]
    stale = fingerprint({"name": "write_file", "inputSchema": {"type": "object"}})
    _with_pins(policy, block.replace(pins["write_file"], stale))
    argv = synartesis_cmd + ["proxy", "--server", "files", "--manifest", str(policy),
                             "--journal", str(tmp_path / "j.db"), "--"] + fs_server + [str(root)]
    proc = helpers.spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def send(msg: dict) -> None:
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()

        def reply(mid: int) -> dict:
            while True:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                msg = json.loads(line)
                if msg.get("id") == mid:
                    return msg

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # read_text_file's own pin holds; the server's calls are refused all the same
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "read_text_file", "arguments": {"path": str(root / "a.txt")}}})
        result = reply(2)["result"]
        assert result.get("isError") is True
        text = result["content"][0]["text"]
        assert stale in text and pins["write_file"] in text and "write_file" in text
        assert "pin --server files" in text
        assert "hello" not in text
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
