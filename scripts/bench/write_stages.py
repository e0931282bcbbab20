#!/usr/bin/env python3
"""Stage trace of a declared write (issue 11 item 4), throwaway: apply write_stages.patch to a copy, build a wheel, then
`python3 write_stages.py PYTHON POLICY OUT.jsonl N` (stamps per stage, SYN_TRACE=OUT); `--stats OUT.jsonl` prints p25/p50/p75/mean per stage."""
import sys
if sys.argv[1:2] == ["--stats"]:
    sys.argv = sys.argv[1:]
    exec(open(__file__.replace("write_stages.py", "write_stages_stats.py")).read())
    raise SystemExit
import sys, os, json, statistics
sys.path.insert(0, "/work/shared/bench")
from mcpbench import Session, text_blob
py, pol, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
W = os.path.join(os.environ["HOME"], "w"); os.makedirs(W, exist_ok=True)
FS = "/work/main/.servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
if os.path.exists(out): os.unlink(out)
env = dict(os.environ, SYN_TRACE=out)
s = Session([py, "-m", "synartesis", "proxy", "--server", "files", "--manifest", pol, "--journal", os.path.join(os.environ["HOME"], "j.db"), "--", "node", FS, W], env=env)
s.initialize()
p = os.path.join(W, "t.txt"); open(p, "w").write(text_blob(1024, "orig"))
for i in range(n + 50):
    for b in range(10):
        s.call_tool("write_file", {"path": p, "content": text_blob(1024, f"x{i}-{b}")})
    if i * 10 >= n + 50: break
s.close()
rows = [json.loads(l) for l in open(out)][50:]
keys = ["a_frame","b_lane","c_rule","d_gates","e_preread_sent","f_prepared","g_preread_answered_reader","h_preread_lane","i_tx_begin","j_committed","j2_before_send","k_write_sent","o_applied_tx","l_answer_read","m_answer_to_client","n_lane_answer","p_deferred"]
prev = "a_frame"
print(f"{len(rows)} writes; median µs from the previous stage / from the frame")
for k in keys[1:]:
    d = [(r[k]-r[prev])/1000 for r in rows if k in r and prev in r]
    t = [(r[k]-r["a_frame"])/1000 for r in rows if k in r]
    if d: print(f"{k:<28}{statistics.median(d):9.1f}{statistics.median(t):9.1f}")
    prev = k if d else prev
d = [(r["k_write_sent"]-r["a_frame"])/1000 for r in rows]; print("frame->write sent", statistics.median(d))
d = [(r["m_answer_to_client"]-r["l_answer_read"])/1000 for r in rows]; print("answer read->client", statistics.median(d))
d = [(r["l_answer_read"]-r["k_write_sent"])/1000 for r in rows]; print("write at server", statistics.median(d))
d = [(r["g_preread_answered_reader"]-r["e_preread_sent"])/1000 for r in rows]; print("preread at server", statistics.median(d))
