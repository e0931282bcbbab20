#!/usr/bin/env python3
"""Instructions per plain read of the whole proxy process, under callgrind (repeatable on a
noisy machine, where CPU time is not): the proxy runs under ``valgrind --tool=callgrind
--instr-atstart=no --separate-threads=yes`` (the filesystem server beside it is not traced),
60 reads warm it up, instrumentation is switched on (``callgrind_control -i on``) for N reads
of a 1 KiB file and the journal thread's last window, then off. Prints the total and each
thread's instructions per read.

    python scripts/bench/cgread.py SRC N OUT_PREFIX

SRC is put first on PYTHONPATH (a checkout or an unpacked tree of the build to measure); the
proxy runs on this checkout's .venv python, under a temporary HOME. The journal thread's batch
sizes follow the wall clock and the load: each batch (transaction) costs about 340k instructions
of its own, so the figure moves by about 0.7k a read per batch, and 500 reads made 15 to 66
batches on a loaded 2-core machine (stop 31). The number of batches is printed too: compare
builds at equal batch counts (or fit the journal thread's figure against them). Note: valgrind
does not expose SHA-NI, so OpenSSL's SHA-256 counts ~25 instructions a byte here (about 90k a
read) where the native code is several times cheaper.
"""
import glob
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mcpbench import Session, text_blob  # noqa: E402

src, n, pre = sys.argv[1], int(sys.argv[2]), sys.argv[3]
root = os.path.dirname(os.path.dirname(HERE))
fs = f"{root}/.servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
home, wd = tempfile.mkdtemp(prefix="cgread-home-"), tempfile.mkdtemp(prefix="cgread-wd-")
policy = os.path.join(home, "synartesis.yaml")
with open(policy, "w") as f:
    f.write('version: 1\nservers:\n  files: {}\ntools:\n  - match: "files.read_*"\n    class: readonly\n')
env = dict(os.environ, HOME=home, SYNARTESIS_HOME=home + "/.syn", XDG_CONFIG_HOME=home + "/.config",
           XDG_DATA_HOME=home + "/.local/share", XDG_STATE_HOME=home + "/.local/state",
           XDG_CACHE_HOME=home + "/.cache", PYTHONPATH=src,
           PYTHONSAFEPATH="1")  # `-m` would put the working directory (a checkout?) before SRC
out = f"{pre}.cg"
for old in glob.glob(out + "*"):
    os.remove(old)
s = Session(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
             f"--callgrind-out-file={out}", f"{root}/.venv/bin/python", "-m", "synartesis", "proxy",
             "--server", "files", "--manifest", policy, "--journal", home + "/j.db", "--", "node", fs, wd],
            stderr_path=f"{pre}.stderr", env=env)
s.initialize()
path = os.path.join(wd, "f.txt")
with open(path, "w") as f:
    f.write(text_blob(1024, "orig"))
for _ in range(60):
    s.call_tool("read_text_file", {"path": path})
time.sleep(1.0)
subprocess.run(["callgrind_control", "-i", "on", str(s.proc.pid)], check=True, capture_output=True)
ms = time.time_ns() // 1_000_000  # as the journal writes event times (now_iso)
since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)
time.sleep(0.5)
for _ in range(n):
    s.call_tool("read_text_file", {"path": path})
time.sleep(1.5)  # the journal thread commits the last window
subprocess.run(["callgrind_control", "-i", "off", str(s.proc.pid)], check=True, capture_output=True)
s.proc.stdin.close()
s.proc.wait(timeout=120)
threads = []
for name in sorted(glob.glob(out + "*")):
    m = re.search(r"^totals: (\d+)", open(name).read(), re.M)
    if m and int(m.group(1)):
        threads.append(int(m.group(1)))
con = sqlite3.connect(f"file:{home}/j.db?mode=ro", uri=True)
batches = con.execute("SELECT count(*) FROM events WHERE kind = 'reads.record' AND at >= ?", (since,)).fetchone()[0]
con.close()
print(f"{sum(threads) / n / 1000:.1f}k instructions per read; threads: "
      + ", ".join(f"{t / n / 1000:.1f}k" for t in threads) + f"; journal batches: {batches}")
