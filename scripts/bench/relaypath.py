#!/usr/bin/env python3
"""CPU of the two relay paths per plain read, in one process with no pipes and no journal: the
client reader's work for one ``tools/call`` (parse, route, write) and the server reader's for its
answer (route, settle, write). Load-robust where ``cpu.py`` is not: it times only Python's own
work (thread CPU, best of 5 batches), not waking threads on a busy machine.

Run it with the python of the build to measure, from ``/`` (not inside a checkout):
``PYTHONDONTWRITEBYTECODE=1 /tmp/vNAME/bin/python scripts/bench/relaypath.py --n 25000``.
The answer is the real filesystem server's to ``read_text_file`` of a 1 KiB file (2,190 bytes,
TypeScript SDK order); writes go to /dev/null.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=25000)
a = ap.parse_args()
home = tempfile.mkdtemp()
os.environ["HOME"], os.environ["SYNARTESIS_HOME"] = home, home + "/.syn"
policy = Path(home) / "synartesis.yaml"
policy.write_text('version: 1\nservers:\n  files: {}\ntools:\n  - match: "files.read_*"\n    class: readonly\n')

from synartesis.policy.loader import load_policy  # noqa: E402
from synartesis.proxy.engine import Engine, EngineOptions  # noqa: E402
from synartesis.proxy.framing import write_frame  # noqa: E402
from synartesis.proxy.stdio import StdioUpstream  # noqa: E402


class _Child:  # a server whose pipes are /dev/null: only our side of the relay runs
    def __init__(self) -> None:
        self.stdin, self.stdout, self.stderr, self.pid = open(os.devnull, "wb", buffering=0), open(os.devnull, "rb"), None, 0


class _NoJournal:
    def add(self, item: dict) -> None:
        pass

    def submit(self, job) -> None:
        pass


null = os.open(os.devnull, os.O_WRONLY)
up = StdioUpstream(_Child(), "files")
engine = Engine("files", up, lambda line: write_frame(null, line), policy=load_policy(policy),
                journal_path=Path(home) / "j.db", options=EngineOptions())
up._on_message = engine.on_server_message  # what start() wires, without the reader thread
engine._start_lane()
engine.run_id = "run"  # no journal: this measures the relay threads alone
engine._recorder = _NoJournal()
text = "\\n".join(["orig " * 12 + "ori"] * 16)
answer = ('{"result":{"content":[{"type":"text","text":"%s"}],"structuredContent":{"content":"%s"}},'
          '"jsonrpc":"2.0","id":%%d}' % (text, text)).encode()
call = b'{"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/w/f.txt"}},"jsonrpc":"2.0","id":%d}'
calls = [call % i for i in range(a.n)]
answers = [answer % i for i in range(a.n)]
batch = a.n // 5
best_c = best_s = float("inf")
for rep in range(5):
    c = s = 0
    for i in range(rep * batch, rep * batch + batch):
        t0 = time.thread_time_ns()
        engine.on_client_line(calls[i])
        t1 = time.thread_time_ns()
        up._dispatch(answers[i])
        s += time.thread_time_ns() - t1
        c += t1 - t0
    best_c, best_s = min(best_c, c / batch / 1e3), min(best_s, s / batch / 1e3)
print(f"client→server {best_c:.1f} us, server→client {best_s:.1f} us per read "
      f"(best of 5 batches of {batch}; load {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]})")
