"""Adversarial review, round 3, #5 — wrong answer: a read whose result (1-64 KiB) spells its key "\\u0069sError" is journaled as
applied. Before fc96ede such results were parsed (json.loads decodes the escape) and recorded as
failed; the new memchr shortcut looks only for the literal bytes "isError"."""
import json

from synartesis.proxy.framing import answer_frame, parse_lenient
from synartesis.proxy.pipeline import read_record


def _frame(result_text: str) -> bytes:
    return b'{"result":' + result_text.encode() + b',"jsonrpc":"2.0","id":7}'


def test_a_refused_read_with_an_escaped_iserror_key_is_recorded_failed_like_json_loads_reads_it():
    body = '{"content":[{"type":"text","text":"' + "denied " * 400 + '"}],"\\u0069sError":true}'
    assert json.loads(body)["isError"] is True  # what the client's SDK sees
    line = _frame(body)
    msg = parse_lenient(line)
    assert answer_frame(line) is not None
    rec = read_record({"run": "r", "server": "s", "tool": "t", "rule": None, "args": {}, "seq": 1, "answer": msg})
    assert rec["status"] == "failed", rec["status"]
