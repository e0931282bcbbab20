"""Adversarial review 16, F8: two proxies of one session wrote a shared file; the session was
undone; pruning one of its runs (allowed) made a later redo of the session halt on "drift"
against a state recorded in the pruned run. A run whose session was undone or redone across
its runs is kept while another run of that session stays; pruned together, they go."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal


def test_prune_keeps_one_run_of_a_session_undone_across_runs(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    (root / "a.txt").write_text("a0")
    (root / "b.txt").write_text("b0")
    for name in ("a.txt", "b.txt"):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="twin")) as s:
            s.handshake()
            assert not s.call(1, "write_file", {"path": str(root / name), "content": "agent"}).get("isError")
    assert cli("undo", "twin", *flags).returncode == 0
    with open_journal(tmp_path / "j.db") as j:
        first, second = sorted(j.list_runs(), key=lambda r: r.started_at)
    one = cli("prune", first.id[:8], "--yes", "--json", *flags)
    report = json.loads(one.stdout)
    assert one.returncode == 1 and report["deleted"] == [], report
    assert "prune them together" in report["kept"][0]["why"], report
    both = cli("prune", first.id[:8], second.id[:8], "--yes", "--json", *flags)
    assert both.returncode == 0 and sorted(json.loads(both.stdout)["deleted"]) == sorted([first.id, second.id]), both.stdout
