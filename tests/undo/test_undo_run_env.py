"""Undo gives a server the environment its run's server had (adversarial review #21): the proxy
records the names (never the values) of the variables its client gave the server; one undo
cannot give again is named, and stops the server from starting when the policy says it reads it."""

from __future__ import annotations

import json
import os
import sqlite3

from helpers import FAKE_POLICY, MEMORY_POLICY, RawSession, cli, kv_proxy, proxy_argv


def test_undo_never_starts_a_server_without_a_variable_its_client_gave_it(tmp_path, memory_server):
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    # as the shipped memory policy says: the server reads MEMORY_FILE_PATH
    manifest.write_text(MEMORY_POLICY.replace("memory: {}", 'memory: {env: {MEMORY_FILE_PATH: "${MEMORY_FILE_PATH}"}}'))
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    terminal = {k: v for k, v in os.environ.items() if k != "MEMORY_FILE_PATH"}
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env={**terminal, "MEMORY_FILE_PATH": str(mem)}) as s:
        s.handshake()  # the client (this process) has no MEMORY_FILE_PATH: the entry's env gave it
        s.call(1, "create_entities", {"entities": [{"name": "alice", "entityType": "person", "observations": []}]})
    (servers,) = sqlite3.connect(journal).execute("SELECT servers FROM runs").fetchone()
    assert "MEMORY_FILE_PATH" in json.loads(servers)["memory"]["env"] and str(mem) not in servers

    refused = cli("undo", *j, env=terminal)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "was given MEMORY_FILE_PATH by its client" in refused.stdout + refused.stderr, refused.stdout
    assert "nothing was sent" in refused.stdout or "not sent" in refused.stdout, refused.stdout
    assert '"alice"' in mem.read_text()

    done = cli("undo", *j, env={**terminal, "MEMORY_FILE_PATH": str(mem)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"alice"' not in mem.read_text()


def test_a_variable_the_policy_does_not_name_is_named_in_a_warning_and_the_undo_goes_on(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=FAKE_POLICY)
    with RawSession(argv, env={**os.environ, "KV_TRACE": "on"}) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "agent"})
    done = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "was given KV_TRACE by its client" in done.stdout + done.stderr, done.stdout
    assert json.loads(state.read_text())["k0"] == "v0"
