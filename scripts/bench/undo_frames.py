#!/usr/bin/env python3
"""Undo's journal calls per step, in one process (no servers): the claim (rolling_back) and the
outcome (rolled_back) of each of N declared writes, newest first, on a journal recorded as the
proxy records them. Prints CPU, wall and WAL frames per step (SQLite's WAL grows by a frame per
page written; checkpoints are off while it counts). Run it with the interpreter of the build to
measure, from outside a checkout:

    /path/to/venv/bin/python scripts/bench/undo_frames.py [N=400] [SIZE=480]
"""
import os, sys, time, tempfile
from synartesis.journal import Journal
N = int(sys.argv[1]) if len(sys.argv) > 1 else 400
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 480
def blob(size, tag):
    line = (f"{tag} " * 16)[:63] + "\n"
    return (line * (size // len(line) + 1))[:size]
d = tempfile.mkdtemp()
p = os.path.join(d, "j.db")
j = Journal.open(p, create=True)
run = j.begin_run("bench", {"files": "node x"})
seq = [0]
def nxt():
    seq[0] += 1; return seq[0]
j.own_run(run, nxt)
path = "/tmp/x/cpu.txt"
prev = blob(SIZE, "orig")
read = {"server": "files", "tool": "read_text_file", "args": {"path": path}, "absent_when": ["ENOENT"]}
ids = []
for i in range(N):
    content = blob(SIZE, f"x{i}")
    a = j.record_action(run, "files", "write_file", "reversible", "files.write_file", {"path": path, "content": content},
                        prior="captured", snapshot={"content": prev}, verify=read, carry=False)
    j.flush()
    j.defer_applied(a.id, result={"content": [{"type": "text", "text": f"Successfully wrote to {path}"}],
                                  "structuredContent": {"content": f"Successfully wrote to {path}"}},
                    inverse=[{"server": "files", "tool": "write_file", "args": {"path": path, "content": prev}}],
                    verify=read, post={"present": True, "value": {"content": content}},
                    note="post-state declared by the policy (post_state), not read back")
    prev = content; ids.append(a.id)
j.flush(); j.close()
j = Journal.open(p)
j.conn.execute("PRAGMA wal_autocheckpoint = 0")
j.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
wal = p + "-wal"
w0 = os.path.getsize(wal) if os.path.exists(wal) else 0
t0, c0 = time.perf_counter(), time.process_time()
for aid in reversed(ids):
    j.set_action_status(aid, "rolling_back", expect=("applied",))
    j.get_json(j.get_action(aid).inverse_ref)
    j.set_action_status(aid, "rolled_back", note="restored (verified)", expect=("rolling_back",), reverted="verified")
c1, t1 = time.process_time(), time.perf_counter()
w1 = os.path.getsize(wal)
page = j.conn.execute("PRAGMA page_size").fetchone()[0]
print(f"undo journal per step: cpu {1e6*(c1-c0)/N:.0f} us, wall {1e6*(t1-t0)/N:.0f} us, WAL frames per step {(w1-w0)/(page+24)/N:.1f}")
j.close()
import shutil
shutil.rmtree(d, ignore_errors=True)
