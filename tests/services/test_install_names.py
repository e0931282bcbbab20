"""Server names YAML would read as something else, and names that look like references
(issue 9 item 4): every name installs in every client, the policy reads each back as the same
string, uninstall gives back every byte, and no ``--server`` value can be expanded by a client."""

from __future__ import annotations

import json
import os
import sys

import helpers
import pytest
import yaml
from installkit import fake_proxy, install, make_env, place, uninstall

from synartesis.policy import load_policy
from synartesis.services.install import policy_key_for

YAML_HOSTILE = ["true", "false", "null", "yes", "on", "off", "True", "NULL", "0x10", "1_000", "0b1",
                "2024-01-01", "a\nb", "~", "1e3", "-x", "y", "N", "0o17", "+1", "12:30"]
REFERENCES = ["${HOME}", "${env:HOME}", "$HOME", "x${USER}y", "${userHome}"]
NAMES = YAML_HOSTILE + REFERENCES


def _json_config(names: list[str]) -> str:
    return json.dumps({"mcpServers": {n: {"command": "npx", "args": ["-y", f"srv-{i}"]} for i, n in enumerate(names)}},
                      indent=2) + "\n"


def _toml_config(names: list[str]) -> str:
    return "".join(f'[mcp_servers.{json.dumps(n)}]\ncommand = "npx"\nargs = ["-y", "srv-{i}"]\n\n'
                   for i, n in enumerate(names))


def test_policy_keys_carry_nothing_a_client_expands_or_yaml_reinterprets():
    assert policy_key_for("true") == "true" and policy_key_for("0x10") == "0x10"
    assert policy_key_for("a\nb") == "a-b"
    assert policy_key_for("${HOME}") == "HOME" and policy_key_for("${env:HOME}") == "env-HOME"
    assert policy_key_for("$HOME") == "HOME" and policy_key_for("x${USER}y") == "x-USER-y"
    assert policy_key_for("my.server") == "my-server" and policy_key_for("a__b") == "a-b"
    assert policy_key_for("${}") == "server" and policy_key_for("файлы") == "файлы"


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop", "cursor", "codex"])
def test_the_whole_name_matrix_installs_and_round_trips(fake_home, tmp_path, client):
    text = _toml_config(NAMES) if client == "codex" else _json_config(NAMES)
    cfg = place(fake_home, client, text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok, [(o.path, o.message) for o in result.files]
    wrapped = {e.name: e.policy_key for e in plan.entries if e.action == "wrap"}
    assert len(wrapped) == len(NAMES), [(e.name, e.action, e.reason) for e in plan.entries]
    policy = load_policy(fake_home / ".synartesis" / "synartesis.yaml")  # validates
    declared = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert all(isinstance(k, str) for k in declared)
    assert set(wrapped.values()) <= set(policy.servers)
    for key in wrapped.values():
        assert "$" not in key and "{" not in key and "\n" not in key
    # the wrapped args: --server never carries something a client would expand
    from synartesis.clients.descriptor import get_descriptor
    from synartesis.clients.discover import read_location
    from synartesis.clients.locations import user_locations

    desc = get_descriptor(client)
    (loc,) = [loc for loc in user_locations(desc, env)[0] if loc.path == cfg]
    for entry in read_location(desc, loc).view.entries:
        i = entry.args.index("--server")
        assert "$" not in entry.args[i + 1]
    uninstall(env)
    assert cfg.read_text() == text


def test_a_second_install_into_an_existing_policy_quotes_the_keys_too(fake_home, tmp_path):
    env = make_env(fake_home)
    place(fake_home, "cursor", _json_config(["plain"]))
    install(env, tmp_path)
    place(fake_home, "cursor", _json_config(["plain", *YAML_HOSTILE]))
    _, result = install(env, tmp_path)
    assert result.ok and result.policy_written
    load_policy(fake_home / ".synartesis" / "synartesis.yaml")
    declared = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert {"true", "0x10", "2024-01-01", "NULL", "a-b"} <= set(declared)


def test_the_cli_installs_the_matrix_for_every_client_at_once(fake_home, tmp_path):
    for client in ("claude-code", "cursor", "codex"):
        place(fake_home, client, _toml_config(YAML_HOSTILE) if client == "codex" else _json_config(YAML_HOSTILE))
    p = helpers.run([sys.executable, "-m", "synartesis", "install", "--yes", "--no-start", "--proxy-path",
                        fake_proxy(tmp_path)], capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout.count("written (backup") == 3


def test_control_characters_in_names_and_arguments_do_not_break_the_policy(fake_home, tmp_path):
    """A DEL, a C1 control or NEL in a name or an argument (YAML cannot print them) once failed
    the whole install's policy validation; found by the editor property test."""
    odd = ["a\x7fb", "c\x85d", "e\u2028f", "g\x9bh"]
    text = json.dumps({"mcpServers": {n: {"command": "npx", "args": ["-y", n, "--label=\x85\x7f"]} for n in odd}})
    cfg = place(fake_home, "cursor", text)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok and result.policy_written
    policy = load_policy(fake_home / ".synartesis" / "synartesis.yaml")
    declared = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert sorted(e.policy_key for e in plan.entries) == sorted(policy.servers)
    assert ["-y", "c\x85d", "--label=\x85\x7f"] in [s["args"] for s in declared.values()]
    uninstall(env)
    assert cfg.read_text() == text
