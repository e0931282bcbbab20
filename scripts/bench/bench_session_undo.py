#!/usr/bin/env python3
"""Undo of an agent session across two servers, per step beyond the servers' own calls.

    python scripts/bench/bench_session_undo.py [--quick] [--baseline CHECKOUT | --baseline-python PY] [--out FILE]

One process (this script, the "client") starts two proxies, each over its own real filesystem
server and folder, and makes N interleaved writes through them (N/2 each): one agent session of
two runs. Then it times, as whole commands (wall time, interleaved per repetition):
- ``synartesis undo SESSION``: the session at once (this checkout);
- ``synartesis undo RUN_A`` then ``undo RUN_B``: per run (this checkout);
- the same per-run undo with ``--baseline`` (another checkout, e.g. main before sessions), and
  session and per-run undo with ``--baseline-python`` (another build's interpreter, e.g. a venv
  with main installed from a wheel: that build writes the journal and undoes it).
Every undo must restore both files byte for byte. Each undo runs under ``selfcpu.py``, so the
CPU of the undo process itself (every thread, not its servers) is reported per step too: it
holds under load where wall time does not. Everything runs under a temporary HOME and
SYNARTESIS_HOME (nothing of the real home is read or written). Per step = the slope between N=20 and
N=200 (fixed costs such as Python's start and the servers' spawn cancel out), from the fastest
repetition of each (on a shared machine the least disturbed one; medians are printed too); the
servers' own share is measured on a bare server: what an undo step asks of it (a drift read, the
inverse write, a re-read). Goal (issue 10): ≤ +1.5 ms per step beyond the servers' calls, and
grouping no slower than per-run undo.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from mcpbench import Session  # noqa: E402  (the neutral driver beside this script)

FS = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
RULES = """
  - match: "{s}.read_*"
    class: readonly
  - match: "{s}.write_file"
    class: reversible
    snapshot: {{tool: {s}.read_text_file, args: {{path: "$.path"}}, absent_when: ["ENOENT"]}}
    inverse: {{tool: {s}.write_file, args: {{path: "$.path", content: "$snapshot.content"}}}}
"""
POLICY = "version: 1\nservers:\n  fa: {}\n  fb: {}\ntools:" + RULES.format(s="fa") + RULES.format(s="fb")


SELFCPU = HERE / "selfcpu.py"
_HOME: dict[str, str] = {}  # the temporary HOME / SYNARTESIS_HOME every process gets (set in main)


def _env(code: Path | None) -> dict:
    env = dict(os.environ, **_HOME)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def _python(code: Path | str | None) -> str:
    """The interpreter of a variant: another build's python (a str), or ours."""
    return code if isinstance(code, str) else sys.executable


def _code(code: Path | str | None) -> Path | None:
    """The checkout put on PYTHONPATH (only for a ``--baseline`` checkout)."""
    return code if isinstance(code, Path) else None


def populate(work: Path, n: int, code: Path | str | None) -> tuple[Path, Path, dict[Path, bytes]]:
    """A fresh journal with one session of two runs and ``n`` interleaved writes."""
    for d in ("a", "b"):
        (work / d).mkdir(parents=True, exist_ok=True)
    files = {work / "a" / "doc.txt": b"", work / "b" / "doc.txt": b""}
    for k, p in enumerate(files):
        files[p] = (f"original {k}\n" * 40).encode()
        p.write_bytes(files[p])
    policy, journal = work / "synartesis.yaml", work / "journal.db"
    policy.write_text(POLICY)
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal) + suffix).unlink(missing_ok=True)
    env = _env(_code(code))
    sessions = []
    for name, folder in (("fa", "a"), ("fb", "b")):
        argv = [_python(code), "-m", "synartesis", "proxy", "--server", name, "--manifest", str(policy),
                "--journal", str(journal), "--", "node", str(FS), str(work / folder)]
        s = Session(argv, env=env)
        s.initialize()
        sessions.append((s, work / folder / "doc.txt"))
    for i in range(n):
        s, path = sessions[i % 2]
        reply = s.call_tool("write_file", {"path": str(path), "content": f"agent write {i}\n" * 40})
        if "error" in reply or reply.get("result", {}).get("isError"):
            raise SystemExit(f"write {i} failed: {reply}")
    for s, _ in sessions:
        s.close()
    return policy, journal, files


def targets(journal: Path) -> tuple[str | None, list[str]]:
    """(session id or None on a schema-1 journal, run ids) straight from the file."""
    with sqlite3.connect(journal) as db:
        runs = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY started_at")]
        cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
        session = db.execute("SELECT session_id FROM runs LIMIT 1").fetchone()[0] if "session_id" in cols else None
    return session, runs


