"""Undo's halting rules and idempotence, driven through the real proxy and CLI against a small
key-value server (a fake is used only where a real server cannot misbehave on cue)."""

from __future__ import annotations

import json
import os
import subprocess

import helpers
from helpers import (
    FAKE_POLICY,
    FAKE_SERVER,
    RawSession,
    cli,
    open_journal,
    proxy_argv,
    synartesis_argv,
)


def _setup(tmp_path, policy=FAKE_POLICY, seed=None):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    manifest.write_text(policy)
    state.write_text(json.dumps(seed if seed is not None else {f"k{n}": f"v{n}" for n in range(4)}, sort_keys=True, indent=1))
    return manifest, journal, state, proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])


def _run(argv, calls, env=None):
    with RawSession(argv, env=env) as s:
        s.handshake()
        out = [s.call(i + 1, name, args) for i, (name, args) in enumerate(calls)]
        s.close()
    return out


def _undo(manifest, journal, *extra, env=None):
    return cli("undo", "--manifest", str(manifest), "--journal", str(journal), *extra, env=env)


def test_interrupted_inverse_leaves_partial_and_a_second_undo_completes(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    before = state.read_bytes()
    _run(argv, [("put", {"key": f"k{n}", "value": f"agent{n}"}) for n in range(4)])
    # undo reads (1), inverts (2), re-reads (3) for seq 4; crashes on the inverse of seq 3 (call 5)
    crash = dict(os.environ, FAKE_CRASH_ON_CALL="5")
    first = _undo(manifest, journal, env=crash)
    assert first.returncode == 1, first.stdout
    assert "halted at sequence 3" in first.stdout
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.status == "partial"
        assert [a.status for a in j.actions(run.id)] == ["applied", "applied", "rolling_back", "rolled_back"]
    second = _undo(manifest, journal)
    assert second.returncode == 0, second.stdout
    assert state.read_bytes() == before
    with open_journal(journal) as j:
        run = j.list_runs()[0]
        assert run.status == "rolled_back" and j.audit(run.id).ok


def test_a_refused_inverse_is_safe_to_retry(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    before = state.read_bytes()
    _run(argv, [("put", {"key": "k1", "value": "agent"})])
    refused = _undo(manifest, journal, env=dict(os.environ, FAKE_REFUSE_PUT_VALUE="v1"))
    assert refused.returncode == 1 and "the inverse failed" in refused.stdout
    with open_journal(journal) as j:
        assert j.actions(j.list_runs()[0].id)[0].status == "applied"
    assert _undo(manifest, journal).returncode == 0
    assert state.read_bytes() == before


def test_an_inverse_that_cannot_be_built_holds_the_call(tmp_path):
    broken = FAKE_POLICY.replace('value: "$snapshot.value"}', 'value: "$snapshot.wrong_field"}')
    manifest, journal, state, argv = _setup(tmp_path, broken)
    before = state.read_bytes()
    [held] = _run(argv, [("put", {"key": "k0", "value": "a"})])
    text = held["content"][0]["text"]
    assert held["isError"] is True and "inverse" in text and "wrong_field" in text
    assert state.read_bytes() == before  # not sent


def test_wrong_policy_then_replan_with_the_fixed_one(tmp_path):
    # a mistake only the server's answer reveals ($result) cannot be caught before the call
    broken = FAKE_POLICY.replace('inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}',
                                 'inverse: {tool: kv.put, args: {key: "$result.wrong_field", value: "$snapshot.value"}}')
    manifest, journal, state, argv = _setup(tmp_path, broken)
    before = state.read_bytes()
    _run(argv, [("put", {"key": "k0", "value": "a"}), ("put", {"key": "k1", "value": "b"})])
    first = _undo(manifest, journal)
    assert first.returncode == 1 and "no usable inverse" in first.stdout and "wrong_field" in first.stdout
    assert json.loads(state.read_text())["k0"] == "a"  # nothing changed
    manifest.write_text(FAKE_POLICY)
    fixed = _undo(manifest, journal, "--replan")
    assert fixed.returncode == 0, fixed.stdout
    assert fixed.stdout.count("replanned, called") == 2
    assert state.read_bytes() == before
    with open_journal(journal) as j:
        assert all("replanned" in (a.note or "") for a in j.actions(j.list_runs()[0].id))


def test_replan_reports_resolution_errors_per_step(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    _run(argv, [("put", {"key": "k0", "value": "a"})])
    manifest.write_text(FAKE_POLICY.replace('value: "$snapshot.value"}', 'value: "$snapshot.nope"}'))
    out = _undo(manifest, journal, "--replan")
    assert out.returncode == 1 and "replan failed" in out.stdout and "$snapshot.nope" in out.stdout


def test_two_concurrent_undos_send_one_inverse_per_action(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    before = state.read_bytes()
    _run(argv, [("put", {"key": f"k{n}", "value": f"agent{n}"}) for n in range(4)])
    log = tmp_path / "calls.jsonl"
    env = dict(os.environ, FAKE_LOG=str(log))
    procs = [helpers.spawn(synartesis_argv("undo", "--manifest", str(manifest), "--journal", str(journal)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0, outs
    inverses = [json.loads(line) for line in log.read_text().splitlines()
                if json.loads(line)["name"] == "put"]
    keys = [c["meta"]["dev.synartesis/idempotency-key"] for c in inverses]
    assert len(keys) == 4 and len(set(keys)) == 4
    assert state.read_bytes() == before


def test_active_run_is_refused_unless_forced(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "live"})
        refused = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
        assert refused.returncode in (1, 2)
        with open_journal(journal) as j:
            rid = j.list_runs()[0].id
        named = cli("undo", rid[:8], "--manifest", str(manifest), "--journal", str(journal))
        assert named.returncode == 1 and "still active" in named.stderr
        forced = cli("undo", rid[:8], "--force", "--yes", "--manifest", str(manifest), "--journal", str(journal))
        assert forced.returncode == 0, forced.stdout
        s.close()
    assert json.loads(state.read_text())["k0"] == "v0"
    with open_journal(journal) as j:
        assert j.list_runs()[0].status == "rolled_back"  # closing the session did not overwrite it


def test_to_seq_and_dry_run_list_what_is_left_out(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    _run(argv, [("put", {"key": f"k{n}", "value": f"agent{n}"}) for n in range(4)])
    dry = _undo(manifest, journal, "--to", "3", "--dry-run", "--json")
    report = json.loads(dry.stdout)
    kinds = [(s["seq"], s["kind"]) for s in report["steps"]]
    assert kinds == [(4, "revert"), (3, "revert"), (2, "kept"), (1, "kept")]
    assert json.loads(state.read_text())["k3"] == "agent3"
    done = _undo(manifest, journal, "--to", "3")
    assert done.returncode == 0  # all it was asked; the run is partial: seqs 1 and 2 are left as they are
    assert "the rest of the run is still in effect" in done.stdout
    now = json.loads(state.read_text())
    assert (now["k3"], now["k2"], now["k1"]) == ("v3", "v2", "agent1")
    bad = _undo(manifest, journal, "--to", "9")
    assert bad.returncode == 2 and "past the end of this run" in bad.stderr


def test_state_already_reverted_counts_as_reverted(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    _run(argv, [("put", {"key": "k0", "value": "agent"})])
    data = json.loads(state.read_text())
    data["k0"] = "v0"  # a person put it back by hand
    state.write_text(json.dumps(data, sort_keys=True, indent=1))
    out = _undo(manifest, journal)
    assert out.returncode == 0 and "already in the state this inverse would produce" in out.stdout


def test_prune_refuses_protected_runs_and_shrinks_the_journal(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    big = "x" * 200_000
    for n in range(3):
        _run(argv, [("put", {"key": "k0", "value": f"{big}{n}"})])
    _run(argv, [("delete", {"key": "k1"})])  # holds a gated call (no rule: fail closed)
    # a run whose undo halted
    _run(argv, [("put", {"key": "k2", "value": "agent"})])
    data = json.loads(state.read_text())
    data["k2"] = "human"
    state.write_text(json.dumps(data, sort_keys=True, indent=1))
    assert _undo(manifest, journal).returncode == 1
    with RawSession(argv) as active:  # an active run
        active.handshake()
        active.call(1, "get", {"key": "k0"})
        with open_journal(journal) as j:
            runs = j.list_runs()
        ids = [r.id for r in runs]
        before = _size(journal)
        out = cli("prune", *[i[:8] for i in ids], "--yes", "--manifest", str(manifest), "--journal", str(journal))
        assert out.returncode == 0, out.stdout + out.stderr
        assert "still active" in out.stdout and "waiting for approval" in out.stdout and "undo halted" in out.stdout
        active.close()
    with open_journal(journal) as j:
        left = j.list_runs()
        assert len(left) == 3
    assert _size(journal) < before


def _size(journal) -> int:
    wal = journal.parent / (journal.name + "-wal")
    return journal.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def test_undo_starts_only_touched_servers_and_warns_on_a_changed_launch_line(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    before = state.read_bytes()
    _run(argv, [("put", {"key": "k0", "value": "agent"})])
    # the policy now declares another server that cannot start, and a different launch line for kv
    manifest.write_text(FAKE_POLICY.replace("  kv: {}", "  kv:\n    command: python3\n    args: [\"elsewhere.py\"]\n"
                                            "  broken:\n    command: /nonexistent/bin/server"))
    out = _undo(manifest, journal)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "warning" in out.stdout and "elsewhere.py" in out.stdout and "undo uses the latter" in out.stdout
    assert "broken" not in out.stdout + out.stderr
    assert state.read_bytes() == before


def test_force_steps_over_an_unknown_action_and_undoes_the_older_ones(tmp_path):
    manifest, journal, state, argv = _setup(tmp_path)
    _run(argv, [("put", {"key": "k0", "value": "agent"})])
    crash = dict(os.environ, FAKE_CRASH_ON_CALL="2", FAKE_CRASH_AFTER_APPLY="1")  # call 1 is the pre-read
    with RawSession(argv, env=crash) as s:
        s.handshake()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "put", "arguments": {"key": "k1", "value": "x"}}})
        s.proc.wait(timeout=15)
    with open_journal(journal) as j:
        runs = j.list_runs()
        newest, older = runs[0], runs[1]
        assert [a.status for a in j.actions(newest.id)] == ["unknown"]
    halted = _undo(manifest, journal, newest.id[:8])
    assert halted.returncode == 1 and "undo --force` then steps over" in halted.stdout
    forced = _undo(manifest, journal, newest.id[:8], "--force", "--yes")
    assert forced.returncode == 1 and "stepped over because of --force" in forced.stdout  # partial: left in place
    assert _undo(manifest, journal, older.id[:8]).returncode == 0
    assert json.loads(state.read_text())["k0"] == "v0"
