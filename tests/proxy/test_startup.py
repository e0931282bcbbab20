"""Start-up and what a run records: a warm start imports no YAML, asyncio, uuid, secrets,
dataclasses or CLI library; the run's launch line is redacted like the policy; a declared post-state skips the
read-back and undo still checks the resource before it reverts."""

from __future__ import annotations

import json
import os

from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, cli, imported_modules, open_journal, proxy_argv

HEAVY = ("yaml", "asyncio", "uuid", "secrets", "typer", "rich", "pydantic", "mcp", "httpx", "sqlite3", "psycopg",
         "dataclasses", "inspect")  # dataclasses imports inspect, ast, dis and tokenize: the policy model does without


def _imports(argv: list[str], frames: bytes) -> set[str]:
    return imported_modules(argv, frames)


def test_a_warm_start_imports_nothing_heavy_before_the_first_call(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    state.write_text("{}")
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
    init = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    cold = _imports(argv, init)
    assert "yaml" in cold  # the first start compiles the policy
    cache = list(tmp_path.glob("policy-*.json"))
    assert len(cache) == 1 and os.stat(cache[0]).st_mode & 0o777 == 0o600
    warm = _imports(argv, init)
    assert not warm & set(HEAVY), sorted(warm & set(HEAVY))
    assert not journal.exists()  # a session without tools/call opens no journal


def test_the_launch_line_recorded_with_a_run_is_redacted(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    state.write_text(json.dumps({"k": "v"}))
    secrets = ["sk-live-0123456789abcdef", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state), "--api-key", secrets[0], secrets[1]])
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "get", {"key": "k"})
        s.close()
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        line = run.servers["kv"]
        assert line["args"][-3] == "--api-key" and "<secret" in line["args"][-2] and "<secret" in line["args"][-1]
        assert line["args"][:-3] == [*FAKE_SERVER[1:], "--state", str(state)]
    data = b"".join(p.read_bytes() for p in tmp_path.glob("journal.db*"))
    assert not any(s.encode() in data for s in secrets)


DECLARED = FAKE_POLICY.replace('''  - match: "kv.slow_put"''', '''    post_state: {key: "$.key", value: "$.value"}
  - match: "kv.slow_put"''')


def test_a_declared_post_state_skips_the_read_back_and_undo_still_checks_for_drift(tmp_path):
    manifest, journal, state, log = (tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json",
                                     tmp_path / "calls.jsonl")
    manifest.write_text(DECLARED)
    state.write_text(json.dumps({"k": "old"}))
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
    with RawSession(argv, env=dict(os.environ, FAKE_LOG=str(log))) as s:
        s.handshake()
        assert s.call(1, "put", {"key": "k", "value": "new"})["structuredContent"]["ok"] is True
        s.close()
    assert [json.loads(x)["name"] for x in log.read_text().splitlines()] == ["get", "put"]  # no read-back
    with open_journal(journal) as j:
        [a] = j.actions(j.list_runs()[0].id)
        assert a.status == "applied" and "declared" in a.note
        assert j.get_json(a.post_ref) == {"present": True, "value": {"key": "k", "value": "new"}}
    # someone changes the value: undo reads it, sees the drift, and halts
    state.write_text(json.dumps({"k": "edited"}))
    out = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode == 1 and "drift" in out.stdout
    state.write_text(json.dumps({"k": "new"}))
    out = cli("undo", "--replan", "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(state.read_text()) == {"k": "old"}
