"""Adversarial review 14 — wrong result: a read the server refused (``"isError":true``) is
journalled ``applied`` when its result holds something Python's ``json.loads`` will not read
although the frame is forwarded and the client reads it: an integer of more than 4,300 digits
(CPython's int-string limit; JavaScript parses it), or a byte that is not UTF-8 (parse_lenient
promises such frames are read with the bytes replaced). A small one (under 1 KiB) is also
journalled with no result at all: ``LazyFrame.result()`` gives None and the record keeps None."""

import pytest

from synartesis.proxy.framing import parse_lenient
from synartesis.proxy.pipeline import read_record

HUGE = b"9" * 5000

REFUSED = {
    "a 5000-digit number": b'{"content":[{"type":"text","text":"denied"}],"structuredContent":{"n":' + HUGE + b'},"isError":true}',
    "a byte that is not UTF-8, small": b'{"content":[{"type":"text","text":"no \xff such file"}],"isError":true}',
    "a byte that is not UTF-8, 2 KiB": b'{"content":[{"type":"text","text":"no \xff such ' + b"x" * 2000 + b'"}],"isError":true}',
}


def _record(line: bytes) -> dict:
    return read_record({"run": "r", "server": "s", "tool": "t", "rule": None, "args": {}, "seq": 1,
                        "answer": parse_lenient(line)})


@pytest.mark.parametrize("shape", ["sdk", "python"])
@pytest.mark.parametrize("what", list(REFUSED))
def test_a_refused_read_whose_result_json_loads_cannot_read_is_recorded_failed(what, shape):
    body = REFUSED[what]
    line = (b'{"result":' + body + b',"jsonrpc":"2.0","id":7}' if shape == "sdk"  # as the TypeScript SDK writes it
            else b'{"jsonrpc":"2.0","id":7,"result":' + body + b"}")
    rec = _record(line)
    assert rec["status"] == "failed", (what, shape, rec["status"], rec.get("result"))  # was "applied"


def test_a_small_read_answer_that_is_not_utf8_is_journalled_not_dropped():
    rec = _record(b'{"result":{"content":[{"type":"text","text":"caf\xe9"}]},"jsonrpc":"2.0","id":7}')
    assert rec["status"] == "applied"
    assert rec["result"] is not None, rec  # was None: the read's answer left the journal empty
