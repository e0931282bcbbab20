#!/usr/bin/env python3
"""Proxy benchmarks that hold on a noisy machine: every figure against the bare filesystem server
measured in the same run, and any number of synartesis builds side by side (issue 11, item 7).

    python scripts/bench/run_benchmarks.py [--quick] [--out DIR] [--baseline main=/path/to/venv/bin/python]

What runs (the drivers are this folder's copies of the team's kit, ``shared/bench``):
- ``rr.py`` round-robin latency, reads and reversible writes: every variant's session open at
  once, each round a burst of 10 calls per variant in shuffled order; ratio = p50 / direct p50
  per rep, median over >= 15 reps. Writes also run with a policy that declares ``post_state``.
- ``cpu.py`` CPU per read of each process (from /proc; robust to load): "whole proxy" is every
  process of the variant's tree but the server.
- ``startcpu.py`` interleaved start-ups: wall time to the ``initialize`` answer (paired median
  against the bare server) and the CPU the proxy burnt before it (warm: the compiled policy
  cache exists, the journal does not).
- ``journal_series.py`` journal bytes over bytes written: 30 writes of 200 KB of fresh prose,
  and 30 small edits (about 1 % each) of one 200 KB file; for the edits also the payload store
  alone (what chunking changes, without the journal's fixed pages and each action's rows).
- ``bench_session_undo.py --servers 1``: undo of a 20-write and a 200-write run (median of 3);
  per step beyond the server's own calls, which are that undo's recorded requests replayed on a
  warmed bare server right after it (same order and overlap), and the CPU of the undo process
  itself per step (it runs under ``selfcpu.py``: every thread, not its servers).
- ``bigread.py``: peak RSS of the proxy while relaying one 50 MB answer, over the answer's size.
- a floor measured in the same run: ``floors/relay_threads.py`` with ``RELAY_PARSE=1``, two plain
  threads that ``json.loads`` every frame and forward it (the least any relay that reads the
  messages pays in Python), beside the builds in the read and write latency rows and CPU per read.

Prints the issue's table (floor and goal columns, one column per build) and writes every raw
result as JSON to --out. ``--classic`` also runs the old driver's sequential scenarios
(``mcpbench.py startup`` / ``calls``). Needs ``.servers/node_modules`` (the test servers).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
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
DECLARED = POLICY + '    post_state: {content: "$.content"}\n'

# (row, floor on this machine, goal) as in issue 11
ROWS = [
    ("read", "`read_text_file` p50 ratio to direct", "1.09x (threads); C 1.06x", "<= 1.15x"),
    ("cpu", "CPU per read, whole proxy", "55-65 us", "<= 150 us"),
    ("start_wall", "start-up added, wall", "-", "<= +40 ms"),
    ("start_cpu", "CPU burnt before the first answer", "40 ms", "<= 80 ms"),
    ("write", "reversible `write_file` p50 ratio", "~1.7x", "<= 2.5x"),
    ("write_declared", "... with `post_state` declared", "~1.7x", "<= 2.5x"),
    ("undo", "undo, per step beyond the server's calls (replayed)", "-", "<= +1.5 ms"),
    ("undo_cpu", "... CPU of the undo process per step (not its servers)", "-", "-"),
    ("journal_fresh", "journal bytes / written, 30 x 200 KB fresh prose", "0.43x", "<= 0.5x"),
    ("journal_edits", "journal bytes / written, 30 small edits of one 200 KB file", "<< 0.05x", "<= 0.05x"),
    ("payload_edits", "... the payload store alone (blobs and packs)", "<< 0.05x", "-"),
    ("rss", "peak RSS relaying a 50 MB answer / its size", "-", "<= 2x"),
]


def run(*argv: str, cwd: Path) -> None:
    """Run one driver in ``cwd``: a folder with no ``synartesis`` package in it, since
    ``python -m synartesis`` would otherwise import the checkout it was started from."""
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    subprocess.run(argv, check=True, cwd=cwd)


def proxy_cmd(python: str, manifest: Path, journal: str) -> str:
    return (f"{shlex.quote(python)} -m synartesis proxy --server files --manifest {shlex.quote(str(manifest))} "
            f"--journal {journal} -- node {shlex.quote(str(FS))} {{workdir}}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few samples: a smoke run, not a measurement")
    ap.add_argument("--out", help="directory for the raw JSON (default: a temporary one)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose synartesis is measured")
    ap.add_argument("--baseline", action="append", default=[], metavar="LABEL=PYTHON",
                    help="another build to measure in the same run (e.g. main=/tmp/main-venv/bin/python)")
    ap.add_argument("--classic", action="store_true", help="also run the old driver's sequential scenarios")
    opts = ap.parse_args()
    if not FS.exists():
        raise SystemExit(f"{FS} is missing: install the test servers first (npm ci --prefix .servers)")
    out = Path(opts.out or tempfile.mkdtemp(prefix="synartesis-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="synartesis-bench-work-"))
    wd = work / "files"
    wd.mkdir()
    # every driver, proxy and undo it starts runs under a temporary HOME / SYNARTESIS_HOME: none
    # of them reads or writes the real home (a compiled policy, a default journal)
    home = work / "home"
    home.mkdir()
    os.environ.update(HOME=str(home), SYNARTESIS_HOME=str(home / ".synartesis"))
    (work / "synartesis.yaml").write_text(POLICY)
    (work / "declared.yaml").write_text(DECLARED)
    builds = [("synartesis", opts.python)] + [tuple(b.split("=", 1)) for b in opts.baseline]
    labels = [label for label, _ in builds]
    q = opts.quick
    py = sys.executable
    direct = f"direct=node {shlex.quote(str(FS))} {{workdir}}"
    floor = (f"floor=env RELAY_PARSE=1 {shlex.quote(py)} {shlex.quote(str(HERE / 'floors' / 'relay_threads.py'))} "
             f"node {shlex.quote(str(FS))} {{workdir}}")

    def variants(journal_for, declared: bool = False) -> list[str]:
        cmds = []
        for label, python in builds:
            cmds.append(f"{label}=" + proxy_cmd(python, work / "synartesis.yaml", journal_for(label)))
        if declared:
            cmds.append("declared=" + proxy_cmd(opts.python, work / "declared.yaml", journal_for("declared")))
        return cmds

    def per_label(label: str) -> str:
        return str(work / f"journal-{label}.db")

    results: dict = {"builds": dict(builds)}
    reps = "3" if q else "15"
    rr = [py, str(HERE / "rr.py"), "--burst", "10", "--reps", reps, "--workdir", str(wd)]
    run(*rr, "--kind", "read", "--rounds", "5" if q else "30", "--warmup", "3",
        *[a for c in [direct, floor, *variants(per_label)] for a in ("--cmd", c.replace("{workdir}", str(wd)))],
        "--out", str(out / "rr-read.json"), cwd=work)
    run(*rr, "--kind", "write", "--rounds", "3" if q else "10", "--warmup", "2",
        *[a for c in [direct, floor, *variants(per_label, declared=True)] for a in ("--cmd", c.replace("{workdir}", str(wd)))],
        "--out", str(out / "rr-write.json"), cwd=work)
    run(py, str(HERE / "cpu.py"), "--n", "300" if q else "2000", "--workdir", str(wd),
        *[a for c in [direct, floor, *variants(per_label)] for a in ("--cmd", c.replace("{workdir}", str(wd)))],
        "--out", str(out / "cpu.json"), cwd=work)
    run(py, str(HERE / "startcpu.py"), "--out", str(out / "startcpu.json"), "4" if q else "20",
        direct.replace("{workdir}", str(wd)),
        *[c.replace("{workdir}", str(wd)) for c in variants(lambda label: "{journal}")], cwd=work)
    for label, python in builds:
        j = str(work / f"series-{label}.db")
        run(py, str(HERE / "journal_series.py"), "--workdir", str(wd), "--journal", j,
            "--cmd", f"{label}=" + proxy_cmd(python, work / "synartesis.yaml", "{journal}"),
            "--out", str(out / f"series-{label}.json"), cwd=work)
        # the build's own interpreter runs the driver, so "this checkout" there is that build
        run(python, str(HERE / "bench_session_undo.py"), "--servers", "1", *(["--quick"] if q else ["--reps", "3"]),
            "--out", str(out / f"undo-{label}.json"), cwd=work)
        run(py, str(HERE / "bigread.py"), "--workdir", str(wd), "--journal", str(work / f"big-{label}.db"),
            "--mb", "10" if q else "50", "--cmd", f"{label}=" + proxy_cmd(python, work / "synartesis.yaml", "{journal}"),
            "--out", str(out / f"bigread-{label}.json"), cwd=work)
    if opts.classic:
        common = ["--workdir", str(wd), "--journal", str(work / "classic.db"), "--fresh-journal"]
        cmds = [a for c in [direct, variants(lambda label: "{journal}")[0]] for a in ("--cmd", c)]
        run(py, str(HERE / "mcpbench.py"), "startup", *common, "--runs", "5" if q else "20", *cmds,
            "--out", str(out / "classic-startup.json"), cwd=work)
        for kind in ("read", "write"):
            run(py, str(HERE / "mcpbench.py"), "calls", "--kind", kind, *common, "--n", "100" if q else "500",
                "--reps", "2" if q else "5", *cmds, "--out", str(out / f"classic-calls-{kind}.json"), cwd=work)

    table = collect(out, labels)
    results["table"] = table
    (out / "summary.json").write_text(json.dumps(results, indent=1))
    print_table(table, labels, q, out)
    shutil.rmtree(work, ignore_errors=True)


def collect(out: Path, labels: list[str]) -> dict:
    """{row key: {label: value}} from the raw results."""
    load = lambda name: json.loads((out / name).read_text())  # noqa: E731
    rr_read, rr_write, cpu, start = load("rr-read.json"), load("rr-write.json"), load("cpu.json"), load("startcpu.json")
    table: dict[str, dict] = {k: {} for k, *_ in ROWS}
    direct_read = rr_read["summary"]["direct"]["p50"]
    direct_write = rr_write["summary"]["direct"]["p50"]
    for label in labels:
        table["read"][label] = rr_read["summary"][label]["ratio"]
        table["write"][label] = rr_write["summary"][label]["ratio"]
        procs = cpu[label]["procs"].values()
        table["cpu"][label] = sum(p["us_per_call"] for p in procs if p["comm"] not in ("node", "fake"))
        table["start_wall"][label] = start[label]["paired_added"]
        table["start_cpu"][label] = start[label]["proxy_cpu_ms"]
        series = {r["pattern"]: r for r in load(f"series-{label}.json")}
        table["journal_fresh"][label] = series["fresh"]["ratio"]
        table["journal_edits"][label] = series["edits"]["ratio"]
        edits = series["edits"]
        if edits.get("payload_bytes") is not None:
            table["payload_edits"][label] = edits["payload_bytes"] / edits["written"]
        undo = load(f"undo-{label}.json")["rows"][0]["median"]
        table["undo"][label] = undo["added_ms"]
        table["undo_cpu"][label] = undo["cpu_per_step_ms"]
        table["rss"][label] = load(f"bigread-{label}.json")[label]["ratio"]
    table["write_declared"]["synartesis"] = rr_write["summary"]["declared"]["ratio"]
    # the floor measured in this run (absent from results written before it was added)
    measured = {"read": rr_read["summary"].get("floor", {}).get("ratio"),
                "write": rr_write["summary"].get("floor", {}).get("ratio")}
    if "floor" in cpu:
        measured["cpu"] = sum(p["us_per_call"] for p in cpu["floor"]["procs"].values() if p["comm"] not in ("node", "fake"))
    if measured["read"] is not None and measured["write"] is not None:
        # a reversible write waits for a pre-read and the write: both through the parsing threads
        fr, fw = rr_read["summary"]["floor"]["p50"], rr_write["summary"]["floor"]["p50"]
        measured["write"] = measured["write_declared"] = (fr + fw) / direct_write
    table["_floor"] = {k: v for k, v in measured.items() if v is not None}
    table["_direct"] = {"read_p50_ms": direct_read, "write_p50_ms": direct_write,
                        "direct_start_ms": start["direct"]["init_p50"]}
    return table


def fmt(key: str, v: float | None) -> str:
    if v is None:
        return "—"
    if key in ("read", "write", "write_declared", "journal_fresh", "journal_edits", "payload_edits", "rss"):
        return f"{v:.3f}x" if key.startswith(("journal", "payload")) else f"{v:.2f}x"
    if key == "cpu":
        return f"{v:.0f} us"
    if key == "undo_cpu":
        return f"{v:.2f} ms"
    if key in ("start_wall", "undo"):
        return f"{v:+.1f} ms" if key == "undo" else f"{v:+.0f} ms"
    return f"{v:.0f} ms"


def print_table(table: dict, labels: list[str], quick: bool, out: Path) -> None:
    d = table["_direct"]
    print(f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; bare server: read p50 "
          f"{d['read_p50_ms']:.3f} ms, write p50 {d['write_p50_ms']:.3f} ms, initialize {d['direct_start_ms']:.0f} ms; "
          f"raw results in {out}" + ("; QUICK run, not a measurement" if quick else ""))
    order = [lab for lab in labels if lab != "synartesis"] + ["synartesis"]
    print("\n| | floor on this machine | " + " | ".join(order) + " | goal |")
    print("|---|---|" + "---|" * len(order) + "---|")
    measured = table.get("_floor", {})
    for key, name, floor, goal in ROWS:
        cells = [fmt(key, table[key].get(lab)) for lab in order]
        if key in measured:  # what the parsing threads did in this run, then the figure
            how = "pre-read + write through parsing threads" if key.startswith("write") else "parsing threads"
            floor = f"{fmt(key, measured[key])} {how}, this run; issue: {floor}"
        print(f"| {name} | {floor} | " + " | ".join(cells) + f" | {goal} |")


if __name__ == "__main__":
    main()
