"""A live proxy in another pid namespace is never taken for dead (adversarial review #1).

Flatpak/bubblewrap editors, ``unshare -p``, ``docker --uts=host``: same host name, another pid
namespace. The proxy's pid means nothing on the host (there it is a kernel thread or nothing),
so a command on the host can tell nothing about it: unknown, which is live.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest
from helpers import cli, kv_proxy, spawn

from synartesis.journal.liveness import process_state, start_token


def _unshare_ok() -> bool:
    if not sys.platform.startswith("linux") or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-pf", "--mount-proc", "true"], check=False, capture_output=True, timeout=10).returncode == 0


def test_a_process_recorded_in_another_pid_namespace_is_unknown_never_gone():
    token = start_token(os.getpid())
    if not token or not token.startswith("linux:"):
        pytest.skip("pid namespaces are Linux's")
    scheme, boot, ticks, ns = token.split(":")
    assert ns == str(os.stat("/proc/self/ns/pid").st_ino)
    assert process_state(os.getpid(), f"{scheme}:{boot}:{ticks}:1") == "unknown"  # even its pid alive here
    assert process_state(2 ** 22 + 1, f"{scheme}:{boot}:{ticks}:1") == "unknown"  # or not
    assert process_state(2 ** 22 + 1, token) == "gone"
    assert process_state(os.getpid(), f"{scheme}:{boot}:{ticks}") == "live"  # a token from before: as it was


@pytest.mark.skipif(not _unshare_ok(), reason="needs unshare -p (root or user namespaces)")
def test_a_live_proxy_in_another_pid_namespace_is_never_closed_or_pruned_from_the_host(tmp_path):
    manifest, journal, _state, argv = kv_proxy(tmp_path)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    client = tmp_path / "client.py"
    # the agent, inside the namespace: one write done, one in flight (FAKE_HANG: never answered)
    client.write_text(f"""
import json, os, subprocess
p = subprocess.Popen({argv!r}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     env={{**os.environ, "FAKE_HANG": "slow_put"}})
def s(o): p.stdin.write((json.dumps(o) + "\\n").encode()); p.stdin.flush()
s({{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {{"protocolVersion": "2025-06-18", "capabilities": {{}}, "clientInfo": {{"name": "ns", "version": "0"}}}}}}); p.stdout.readline()
s({{"jsonrpc": "2.0", "method": "notifications/initialized"}})
s({{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "put", "arguments": {{"key": "k1", "value": "N1"}}}}}}); p.stdout.readline()
s({{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {{"name": "slow_put", "arguments": {{"key": "k0", "value": "NS"}}}}}})
print("ready", flush=True)
p.stdout.readline()
""")
    ns = spawn(["unshare", "-pf", "--mount-proc", sys.executable, str(client)], stdout=subprocess.PIPE, text=True)
    assert ns.stdout.readline().strip() == "ready"
    db = sqlite3.connect(journal)
    for _ in range(100):  # the in-flight call is journalled (pending) before it is forwarded
        if db.execute("SELECT count(*) FROM actions").fetchone()[0] == 2:
            break
        time.sleep(0.05)
    listed = cli("list", "--runs", "--json", *j)
    closed = cli("close", *j)  # any writer sweeps stale runs
    pruned = cli("prune", "--older-than", "0", "--yes", *j)
    (row,) = json.loads(listed.stdout)
    assert row["stale"] is False and row["unknown"] == 0, row
    assert "was not active" not in closed.stdout + closed.stderr
    assert "deleted" not in pruned.stdout, pruned.stdout
    runs = db.execute("SELECT status, end_note FROM runs").fetchall()
    assert runs == [("active", None)], runs
    assert [s for (s,) in db.execute("SELECT status FROM actions ORDER BY seq")] == ["applied", "pending"]
    db.close()
