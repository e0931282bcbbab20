"""The texts a batch of reads is journalled with, built without a loop per character or per
id: the same texts the general path (uuid4's format, ``json``'s quoting) would give."""

from __future__ import annotations

import json
import os
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synartesis.canonical import call_key, compact
from synartesis.journal import actions, rows
from synartesis.proxy.framing import PREVIEW


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 70), st.randoms(use_true_random=False))
def test_a_batch_of_ids_is_what_uuid4_makes_of_the_same_random_bytes(n, rnd):
    raw = bytes(rnd.getrandbits(8) for _ in range(16 * n))
    real = os.urandom
    os.urandom = lambda size: raw[:size]
    try:
        ids = rows.new_ids(n)
    finally:
        os.urandom = real
    # uuid.UUID(bytes=…, version=4) sets the version and variant bits as uuid4() does
    assert ids == [str(uuid.UUID(bytes=raw[k:k + 16], version=4)) for k in range(0, 16 * n, 16)]


_ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=PREVIEW)


@settings(max_examples=300, deadline=None)
@given(_ASCII | st.sampled_from(['{"a":"\\"x\\\\"}', "\x7f\x00\t\n", "\\u0069sError"]) | st.text(max_size=30),
       st.integers(0, 10**9), st.sampled_from(["ab" * 32, 'a"b\\c']))
def test_a_digested_results_ref_and_its_quoted_text_are_what_json_makes_of_it(preview, size, digest):
    result = {"synartesisDigest": True, "bytes": size, "sha256": digest, "preview": preview}
    refs = actions._digest_refs(result)
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii() or "$synartesis." in text:
        assert refs is None
        return
    assert refs == ("=" + text, json.dumps("=" + text, ensure_ascii=False))


def test_only_our_own_digest_gets_an_inline_ref_of_its_own():
    good = {"synartesisDigest": True, "bytes": 3, "sha256": "ab", "preview": "x"}
    assert actions._digest_refs(good) is not None
    for bad in ({**good, "bytes": True}, {**good, "synartesisDigest": 1}, {**good, "more": 1}, dict(reversed(good.items())),
                {k: v for k, v in good.items() if k != "preview"}, {**good, "preview": None}, [good]):
        assert actions._digest_refs(bad) is None


_ONE_MEMBER = st.dictionaries(st.text(max_size=8), st.text(max_size=40), min_size=1, max_size=1)
_ODD = st.sampled_from([{"path": 'a"b\\c\n\x7f\x00'}, {"p\u00e9th": "x"}, {"path": "\ud800"}, {"path": "$synartesis.blob"},
                        {"path": "x" * 1100}, {"path": 1}, {"path": None}, {"path": ["a"]}, {"b": "1", "a": "2"},
                        {"a:b": "c:d"}, {}, None, [1]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_ONE_MEMBER | _ODD, min_size=1, max_size=4))
def test_a_reads_arguments_are_journalled_as_the_general_path_makes_them(new_journal, args):
    # record_reads quotes a one-string-member object itself (no encoder call, no sort): its
    # call key, stored ref and chained state are those of canonical() and put_json's
    j = new_journal()
    run = j.begin_run("t", {})
    j.record_reads([{"run": run, "server": "files", "tool": "read_text_file", "args": a, "status": "applied",
                     "result": None} for a in args])
    rows = j.actions(run)
    assert len(rows) == len(args)
    for row, sent in zip(rows, args):
        assert row.call_key == call_key("files", "read_text_file", sent)
        assert json.dumps(j.get_json(row.args_ref)) == json.dumps(sent)  # key order included
        text = compact(sent)
        if len(text) < 1024 and text.isascii() and "$synartesis." not in text:
            assert row.args_ref == "=" + text
    assert j.audit(run).ok
