"""Four machines (four process groups with their own host and user) run 32 proxies that make
25 writes each into one PostgreSQL journal: nothing is lost, each run's seqs have no gap, and
every chain audits intact."""

from __future__ import annotations

import os
import threading

import pytest
from helpers import FS_POLICY, RawSession, cli, open_journal, proxy_argv

PROXIES, WRITES, MACHINES = 32, 25, 4


@pytest.mark.slow
def test_32_proxies_on_4_machines_lose_nothing_and_number_each_run_without_gaps(tmp_path, fs_server, pg_journal_url):
    url = pg_journal_url()
    root = tmp_path / "root"
    root.mkdir()
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY)
    argv = proxy_argv("files", manifest, url, [*fs_server, str(root)])
    for k in range(PROXIES):
        (root / f"f{k}.txt").write_text("original")
    start, errors = threading.Barrier(PROXIES), []

    def agent(k: int) -> None:
        m = k % MACHINES
        env = dict(os.environ, SYNARTESIS_HOST=f"machine-{m}", USER=f"user-{m}")
        try:
            with RawSession(argv, env=env) as s:
                s.handshake()
                start.wait(120)
                for i in range(WRITES):
                    r = s.call(i + 1, "write_file", {"path": str(root / f"f{k}.txt"), "content": f"{k}:{i}"},
                               timeout=120)
                    if r.get("isError"):
                        errors.append((k, i, r))
                s.close(timeout=60)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append((k, "session", repr(exc)))

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(PROXIES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors[:3]
    assert all((root / f"f{k}.txt").read_text() == f"{k}:{WRITES - 1}" for k in range(PROXIES))
    with open_journal(url) as j:
        runs = j.list_runs()
        assert len(runs) == PROXIES and {r.host for r in runs} == {f"machine-{m}" for m in range(MACHINES)}
        for r in runs:
            acts = j.actions(r.id)
            assert [a.seq for a in acts] == list(range(1, WRITES + 1)) and {a.status for a in acts} == {"applied"}
        gseqs = [a.gseq for r in runs for a in j.actions(r.id)]
        assert len(set(gseqs)) == PROXIES * WRITES
    audit = cli("audit", "--journal", url, timeout=300)
    assert audit.returncode == 0 and audit.stdout.count("intact") == PROXIES
