#!/usr/bin/env python3
"""The team journal's benchmarks (issue 14), every figure a ratio measured in the same run:

    python scripts/bench/bench_postgres.py [--quick] [--out DIR] [--main /work/main]

- read and reversible-write p50 through the proxy, SQLite journal vs PostgreSQL on loopback
  (``rr.py`` round-robin: every variant's session open at once, bursts of 10 calls in shuffled
  order; ratio to the bare filesystem server per rep, median over reps). Goal: PostgreSQL's
  write ≤ 1.5× SQLite's (``write_pg_over_sqlite``: the per-rep ratio, median). Writes are timed
  with the post-state read back and, as ``-declared``, with it declared (``post_state``, as the
  shipped filesystem policy does: no read-back on the path to the answer).
- 32 proxies × 25 writes into one journal (``mcpbench.py concurrent``), on both backends:
  calls per second, lost calls.
- start-up A/B of the SQLite proxy: this checkout against ``--main`` (a checkout of main, put
  first on PYTHONPATH), interleaved (``startcpu.py``): wall time to the ``initialize`` answer and
  the proxy's CPU up to it.

The PostgreSQL server is started here (Debian's binaries, as the tests do: ``tests/pgkit.py``)
with ``synchronous_commit=off``, the counterpart of the SQLite journal's ``synchronous=NORMAL``
(a crash of the machine may lose the last commits, a crash of a process never does), and
stopped at the end. Needs ``.servers/node_modules`` (the filesystem server) and psycopg.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))
import pgkit  # noqa: E402  (the tests' server kit: one way to start PostgreSQL)

from run_benchmarks import DECLARED, FS, POLICY  # noqa: E402  (the same server and policy as the other benchmarks)


def proxy_cmd(manifest: Path, journal: str, pythonpath: str | None = None) -> str:
    env = f"env PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return (f"{env}{shlex.quote(sys.executable)} -m synartesis proxy --server files --manifest "
            f"{shlex.quote(str(manifest))} --journal {journal} -- node {shlex.quote(str(FS))} {{workdir}}")


def run(*argv: str, cwd: Path) -> None:
    print("$", " ".join(shlex.quote(a) for a in argv[:6]), "…", flush=True)
    subprocess.run(argv, check=True, cwd=cwd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few samples: a smoke run, not a measurement")
    ap.add_argument("--out", help="directory for the raw JSON (default: a temporary one)")
    ap.add_argument("--main", help="a checkout of main for the start-up A/B (default: none)")
    ap.add_argument("--parts", default="read,write,concurrent,startup",
                    help="which to run, comma-separated (default: all of read,write,concurrent,startup)")
    opts = ap.parse_args()
    if not FS.exists():
        raise SystemExit(f"{FS} is missing: install the test servers first (npm ci --prefix .servers)")
    bindir = pgkit.find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL binaries: install Debian's postgresql")
    out = Path(opts.out or tempfile.mkdtemp(prefix="synartesis-bench-pg-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="synartesis-bench-pg-work-"))
    wd = work / "files"
    wd.mkdir()
    manifest = work / "synartesis.yaml"
    manifest.write_text(POLICY)
    declared = work / "declared.yaml"  # write_file's post-state declared, as the shipped filesystem policy does
    declared.write_text(DECLARED)
    # with a PostgreSQL journal the compiled policy cache lives in $SYNARTESIS_HOME: keep it here,
    # never in the real home
    os.environ["SYNARTESIS_HOME"] = str(work / "home")
    q = opts.quick
    server = pgkit.PgServer.start(bindir, settings={"fsync": "on", "full_page_writes": "on",
                                                    "synchronous_commit": "off"})
    os.environ["PGPASSWORD"] = pgkit.PASSWORD
    try:
        def pg() -> str:
            return server.url(server.new_database("bench"))

        direct = f"direct=node {shlex.quote(str(FS))} {wd}"
        variants = [f"sqlite={proxy_cmd(manifest, str(work / 'rr.db'))}", f"postgresql={proxy_cmd(manifest, pg())}"]
        rr = [sys.executable, str(HERE / "rr.py"), "--burst", "10", "--reps", "3" if q else "15", "--workdir", str(wd)]
        parts = set(opts.parts.split(","))
        for kind, rounds in (("read", "5" if q else "30"), ("write", "3" if q else "10")):
            if kind not in parts:
                continue
            extra = [] if kind == "read" else [f"sqlite-declared={proxy_cmd(declared, str(work / 'rr-d.db'))}",
                                               f"postgresql-declared={proxy_cmd(declared, pg())}"]
            cmds = [a for c in [direct, *variants, *extra] for a in ("--cmd", c.replace("{workdir}", str(wd)))]
            run(*rr, "--kind", kind, "--rounds", rounds, "--warmup", "3", *cmds, "--out", str(out / f"rr-{kind}.json"),
                cwd=work)
        for label, journal in (("sqlite", str(work / "conc.db")), ("postgresql", pg())):
            if "concurrent" not in parts:
                break
            run(sys.executable, str(HERE / "mcpbench.py"), "concurrent", "--procs", "8" if q else "32", "--writes", "25",
                "--rounds", "1", "--timeout", "300", "--workdir", str(wd / f"conc-{label}"), "--journal", journal,
                "--cmd", f"{label}={proxy_cmd(manifest, '{journal}')}", "--out", str(out / f"conc-{label}.json"),
                cwd=work)
        if opts.main and "startup" in parts:
            run(sys.executable, str(HERE / "startcpu.py"), "--out", str(out / "startcpu.json"), "4" if q else "20",
                direct, f"main={proxy_cmd(manifest, '{journal}', opts.main)}".replace("{workdir}", str(wd)),
                f"branch={proxy_cmd(manifest, '{journal}')}".replace("{workdir}", str(wd)), cwd=work)
    finally:
        server.stop()
    summary = summarise(out)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    print(f"raw results: {out}")
    shutil.rmtree(work, ignore_errors=True)


def summarise(out: Path) -> dict:
    """The issue's figures from the raw results (whatever exists)."""
    s: dict = {}
    for kind in ("read", "write"):
        p = out / f"rr-{kind}.json"
        if p.exists():
            raw = json.loads(p.read_text())
            s[f"rr_{kind}"] = summary = raw.get("summary", raw)
            for suffix in ("", "-declared"):  # the figure: PostgreSQL over SQLite, per rep, median
                pg_r, lite_r = (summary.get(f"{b}{suffix}", {}).get("ratios") for b in ("postgresql", "sqlite"))
                if pg_r and lite_r:
                    s[f"{kind}{suffix}_pg_over_sqlite"] = round(statistics.median(
                        p_ / l_ for p_, l_ in zip(pg_r, lite_r)), 3)
    for label in ("sqlite", "postgresql"):
        p = out / f"conc-{label}.json"
        if p.exists():
            r = json.loads(p.read_text())["rounds"][0]
            s[f"concurrent_{label}"] = {"calls_per_s": r["calls_per_s"], "lost": r["lost"], "p50_ms": r["lat_ms"].get("p50")}
    p = out / "startcpu.json"
    if p.exists():
        s["startup"] = json.loads(p.read_text())
    return s


if __name__ == "__main__":
    main()
