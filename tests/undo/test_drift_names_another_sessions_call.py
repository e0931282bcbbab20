"""A new user's finding (round 16, #2): session A created Ada; session B then made an approved,
irreversible add_observations on her. Undoing A halted on drift, rightly, but neither the halt
nor the --force preview named B's call, and `--force --yes` would delete Ada with B's approved
observation; the only hint was the `actual:` JSON. The halt now names what another session
wrote to the resource since (its action, session and approver)."""

from __future__ import annotations

import os

from helpers import REPO, RawSession, cli, open_journal, proxy_argv


def test_a_drift_halt_names_an_approved_call_of_another_session(tmp_path, memory_server):
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text((REPO / "policies" / "memory.yaml").read_text())
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    argv = proxy_argv("memory", manifest, journal, memory_server)
    observe = {"observations": [{"entityName": "Ada", "contents": ["countess"]}]}

    with RawSession(argv, env=dict(env, SYNARTESIS_SESSION="a")) as s:
        s.handshake()
        assert not s.call(1, "create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": []}]}).get("isError")
    with RawSession(argv, env=dict(env, SYNARTESIS_SESSION="b")) as s:
        s.handshake()
        assert s.call(1, "add_observations", observe).get("isError")  # irreversible: held
        with open_journal(journal) as j:
            [held] = j.list_gated()
        assert cli("approve", held.id[:8], "--no-read", "--by", "ana", *flags, env=env).returncode == 0
        assert not s.call(2, "add_observations", observe).get("isError")
    with open_journal(journal) as j:
        session_a = next(r.session_id for r in j.list_runs() if any(a.tool == "create_entities" for a in j.actions(r.id)))

    halted = cli("undo", session_a, *flags, env=env)
    assert halted.returncode == 1 and "drift" in halted.stdout, halted.stdout + halted.stderr
    assert "changed after it by another session" in halted.stdout and "memory.add_observations" in halted.stdout
    # the way on is that run first, not "put the resource back" (new user 19, #3: a dead end)
    assert "2. undo the other run named above first" in halted.stdout, halted.stdout
    assert "approved by ana" in halted.stdout, halted.stdout
    assert f"{held.run_id[:8]}:{held.seq} memory.add_observations" in halted.stdout  # as `show` labels it
    assert "countess" in mem.read_text()  # nothing was overwritten
