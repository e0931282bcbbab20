#!/usr/bin/env python3
"""Undo of an agent session across two servers (or of one run on one server), per step beyond the
servers' own calls.

    python scripts/bench/bench_session_undo.py [--servers 1|2] [--quick] [--reps N]
        [--baseline CHECKOUT | --baseline-python PY] [--out FILE]

``--servers 2`` (default, issue 10): one process (this script, the "client") starts two proxies,
each over its own real filesystem server and folder, and makes N interleaved writes through them
(N/2 each): one agent session of two runs. Then it times, as whole commands (wall time,
interleaved per repetition):
- ``synartesis undo SESSION``: the session at once (this checkout);
- ``synartesis undo RUN_A`` then ``undo RUN_B``: per run (this checkout);
- the same per-run undo with ``--baseline`` (another checkout, e.g. main before sessions), and
  session and per-run undo with ``--baseline-python`` (another build's interpreter, e.g. a venv
  with main installed from a wheel: that build writes the journal and undoes it).
``--servers 1`` (issue 11's undo row): one proxy, one server, N writes to one file, and
``synartesis undo RUN`` of this checkout and of the baseline build.

Every undo must restore the files byte for byte. Each undo runs under ``selfcpu.py``, which
reports the CPU of the undo process itself (every thread, not its servers) — the figure that
holds under load where wall time does not — and records every request the undo sent to a
server and when it waited for it. The servers' own share is measured in the same run: right
after each undo, that undo's recorded requests are replayed on bare servers (rooted at the same
folders, warmed up with 20 reads and writes first), in the same order and with the same overlap
(a read the undo sent ahead is sent at the same point and waited for at the same point), so it
counts exactly the calls that undo made — read reuse and reads ahead included — and nothing of
the undo's own work. Everything runs under a temporary HOME and SYNARTESIS_HOME (nothing of the
real home is read or written).

One discarded round (a small undo per variant) goes first: a build's first start compiles its
modules into the pycache prefix. Per step = the slope between N=20 and N=200 (fixed costs such as Python's start and the
servers' spawn cancel out), for the undo and for its replay alike, from the fastest repetition
(on a shared machine the least disturbed one) and from the median; added per step = undo slope
minus replay slope with the same statistic. Goal (issue 10, issue 11): ≤ +1.5 ms per step beyond
the servers' calls, and session grouping no slower than per-run undo.
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
FOLDERS = {"fa": "a", "fb": "b"}  # server name → its folder under the work folder
SERVERS = list(FOLDERS)  # the servers this run uses (``--servers 1`` keeps only fa)


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
    """A fresh journal with one session of a run per server and ``n`` writes interleaved."""
    folders = [FOLDERS[s] for s in SERVERS]
    for d in folders:
        (work / d).mkdir(parents=True, exist_ok=True)
    files = {work / d / "doc.txt": b"" for d in folders}
    for k, p in enumerate(files):
        files[p] = (f"original {k}\n" * 40).encode()
        p.write_bytes(files[p])
    policy, journal = work / "synartesis.yaml", work / "journal.db"
    policy.write_text(POLICY)
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal) + suffix).unlink(missing_ok=True)
    env = _env(_code(code))
    sessions = []
    for name, folder in ((s, FOLDERS[s]) for s in SERVERS):
        argv = [_python(code), "-m", "synartesis", "proxy", "--server", name, "--manifest", str(policy),
                "--journal", str(journal), "--", "node", str(FS), str(work / folder)]
        s = Session(argv, env=env)
        s.initialize()
        sessions.append((s, work / folder / "doc.txt"))
    for i in range(n):
        s, path = sessions[i % len(sessions)]
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


def undo(policy: Path, journal: Path, refs: list[str], code: Path | str | None) -> tuple[float, float, list]:
    """(wall seconds, CPU seconds of the undo processes themselves, the requests they sent to
    servers as ``selfcpu.py`` recorded them) for ``undo REF`` for each ref in turn (each must
    succeed)."""
    cpu_file, trace_file = journal.parent / "undo-cpu.txt", journal.parent / "undo-trace.jsonl"
    cpu_file.unlink(missing_ok=True)
    trace_file.unlink(missing_ok=True)
    env = dict(_env(_code(code)), SELFCPU_OUT=str(cpu_file), SELFCPU_TRACE=str(trace_file))
    t0 = time.perf_counter()
    for ref in refs:
        p = subprocess.run([_python(code), str(SELFCPU), "synartesis", "undo", ref, "--manifest", str(policy),
                            "--journal", str(journal)], capture_output=True, text=True, env=env, timeout=900,
                           cwd=journal.parent)
        if p.returncode != 0:
            raise SystemExit(f"undo {ref} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    wall = time.perf_counter() - t0
    trace = [json.loads(line) for line in trace_file.read_text().splitlines()] if trace_file.exists() else []
    return wall, sum(float(x) for x in cpu_file.read_text().split()), trace


class _Bare:
    """A bare filesystem server over one folder, for :func:`replay`: requests sent without
    waiting, answers picked up by id."""

    def __init__(self, folder: Path) -> None:
        self.s = Session(["node", str(FS), str(folder)], env=_env(None))
        self.s.initialize()
        self.answers: dict[str, dict] = {}
        scratch = str(folder / "warm-up.txt")
        for i in range(20):  # warmed up: node's JIT has seen both tools before the timing
            self.s.call_tool("write_file", {"path": scratch, "content": f"warm {i}\n" * 40})
            self.s.call_tool("read_text_file", {"path": scratch})

    def send(self, rid: int, tool: str, args: dict) -> None:
        self.s.send({"jsonrpc": "2.0", "id": f"r{rid}", "method": "tools/call",
                     "params": {"name": tool, "arguments": args}})

    def wait(self, rid: int) -> dict:
        want, deadline = f"r{rid}", time.monotonic() + 60
        while want not in self.answers:
            line = self.s._read_line(deadline)
            if line.strip():
                msg = json.loads(line)
                if "id" in msg and "method" not in msg:
                    self.answers[msg["id"]] = msg
        return self.answers.pop(want)


def replay(work: Path, trace: list) -> tuple[float, int]:
    """(seconds, requests) to make exactly the requests of an undo's ``trace`` on bare servers
    over the same folders (the files are as the undo left them, and the replay's writes put
    back what the undo wrote), sending and waiting in the recorded order; only the requests
    are timed, not the servers' start or warm-up."""
    servers = {name: _Bare(work / FOLDERS[name]) for name in SERVERS}
    where: dict[int, _Bare] = {}
    try:
        t0 = time.perf_counter()
        for event in trace:
            if event[0] == "send":
                _, rid, server, tool, args = event
                where[rid] = servers[server]
                where[rid].send(rid, tool, args)
            else:
                reply = where.pop(event[1]).wait(event[1])
                if "error" in reply or reply.get("result", {}).get("isError"):
                    raise SystemExit(f"replayed request {event[1]} failed: {reply}")
        secs = time.perf_counter() - t0
    finally:
        for b in servers.values():
            b.s.close()
    return secs, sum(1 for e in trace if e[0] == "send")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller N (a smoke run, not a measurement)")
    ap.add_argument("--servers", type=int, choices=(1, 2), default=2,
                    help="2: a session over two servers (issue 10); 1: one run on one server (issue 11)")
    ap.add_argument("--baseline", type=Path, help="another checkout to time per-run undo with (e.g. main)")
    ap.add_argument("--baseline-python", help="another build's python (e.g. main installed in a venv): "
                    "session and per-run undo, that build writing and undoing")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, help="write the raw numbers here as JSON")
    opts = ap.parse_args()
    if not FS.exists():
        raise SystemExit(f"{FS} is missing: run `npm ci --prefix .servers` first")
    del SERVERS[opts.servers:]
    small, large = (10, 40) if opts.quick else (20, 200)
    reps = 1 if opts.quick else opts.reps
    if opts.servers == 2:
        variants = [("session undo (this checkout)", None, "session"), ("per-run undo (this checkout)", None, "runs")]
    else:
        variants = [("undo of one run (this checkout)", None, "runs")]
    if opts.baseline:
        variants.append((f"per-run undo ({opts.baseline})", opts.baseline.resolve(), "runs"))
    if opts.baseline_python:
        if opts.servers == 2:
            variants.append(("session undo (baseline python)", opts.baseline_python, "session"))
            variants.append(("per-run undo (baseline python)", opts.baseline_python, "runs"))
        else:
            variants.append(("undo of one run (baseline python)", opts.baseline_python, "runs"))
    # per variant, per N, one value per repetition: wall s, CPU s, replay s, requests
    data = {v[0]: {k: {small: [], large: []} for k in ("wall", "cpu", "bare", "calls")} for v in variants}
    work_root = Path(tempfile.mkdtemp(prefix="synartesis-bench-session-"))
    home = work_root / "home"
    home.mkdir()
    _HOME.update(HOME=str(home), SYNARTESIS_HOME=str(home / ".synartesis"),
                 # compiled once, outside the checkout: an editable build that compiles every
                 # module on every start (PYTHONDONTWRITEBYTECODE) only adds noise to the slope
                 PYTHONPYCACHEPREFIX=str(work_root / "pycache"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.update(_HOME)  # the bare servers too
    # a discarded round first: each build's first start compiles its modules into the pycache
    # prefix, which would make the first N=20 undo (and so the slope) look cheaper to grow
    for label, code, how in variants:
        work = work_root / f"warm-up-{how}-{'base' if code else 'this'}"
        policy, journal, _ = populate(work, 2 * len(SERVERS), code)
        session, runs = targets(journal)
        undo(policy, journal, [session] if how == "session" else runs, code)
    for rep in range(reps):
        for n in (small, large):
            for label, code, how in variants:
                work = work_root / f"{rep}-{n}-{how}-{'base' if code else 'this'}"
                policy, journal, files = populate(work, n, code)
                session, runs = targets(journal)
                refs = [session] if how == "session" else runs
                secs, cpu, trace = undo(policy, journal, refs, code)
                if any(p.read_bytes() != b for p, b in files.items()):
                    raise SystemExit(f"{label}: undo of {n} writes did not restore every file")
                if not trace:
                    raise SystemExit(f"{label}: the undo recorded no requests (selfcpu.py could not wrap its pool)")
                bare, calls = replay(work, trace)
                d = data[label]
                d["wall"][n].append(secs)
                d["cpu"][n].append(cpu)
                d["bare"][n].append(bare)
                d["calls"][n].append(calls)
                print(f"rep {rep + 1} N={n:<4} {label:<40} {secs:6.2f} s  cpu {cpu:5.2f} s  servers {bare:5.2f} s "
                      f"({calls} requests)  load {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    span = large - small
    for label, d in data.items():
        row = {"variant": label}
        for how, pick in (("min", min), ("median", statistics.median)):
            def slope(key: str) -> float:
                return (pick(d[key][large]) - pick(d[key][small])) / span * 1000
            step, server = slope("wall"), slope("bare")
            row[how] = {f"N={small} s": pick(d["wall"][small]), f"N={large} s": pick(d["wall"][large]),
                        "per_step_ms": step, "server_ms": server, "added_ms": step - server,
                        "cpu_per_step_ms": slope("cpu"), "calls_per_step": slope("calls") / 1000}
        rows.append(row)
    what = "a session of two runs" if opts.servers == 2 else "one run on one server"
    print(f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; {reps} repetition(s); load average "
          f"now {' '.join(f'{x:.1f}' for x in os.getloadavg())}" + ("; QUICK run, not a measurement" if opts.quick else ""))
    for how in ("min", "median"):
        print(f"\n{'fastest repetition' if how == 'min' else 'median'}:\n")
        print(f"| undo of {what} | N={small} | N={large} | per step | requests per step | servers' own calls "
              "(replayed) | added per step | CPU of undo per step |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            m = r[how]
            print(f"| {r['variant']} | {m[f'N={small} s']:.2f} s | {m[f'N={large} s']:.2f} s | {m['per_step_ms']:.2f} ms "
                  f"| {m['calls_per_step']:.2f} | {m['server_ms']:.2f} ms | {m['added_ms']:+.2f} ms "
                  f"| {m['cpu_per_step_ms']:.2f} ms |")
    print("\nEvery undo restored its files byte for byte. Goal: ≤ +1.5 ms added per step"
          + ("; session undo no slower than per-run undo." if opts.servers == 2 else "."))
    if opts.out:
        opts.out.write_text(json.dumps({"servers": opts.servers, "rows": rows, "data": data}, indent=2))

if __name__ == "__main__":
    main()
