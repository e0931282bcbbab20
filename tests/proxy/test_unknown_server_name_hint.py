"""A new user's round 21: a `--server` name the policy does not declare holds every call, and
the hint pointed at `init` even when the policy's own entry ran this very command under
another name. The held call and the log now name the policy's server that runs it, or a
name close to the one given; `init` only when neither fits."""

from __future__ import annotations

import json

import pytest
from helpers import RawSession, proxy_argv, text_of


@pytest.mark.parametrize("given, policy_servers, expected", [
    ("filez", "files: {command: node, args: [%(fs)s, %(root)s]}", "the policy's server files runs this same command: give `--server files`"),
    ("filez", "files: {}", "did you mean `--server files`?"),
    ("notes", "files: {}", "run `synartesis init notes -- …` to write a policy for it (the policy names files)"),
], ids=["same-command", "close-name", "neither"])
def test_held_call_names_the_policys_server(tmp_path, fs_server, given, policy_servers, expected):
    root = tmp_path / "root"
    root.mkdir()
    command = [*fs_server, str(root)]
    servers = policy_servers % {"fs": json.dumps(command[1]), "root": json.dumps(str(root))}
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(f"version: 1\nservers:\n  {servers}\ntools:\n  - match: \"files.*\"\n    class: readonly\n")
    with RawSession(proxy_argv(given, manifest, tmp_path / "j.db", command)) as s:
        s.handshake()
        result = s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "x"})
        s.close()
        stderr = s.stderr_text()
    assert result.get("isError") and not (root / "a.txt").exists()
    assert expected in text_of(result), text_of(result)
    assert expected in stderr, stderr
