#!/usr/bin/env python3
"""Peak memory of a command relaying one big answer (issue 11: a 50 MB answer relayed with peak
RSS at most twice its size).

A text file is written so that ``read_text_file``'s answer (the text appears twice, in
``content`` and ``structuredContent``) is about --mb megabytes; the command reads it once; the
peak resident set (``VmHWM``) of the command's own process is read from /proc before it exits.
For a proxy that is the proxy alone (its server is a child process, measured apart).

    python bigread.py --workdir W --journal J --cmd 'LABEL=COMMAND with {journal} {workdir}' [--mb 50]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpbench import Session, argv_of, fresh_journal  # noqa: E402


def vm(pid: int, key: str) -> int:
    """A /proc/PID/status figure in bytes (VmHWM, VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmd", action="append", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--journal", required=True)
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--out")
    args = ap.parse_args()
    path = os.path.join(args.workdir, "big-answer.txt")
    line = "the quick brown fox jumps over the lazy dog, again and again and again.\n"
    size = int(args.mb * 1e6 / 2)
    with open(path, "w") as f:
        f.write((line * (size // len(line) + 1))[:size])
    results = {}
    for spec in args.cmd:
        label, cmd = spec.split("=", 1)
        fresh_journal(args.journal)
        s = Session(argv_of(cmd, args))
        s.initialize()
        before = vm(s.proc.pid, "VmRSS")
        reply = s.call_tool("read_text_file", {"path": path}, timeout=300)
        answer = len(json.dumps(reply, separators=(",", ":")).encode())
        ok = reply.get("result", {}).get("structuredContent", {}).get("content", "")[:len(line)] == line
        time.sleep(0.5)  # the journal thread records the read
        peak = vm(s.proc.pid, "VmHWM")
        s.close()
        results[label] = {"answer_bytes": answer, "rss_before": before, "peak_rss": peak, "ratio": peak / answer,
                          "content_ok": ok}
        print(f"{label:<12} answer {answer / 1e6:.1f} MB, RSS before {before / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB "
              f"= {peak / answer:.2f}x the answer (content ok: {ok})", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
