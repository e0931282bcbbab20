#!/usr/bin/env python3
"""Instructions per reversible ``write_file`` of the whole proxy process, under callgrind (the
write counterpart of ``cgread.py``; repeatable on a noisy machine, where CPU time is not): the
proxy runs under ``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`` (the
filesystem server beside it is not traced), 40 writes warm it up, instrumentation is switched on
(``callgrind_control -i on``) for N writes of 1 KiB over one file, made back to back as a client
does (each sent once the previous answer is in), and the lane's last idle commit, then off.
Prints the total and each thread's instructions per write.

    python scripts/bench/cgwrite.py SRC N OUT_PREFIX [--declared] [--size BYTES]

SRC is put first on PYTHONPATH (a checkout or an unpacked tree of the build to measure; the
working directory is kept off the path, so a checkout it is run from does not shadow SRC); the
proxy runs on this checkout's .venv python, under a temporary HOME. ``--declared``: the policy
declares ``post_state: {content: "$.content"}`` (the shipped filesystem policy), else the
post-state is read back. ``--annotate``: also print the top functions (inclusive) of the lane
thread. Note: valgrind does not expose SHA-NI, so OpenSSL's SHA-256 counts ~25 instructions a
byte here where the native code is several times cheaper.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mcpbench import Session, is_tool_error, text_blob  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("n", type=int)
ap.add_argument("pre")
ap.add_argument("--declared", action="store_true")
ap.add_argument("--size", type=int, default=1024)
ap.add_argument("--python", help="the interpreter to run the proxy on (default: this checkout's .venv)")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(HERE))
fs = f"{root}/.servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
home, wd = tempfile.mkdtemp(prefix="cgwrite-home-"), tempfile.mkdtemp(prefix="cgwrite-wd-")
policy = os.path.join(home, "synartesis.yaml")
with open(policy, "w") as f:
    f.write('version: 1\nservers:\n  files: {}\ntools:\n  - match: "files.read_*"\n    class: readonly\n'
            '  - match: "files.write_file"\n    class: reversible\n'
            '    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"]}\n'
            '    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}\n'
            + ('    post_state: {content: "$.content"}\n' if a.declared else ""))
env = dict(os.environ, HOME=home, SYNARTESIS_HOME=home + "/.syn", XDG_CONFIG_HOME=home + "/.config",
           XDG_DATA_HOME=home + "/.local/share", XDG_STATE_HOME=home + "/.local/state",
           XDG_CACHE_HOME=home + "/.cache", PYTHONPATH=a.src,
           PYTHONSAFEPATH="1")  # `-m` would put the working directory (a checkout?) before SRC
out = f"{a.pre}.cg"
for old in glob.glob(out + "*"):
    os.remove(old)
python = a.python or f"{root}/.venv/bin/python"
s = Session(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
             f"--callgrind-out-file={out}", python, "-m", "synartesis", "proxy",
             "--server", "files", "--manifest", policy, "--journal", home + "/j.db", "--", "node", fs, wd],
            stderr_path=f"{a.pre}.stderr", env=env)
s.initialize(timeout=300)
path = os.path.join(wd, "f.txt")
with open(path, "w") as f:
    f.write(text_blob(a.size, "orig"))


def write(i: int, tag: str) -> None:
    r = s.call_tool("write_file", {"path": path, "content": text_blob(a.size, f"{tag}{i}")}, timeout=300)
    err = is_tool_error(r)
    if err:
        raise SystemExit(f"write {i} failed: {err}")


for i in range(40):
    write(i, "warm")
time.sleep(1.0)
subprocess.run(["callgrind_control", "-i", "on", str(s.proc.pid)], check=True, capture_output=True)
time.sleep(0.5)
for i in range(a.n):
    write(i, "w")
time.sleep(1.5)  # the lane commits the last write's outcome when idle
subprocess.run(["callgrind_control", "-i", "off", str(s.proc.pid)], check=True, capture_output=True)
s.proc.stdin.close()
s.proc.wait(timeout=300)
threads = []
for name in sorted(glob.glob(out + "*")):
    text = open(name).read()
    m = re.search(r"^totals: (\d+)", text, re.M)
    if m and int(m.group(1)):
        threads.append((int(m.group(1)), name))
print(f"{sum(t for t, _ in threads) / a.n / 1000:.1f}k instructions per write ({'declared' if a.declared else 'read back'}); "
      "threads: " + ", ".join(f"{t / a.n / 1000:.1f}k ({n.rsplit('-', 1)[-1]})" for t, n in threads))
