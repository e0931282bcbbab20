"""A remote server's 4xx refusal that quotes the credential it was sent (adversarial review 29,
F3): synartesis puts the refusal's text into its own error message, which the agent gets, the
journal keeps as the action's note and `show` prints. The entry's header values must not reach
any of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import RawSession, cli, spawn, synartesis_argv

KEY = "sk-live-9f8e7d6c5b4a39281706abcdef"
SERVER = Path(__file__).with_name("echoing_server.py")


def test_a_refusal_quoting_the_entrys_key_is_shown_and_journalled_without_it(tmp_path):
    srv = spawn([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    port = int(srv.stdout.readline())
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text('version: 1\nservers:\n  r: {}\ntools:\n  - match: "r.put"\n    class: compensable\n'
                        '    inverse: {tool: r.put, args: {}}\n')
    argv = synartesis_argv("proxy", "--server", "r", "--manifest", str(manifest), "--journal", str(journal),
                           "--url", f"http://127.0.0.1:{port}/mcp", "--header-env", "X-Api-Key=RKEY",
                           "--transport", "http")
    with RawSession(argv, env=dict(os.environ, RKEY=KEY)) as s:
        s.handshake()
        answer = s.request(1, "tools/call", {"name": "put", "arguments": {"a": 1}})
        assert s.close() == 0
    message = answer["error"]["message"]
    assert "403" in message and "may not call this tool" in message, message  # the refusal is still told
    assert KEY not in json.dumps(answer), answer
    assert KEY.encode() not in journal.read_bytes()
    shown = cli("show", "--journal", str(journal), "--manifest", str(manifest))
    assert shown.returncode == 0 and "403" in shown.stdout
    assert KEY not in shown.stdout + shown.stderr
