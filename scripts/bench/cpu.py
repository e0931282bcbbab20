#!/usr/bin/env python3
"""CPU time per call, per process and per thread, for each command (noise-robust companion
to latency). Reads /proc/<pid>/task/<tid>/stat utime+stime before and after N calls."""
import argparse, os, sys, shlex, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpbench import Session, is_tool_error, text_blob, pct
HZ = os.sysconf("SC_CLK_TCK")

def tree(pid):
    out = [pid]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            kids = open(f"/proc/{pid}/task/{tid}/children").read().split()
            for k in kids:
                out += tree(int(k))
    except FileNotFoundError:
        pass
    return out

def snap(root):
    d = {}
    for pid in tree(root):
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
            for tid in os.listdir(f"/proc/{pid}/task"):
                f = open(f"/proc/{pid}/task/{tid}/stat").read()
                rest = f[f.rindex(")") + 2:].split()
                tcomm = f[f.index("(") + 1:f.rindex(")")]
                d[(pid, comm, int(tid), tcomm)] = (int(rest[11]) + int(rest[12])) / HZ, int(rest[11]) / HZ, int(rest[12]) / HZ
        except (FileNotFoundError, ProcessLookupError):
            pass
    return d

ap = argparse.ArgumentParser()
ap.add_argument("--cmd", action="append", required=True)
ap.add_argument("--kind", default="read")
ap.add_argument("--n", type=int, default=2000)
ap.add_argument("--size", type=int, default=1024)
ap.add_argument("--workdir", required=True)
ap.add_argument("--out", help="also write the per-process figures as JSON")
a = ap.parse_args()
report = {}
for spec in a.cmd:
    label, c = spec.split("=", 1)
    s = Session(shlex.split(c))
    s.initialize()
    path = os.path.join(a.workdir, f"cpu-{label}.txt")
    open(path, "w").write(text_blob(a.size, "orig"))
    for i in range(30):
        s.call_tool("read_text_file" if a.kind == "read" else "write_file",
                    {"path": path} if a.kind == "read" else {"path": path, "content": text_blob(a.size, f"w{i}")})
    time.sleep(0.3)
    before = snap(s.proc.pid)
    me0 = os.times()
    lat = []
    t0 = time.perf_counter()
    for i in range(a.n):
        args = {"path": path} if a.kind == "read" else {"path": path, "content": text_blob(a.size, f"x{i}")}
        t = time.perf_counter_ns()
        r = s.call_tool("read_text_file" if a.kind == "read" else "write_file", args)
        lat.append((time.perf_counter_ns() - t) / 1e6)
    wall = time.perf_counter() - t0
    time.sleep(0.3)  # let the journal thread finish its batch
    after = snap(s.proc.pid)
    me1 = os.times()
    s.close()
    print(f"== {label}: {a.n} {a.kind}s, wall {wall/a.n*1e3:.3f} ms/call, p50 {pct(lat,50):.3f} ms, driver {(me1.user+me1.system-me0.user-me0.system)/a.n*1e6:.0f} us/call")
    per_proc = {}
    report[label] = {"p50_ms": pct(lat, 50), "wall_ms": wall / a.n * 1e3, "procs": {}}
    for k, (tot, u, sy) in after.items():
        b = before.get(k, (0, 0, 0))
        dt = tot - b[0]
        per_proc.setdefault((k[0], k[1]), []).append((k[3], dt, u - b[1], sy - b[2]))
    for (pid, comm), threads in per_proc.items():
        tot = sum(t[1] for t in threads)
        report[label]["procs"][f"{comm}:{pid}"] = {"us_per_call": tot / a.n * 1e6, "comm": comm,
                                                   "threads": [t[1] / a.n * 1e6 for t in threads]}
        print(f"   {comm:<16} {tot/a.n*1e6:7.0f} us/call  " + "  ".join(f"[{t[0]} {t[1]/a.n*1e6:.0f} (u{t[2]/a.n*1e6:.0f}/s{t[3]/a.n*1e6:.0f})]" for t in threads if t[1] > 0))
if a.out:
    import json
    json.dump(report, open(a.out, "w"), indent=1)
