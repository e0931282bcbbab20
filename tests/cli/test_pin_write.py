"""`synartesis pin --write` puts the pins into the policy (new user round 13, #4: `pin` printed
blocks to paste and wrote nothing, so `status` went on saying 0 pins). Real filesystem server;
the policy's comments, layout and other servers are kept, and `check` then holds."""

from __future__ import annotations

import json

import yaml

from helpers import cli


def _policy(tmp_path, fs_server, pins: str = "") -> tuple:
    root = tmp_path / "root"
    root.mkdir()
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(
        "# my policy: keep this comment\n"
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        f"    command: {json.dumps(fs_server[0])}  # node\n"
        f"    args: {json.dumps(fs_server[1:] + [str(root)])}\n"
        f"{pins}"
        "  other: {}\n"
        "tools:\n"
        "  # reads are reads\n"
        "  - match: \"files.*\"\n"
        "    class: readonly\n")
    return policy, root


def test_pin_write_puts_the_pins_into_the_policy_keeping_its_comments(tmp_path, fs_server):
    policy, _ = _policy(tmp_path, fs_server)
    printed = yaml.safe_load(cli("pin", "--server", "files", "--manifest", str(policy)).stdout)["pins"]
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"pinned {len(printed)} tool(s) of files in {policy}" in res.stdout, res.stdout
    text = policy.read_text()
    for kept in ("# my policy: keep this comment", "  # node", "  # reads are reads", "  other: {}"):
        assert kept in text, text
    doc = yaml.safe_load(text)
    assert doc["servers"]["files"]["pins"] == printed and "pins" not in (doc["servers"]["other"] or {})
    ok = cli("check", "--server", "files", "--manifest", str(policy))
    assert ok.returncode == 0 and f"pins: {len(printed)} pinned, all hold" in ok.stdout, ok.stdout + ok.stderr
    again = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert again.returncode == 0 and policy.read_text() == text  # the same pins: the same bytes


def test_pin_write_replaces_stale_pins(tmp_path, fs_server):
    policy, _ = _policy(tmp_path, fs_server, pins='    pins: {write_file: "sha256:' + "0" * 64 + '"}\n')
    res = cli("pin", "--write", "--server", "files", "--manifest", str(policy))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "write_file" in res.stderr and "differ from the pins" in res.stderr, res.stderr  # said, then replaced
    pins = yaml.safe_load(policy.read_text())["servers"]["files"]["pins"]
    assert pins["write_file"] != "sha256:" + "0" * 64 and "read_text_file" in pins
    assert cli("check", "--server", "files", "--manifest", str(policy)).returncode == 0
