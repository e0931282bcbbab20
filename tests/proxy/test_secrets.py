"""Secrets stay where the user put them: a token in a server's arguments or env is not copied
into the policy, and a write that targets synartesis's own files is held."""

from __future__ import annotations

import json
import sys

import helpers
from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, proxy_argv
from installkit import place

from synartesis.redact import SECRET_MARK, redact_argv


def test_redact_argv_hides_values_not_shape():
    shown, hidden = redact_argv(["--token", "ghp_abcdef", "--api-key=sk-live-1", "postgres://u:pw@h/db",
                                 "--token", "${GITHUB_TOKEN}", "/home/alex/notes"])
    assert hidden
    assert shown == ["--token", SECRET_MARK, f"--api-key={SECRET_MARK}", f"postgres://u:{SECRET_MARK}@h/db",
                     "--token", "${GITHUB_TOKEN}", "/home/alex/notes"]


def test_install_keeps_tokens_out_of_the_policy(fake_home, tmp_path, fs_server):
    config = {"mcpServers": {"gh": {"command": "node", "args": ["server.js", "--token", "ghp_SECRETVALUE123"],
                                    "env": {"GITHUB_TOKEN": "ghp_ENVSECRET456"}}}}
    place(fake_home, "claude-code", json.dumps(config, indent=2) + "\n")
    done = helpers.run([sys.executable, "-m", "synartesis", "install", "--yes", "--no-start",
                           "--client", "claude-code"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert "ghp_SECRETVALUE123" not in policy and "ghp_ENVSECRET456" not in policy
    assert "ghp_SECRETVALUE123" not in done.stdout + done.stderr
    # the client's entry still has its token (install changed only command/args around it)
    entry = json.loads((fake_home / ".claude.json").read_text())["mcpServers"]["gh"]
    assert "ghp_SECRETVALUE123" in entry["args"] and entry["env"] == {"GITHUB_TOKEN": "ghp_ENVSECRET456"}


def test_a_write_naming_the_policy_or_journal_is_held(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    state.write_text(json.dumps({str(manifest): "x", "k": "v"}))
    with RawSession(proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])) as s:
        s.handshake()
        held = s.call(1, "put", {"key": str(manifest), "value": "version: 1"})
        assert held["isError"] is True and "synartesis's own files" in held["content"][0]["text"]
        ok = s.call(2, "put", {"key": "k", "value": "w"})
        assert ok.get("isError") is not True
        s.close()
    assert json.loads(state.read_text())[str(manifest)] == "x"
