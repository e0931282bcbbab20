"""A journalled value holding a lone surrogate (a server may return one: JSON can escape it)
reaches undo's output as an escape, never as a UnicodeEncodeError traceback."""

from __future__ import annotations

import json

from helpers import RawSession, cli, kv_proxy, open_journal


def _agent_over_a_lone_surrogate(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path, seed={"k0": "odd \ud800 text", "k1": "v1"})
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "agent0"})
        s.close()
    return manifest, journal, state


def test_undo_prints_a_lone_surrogate_in_its_text_report_as_an_escape(tmp_path):
    manifest, journal, state = _agent_over_a_lone_surrogate(tmp_path)
    done = cli("undo", "--manifest", str(manifest), "--journal", str(journal))
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\\ud800" in done.stdout and "restored (verified)" in done.stdout
    assert json.loads(state.read_text())["k0"] == "odd \ud800 text"
    with open_journal(journal) as j:
        assert j.list_runs()[0].status == "rolled_back"


def test_undo_json_keeps_a_lone_surrogate_as_a_json_escape(tmp_path):
    manifest, journal, _ = _agent_over_a_lone_surrogate(tmp_path)
    done = cli("undo", "--dry-run", "--json", "--manifest", str(manifest), "--journal", str(journal))
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    [step] = [s for s in report["steps"] if s["kind"] == "revert"]
    assert step["calls"][0]["args"]["value"] == "odd \ud800 text"
