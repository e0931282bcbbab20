# Interleaved start-up runs: wall time to the initialize answer, and the CPU each process used up
# to it (robust to a loaded machine). Fresh journal every run, like run_benchmarks.py; the
# policy cache warm (each label's own, after the first, discarded round).
import sys, shlex, time, os, statistics, collections, random
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpbench import Session
HZ = os.sysconf("SC_CLK_TCK")
def tree(pid):
    out = [pid]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            for k in open(f"/proc/{pid}/task/{tid}/children").read().split(): out += tree(int(k))
    except FileNotFoundError: pass
    return out
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read(); rest = f[f.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) * 1000 / HZ, open(f"/proc/{pid}/comm").read().strip()
out = None
if sys.argv[1] == "--out":
    out, sys.argv[1:3] = sys.argv[2], []
runs = int(sys.argv[1]); cmds = [c.split("=", 1) for c in sys.argv[2:]]
res = collections.defaultdict(lambda: collections.defaultdict(list))
for r in range(runs + 1):
    order = cmds[:]; random.shuffle(order)
    for label, c in order:
        # each label's journal (and so its compiled policy cache, kept beside the journal) in a
        # folder of its own: two builds sharing one cache would overwrite each other's (the cache
        # is keyed by the build's policy code) and measure cold starts half of the time
        j = f"./sc-{label}/j-sc.db"
        os.makedirs(os.path.dirname(j), exist_ok=True)
        for s in ("", "-wal", "-shm"):
            if os.path.exists(j + s): os.unlink(j + s)
        s = Session(shlex.split(c.replace("{journal}", j))); s.initialize()
        if r == 0:
            s.close(); continue
        res[label]["init"].append((s.t_init_reply - s.t_spawn) / 1e6)
        for pid in tree(s.proc.pid):
            ms, comm = cpu(pid)
            res[label]["cpu_" + ("node" if comm in ("node", "fake") else "proxy")].append(ms)
        s.close()
base = res["direct"]["init"]
summary = {}
print(f"{'label':<12}{'init p25':>9}{'init p50':>9}{'added p25':>10}{'added p50':>10}{'paired med':>11}{'proxy cpu':>10}{'node cpu':>9}")
for label, d in res.items():
    q = statistics.quantiles(d["init"], n=4)
    qb = statistics.quantiles(base, n=4)
    paired = statistics.median([a - b for a, b in zip(d["init"], base)])
    pc = statistics.median(d["cpu_proxy"]) if d.get("cpu_proxy") else 0
    summary[label] = {"init_p50": q[1], "added_p50": q[1] - qb[1], "paired_added": paired, "proxy_cpu_ms": pc,
                      "node_cpu_ms": statistics.median(d.get("cpu_node") or [0])}
    print(f"{label:<12}{q[0]:9.0f}{q[1]:9.0f}{q[0]-qb[0]:+10.0f}{q[1]-qb[1]:+10.0f}{paired:+11.0f}{pc:10.0f}{statistics.median(d.get('cpu_node') or [0]):9.0f}")
if out:
    import json
    json.dump(summary, open(out, "w"), indent=1)
