import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])][50:]
keys = ["a_frame","b_lane","c_rule","d_gates","e_preread_sent","f_prepared","g_preread_answered_reader","h_preread_lane","i_tx_begin","j_committed","j2_before_send","k_write_sent","o_applied_tx","l_answer_read","m_answer_to_client","n_lane_answer","p_deferred"]
def q(v, p): v = sorted(v); return v[int(p * (len(v) - 1))]
print(f"{len(rows)} writes  µs: stage delta p25/p50/p75/mean")
for a, b in zip(keys, keys[1:]):
    d = [(r[b]-r[a])/1000 for r in rows if a in r and b in r]
    print(f"{b:<28}{q(d,.25):8.0f}{q(d,.5):8.0f}{q(d,.75):8.0f}{statistics.mean(d):8.0f}")
for name, a, b in [("frame->write sent","a_frame","k_write_sent"),("write sent->answer read","k_write_sent","l_answer_read"),("answer read->client","l_answer_read","m_answer_to_client"),("frame->client","a_frame","m_answer_to_client"),("preread at server","e_preread_sent","g_preread_answered_reader")]:
    d = [(r[b]-r[a])/1000 for r in rows]
    print(f"{name:<28}{q(d,.25):8.0f}{q(d,.5):8.0f}{q(d,.75):8.0f}{statistics.mean(d):8.0f}")
