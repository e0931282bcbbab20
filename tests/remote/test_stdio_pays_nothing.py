"""Issue 12 item 1: the stdio path must not pay for the remote one. A whole stdio session,
``tools/call`` writes included, imports no HTTP library and nothing of ``synartesis.remote``
(tests/proxy/test_startup.py checks the warm start up to ``tools/list`` for the other heavy
modules)."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import FAKE_POLICY, FAKE_SERVER, proxy_argv

REMOTE_ONLY = ("httpx", "httpx2", "httpcore", "h11", "h2", "anyio", "sniffio", "starlette", "uvicorn", "certifi",
               "keyring", "synartesis.remote", "synartesis.serve")


def _imported(argv: list[str], frames: bytes) -> set[str]:
    """Every module (full dotted name) the process imported (python -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], input=frames, capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line}


def test_a_stdio_session_with_writes_imports_nothing_remote(tmp_path):
    policy, journal, state = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "kv.json"
    policy.write_text(FAKE_POLICY)
    state.write_text('{"k0": "v0"}')
    session = [("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}),
               ("notifications/initialized", None),
               ("tools/call", {"name": "get", "arguments": {"key": "k0"}}),
               ("tools/call", {"name": "put", "arguments": {"key": "k0", "value": "v1"}})]
    frames = b"".join(json.dumps({"jsonrpc": "2.0", "method": m, **({"id": i} if p is not None else {}),
                                  **({"params": p} if p else {})}).encode() + b"\n"
                      for i, (m, p) in enumerate(session))
    argv = proxy_argv("kv", policy, journal, [*FAKE_SERVER, "--state", str(state)])
    names = _imported(argv, frames)
    assert "synartesis.proxy.engine" in names  # the measurement sees our own modules
    assert state.read_text() != '{"k0": "v0"}'  # the write went through
    hits = sorted(n for n in names if n in REMOTE_ONLY or n.split(".")[0] in REMOTE_ONLY
                  or n.startswith(("synartesis.remote", "synartesis.serve")))
    assert not hits, hits