def undo(policy: Path, journal: Path, refs: list[str], code: Path | str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the undo processes themselves) for ``undo REF`` for each
    ref in turn (each must succeed)."""
    cpu_file = journal.parent / "undo-cpu.txt"
    cpu_file.unlink(missing_ok=True)
    env = dict(_env(_code(code)), SELFCPU_OUT=str(cpu_file))
    t0 = time.perf_counter()
    for ref in refs:
        p = subprocess.run([_python(code), str(SELFCPU), "synartesis", "undo", ref, "--manifest", str(policy),
                            "--journal", str(journal)], capture_output=True, text=True, env=env, timeout=900,
                           cwd=journal.parent)
        if p.returncode != 0:
            raise SystemExit(f"undo {ref} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    wall = time.perf_counter() - t0
    return wall, sum(float(x) for x in cpu_file.read_text().split())


def bare_step_ms(work: Path, n: int) -> float:
    """What one undo step asks of the server (read, write, read), on the bare server, in ms."""
    folder = work / "bare"
    folder.mkdir(exist_ok=True)
    path = folder / "doc.txt"
    path.write_text("x\n" * 40)
    s = Session(["node", str(FS), str(folder)])
    s.initialize()
    samples = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        s.call_tool("read_text_file", {"path": str(path)})
        s.call_tool("write_file", {"path": str(path), "content": f"w {i}\n" * 40})
        s.call_tool("read_text_file", {"path": str(path)})
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    s.close()
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller N (a smoke run, not a measurement)")
    ap.add_argument("--baseline", type=Path, help="another checkout to time per-run undo with (e.g. main)")
    ap.add_argument("--baseline-python", help="another build's python (e.g. main installed in a venv): "
                    "session and per-run undo, that build writing and undoing")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, help="write the raw numbers here as JSON")
    opts = ap.parse_args()
    if not FS.exists():
        raise SystemExit(f"{FS} is missing: run `npm ci --prefix .servers` first")
    small, large = (10, 40) if opts.quick else (20, 200)
    reps = 1 if opts.quick else opts.reps
    variants = [("session undo (this checkout)", None, "session"), ("per-run undo (this checkout)", None, "runs")]
    if opts.baseline:
        variants.append((f"per-run undo ({opts.baseline})", opts.baseline.resolve(), "runs"))
    if opts.baseline_python:
        variants.append(("session undo (baseline python)", opts.baseline_python, "session"))
        variants.append(("per-run undo (baseline python)", opts.baseline_python, "runs"))
    times: dict[str, dict[int, list[float]]] = {v[0]: {small: [], large: []} for v in variants}
    cpus: dict[str, dict[int, list[float]]] = {v[0]: {small: [], large: []} for v in variants}
    work_root = Path(tempfile.mkdtemp(prefix="synartesis-bench-session-"))
    home = work_root / "home"
    home.mkdir()
    _HOME.update(HOME=str(home), SYNARTESIS_HOME=str(home / ".synartesis"),
                 # compiled once, outside the checkout: an editable build that compiles every
                 # module on every start (PYTHONDONTWRITEBYTECODE) only adds noise to the slope
                 PYTHONPYCACHEPREFIX=str(work_root / "pycache"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.update(_HOME)  # the bare server too
    for rep in range(reps):
        for n in (small, large):
            for label, code, how in variants:
                work = work_root / f"{rep}-{n}-{how}-{'base' if code else 'this'}"
                policy, journal, files = populate(work, n, code)
                session, runs = targets(journal)
                refs = [session] if how == "session" else runs
                secs, cpu = undo(policy, journal, refs, code)
                if any(p.read_bytes() != b for p, b in files.items()):
                    raise SystemExit(f"{label}: undo of {n} writes did not restore both files")
                times[label][n].append(secs)
                cpus[label][n].append(cpu)
                print(f"rep {rep + 1} N={n:<4} {label:<45} {secs:6.2f} s  cpu {cpu:5.2f} s  load {os.getloadavg()[0]:.1f}",
                      flush=True)
    server = bare_step_ms(work_root, 50 if opts.quick else 200)
    rows = []
    for label, per_n in times.items():
        row = {"variant": label, "server_ms": server}
        for how, pick in (("min", min), ("median", statistics.median)):
            a, b = pick(per_n[small]), pick(per_n[large])
            step = (b - a) / (large - small) * 1000
            ca, cb = pick(cpus[label][small]), pick(cpus[label][large])
            row[how] = {f"N={small} s": a, f"N={large} s": b, "per_step_ms": step, "added_ms": step - server,
                        "cpu_per_step_ms": (cb - ca) / (large - small) * 1000}
        rows.append(row)
    print(f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; {reps} repetition(s); load average "
          f"now {' '.join(f'{x:.1f}' for x in os.getloadavg())}" + ("; QUICK run, not a measurement" if opts.quick else ""))
    for how in ("min", "median"):
        print(f"\n{'fastest repetition' if how == 'min' else 'median'}:\n")
        print(f"| undo of a session of two runs | N={small} | N={large} | per step | server's own calls | added per step "
              "| CPU of undo per step |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            m = r[how]
            print(f"| {r['variant']} | {m[f'N={small} s']:.2f} s | {m[f'N={large} s']:.2f} s | {m['per_step_ms']:.2f} ms "
                  f"| {server:.2f} ms | {m['added_ms']:+.2f} ms | {m['cpu_per_step_ms']:.2f} ms |")
    print("\nEvery undo restored both files byte for byte. Goal: ≤ +1.5 ms added per step; "
          "session undo no slower than per-run undo.")
    if opts.out:
        opts.out.write_text(json.dumps({"rows": rows, "times": times, "cpu": cpus}, indent=2))


if __name__ == "__main__":
    main()
