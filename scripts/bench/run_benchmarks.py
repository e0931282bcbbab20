#!/usr/bin/env python3
"""Proxy and undo benchmarks against the real filesystem server, as ratios to the bare server
measured in the same run (interleaved). Prints a markdown table; raw JSON goes to --out.

    python scripts/bench/run_benchmarks.py [--quick] [--out DIR]

Needs the test servers (`npm ci --prefix .servers`) and this checkout installed (`pip install -e .`).
Goals (issues #2 and #3): startup added ≤ 100 ms; read_text_file p50 ≤ 1.25× direct;
reversible write_file p50 ≤ 3.3× direct; journal bytes after 30 writes of 200 KB ≤ 0.5× the
bytes written; undo ≤ 2.5 ms per step beyond the server's own call time.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FS = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
POLICY = """version: 1
servers:
  files: {}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.list_*"
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
"""


def bench(*args: str, out: Path) -> dict:
    cmd = [sys.executable, str(HERE / "mcpbench.py"), *args, "--out", str(out)]
    print("$", " ".join(shlex.quote(c) for c in cmd[1:]), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer samples (a smoke run, not a measurement)")
    ap.add_argument("--out", help="directory for raw JSON results (default: a temporary one)")
    opts = ap.parse_args()
    if not FS.exists():
        raise SystemExit(f"{FS} is missing: run `npm ci --prefix .servers` first")
    out = Path(opts.out or tempfile.mkdtemp(prefix="synartesis-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="synartesis-bench-work-"))
    policy = work / "synartesis.yaml"
    policy.write_text(POLICY)
    journal = work / "journal.db"
    syn = [sys.executable, "-m", "synartesis"]
    direct = f"direct=node {FS} {{workdir}}"
    proxy = ("synartesis=" + " ".join(shlex.quote(c) for c in syn)
             + f" proxy --server files --manifest {policy} --journal {{journal}} -- node {FS} {{workdir}}")
    undo_cmd = " ".join(shlex.quote(c) for c in syn) + f" undo --manifest {policy} --journal {{journal}}"
    wd = work / "files"
    wd.mkdir()
    common = ["--workdir", str(wd), "--journal", str(journal)]
    q = opts.quick
    startup = bench("startup", *common, "--fresh-journal", "--runs", "5" if q else "20", "--cmd", direct, "--cmd", proxy,
                    out=out / "startup.json")
    reads = bench("calls", "--kind", "read", *common, "--fresh-journal", "--n", "100" if q else "500", "--reps", "2" if q else "5",
                  "--cmd", direct, "--cmd", proxy, out=out / "calls-read.json")
    writes = bench("calls", "--kind", "write", *common, "--fresh-journal", "--n", "50" if q else "200", "--reps", "2" if q else "5",
                   "--cmd", direct, "--cmd", proxy, out=out / "calls-write.json")
    jour = bench("journal", *common, "--n", "30", "--size", str(200 * 1024), "--cmd", proxy, out=out / "journal.json")
    undo = bench("undo", *common, "--n", "1", "50" if q else "200", "--reps", "2" if q else "3", "--undo-cmd", undo_cmd,
                 "--cmd", proxy, out=out / "undo.json")

    s_d = startup["results"]["direct"]["init_ms"]["p50"]
    s_p = startup["results"]["synartesis"]["init_ms"]["p50"]
    r_d = reads["results"]["direct"]["median_of_reps"]["p50"]
    r_p = reads["results"]["synartesis"]["median_of_reps"]["p50"]
    w_d = writes["results"]["direct"]["median_of_reps"]["p50"]
    w_p = writes["results"]["synartesis"]["median_of_reps"]["p50"]
    run = jour["runs"][0]  # after the session closed: what stays on disk
    written = 30 * 200 * 1024
    grown = run["after_exit"]["total"] - run["before"]["total"]
    per_step = undo.get("per_step_ms", float("nan"))
    server_step = 2 * r_d + w_d  # what each undo step asks of the server: drift read, inverse write, re-read
    restored = all(v["all_restored"] for v in undo["by_n"].values())
    rows = [
        ("startup added (spawn → initialize)", f"{s_d:.0f} ms", f"{s_p:.0f} ms", f"+{s_p - s_d:.0f} ms", "≤ +100 ms"),
        ("read_text_file p50", f"{r_d:.3f} ms", f"{r_p:.3f} ms", f"{r_p / r_d:.2f}×", "≤ 1.25×"),
        ("reversible write_file p50", f"{w_d:.3f} ms", f"{w_p:.3f} ms", f"{w_p / w_d:.2f}×", "≤ 3.3×"),
        ("journal bytes after 30 × 200 KB writes", f"{written:,} B written", f"{grown:,} B", f"{grown / written:.2f}×", "≤ 0.5×"),
        ("undo, per step beyond the server's calls", f"{server_step:.2f} ms server", f"{per_step:.2f} ms/step",
         f"+{per_step - server_step:.2f} ms", "≤ +2.5 ms"),
    ]
    print(f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; raw results in {out}"
          + ("; QUICK run, not a measurement" if q else ""))
    print("\n| measure | bare server | through synartesis | ratio / added | goal |\n|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nundo restored the file exactly in every run: {restored}")


if __name__ == "__main__":
    main()
