"""Framing and envelope routing: frames survive any chunking; a frame too large to parse on a
byte pump is routed by an envelope that agrees with json.loads, and a read's result is digested
from its bytes (isError found wherever it sits)."""

from __future__ import annotations

import hashlib
import math
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synartesis.proxy.framing import (INVALID, LARGE, NOT_RESPONSE, LazyFrame, LineSplitter, dump, id_key, parse, parse_lenient, reread,
                                      response_id)

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
    | st.sampled_from(['"', "\\", "\\\"", "}", "]", '"id":1', "\n"]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40).filter(lambda b: b"\n" not in b), max_size=8),
       st.lists(st.integers(1, 30), min_size=1, max_size=10))
def test_frames_come_out_whole_however_the_stream_is_cut(frames, cuts):
    stream = b"".join(f + b"\n" for f in frames)
    splitter, out, pos, i = LineSplitter(), [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        out.extend(bytes(f) for f in splitter.feed(stream[pos:pos + step]))
        pos, i = pos + step, i + 1
    assert out == frames and splitter.rest() == b""


def test_a_frame_without_its_newline_is_kept_for_eof():
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert splitter.rest() == b'{"b"'


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]), _json,
                       min_size=1), st.sampled_from([0, 1, 2]), st.booleans())
def test_the_envelope_of_a_large_frame_agrees_with_json_loads(members, big_at, spaced):
    msg = dict(members)
    keys = list(msg)
    big = keys[big_at % len(keys)]
    msg[big] = {"content": [{"type": "text", "text": "x\\\"y\n" * 20000}], "nested": {"id": 99, "method": "no"}}
    line = json.dumps(msg, indent=1 if spaced else None).encode()
    frame = LazyFrame.scan(line)
    assert frame is not None
    assert set(frame.members) == set(msg)
    for key in msg:
        if key != big:
            assert frame.member(key) == json.loads(json.dumps(msg[key]))
    assert frame.parse() == json.loads(line)


def test_frames_that_are_not_objects_or_arrays_are_not_routed():
    assert LazyFrame.scan(b'"just a string"') is None
    assert LazyFrame.scan(b'{"a": 1} trailing') is None
    assert LazyFrame.scan(b"[1, 2, 3]").is_batch
    assert parse_lenient(b"not json") is None
    assert parse(b'{"x": "\xff"}') is INVALID  # client frames: strict UTF-8
    assert parse_lenient(b'{"x": "\xff"}') == {"x": "\ufffd"}  # server frames: routed anyway


def test_a_read_result_is_digested_from_its_bytes_and_its_error_flag_found_anywhere():
    text = "line of text\n" * 100000
    for layout, flag in ((['content', 'structuredContent', 'isError'], True),
                         (['content', 'isError', 'structuredContent'], True),
                         (['isError', 'content', 'structuredContent'], True),
                         (['content', 'structuredContent'], None)):
        result = {}
        for k in layout:
            result[k] = {"content": [{"type": "text", "text": text}], "structuredContent": {"content": text},
                         "isError": True}[k]
        line = json.dumps({"result": result, "jsonrpc": "2.0", "id": 7}).encode()
        frame = parse_lenient(line)
        assert isinstance(frame, LazyFrame) and frame.member("id") == 7
        digest = frame.result_digest()
        raw = json.dumps(result).encode()
        assert digest["bytes"] == len(raw) and digest["sha256"] == hashlib.sha256(raw).hexdigest()
        assert digest.get("isError") is flag


def test_a_lone_surrogate_is_sent_as_its_escape():
    assert dump({"v": "a\ud800"}) == b'{"v":"a\\ud800"}'
    assert dump({"v": "ζ"}) == '{"v":"ζ"}'.encode()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-10**12, 10**12), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)),
       _json, st.booleans(), st.sampled_from(["result", "error", "method"]))
def test_an_everyday_answer_is_read_from_its_ends_exactly_as_json_loads_reads_it(mid, value, ts_order, kind):
    msg = {"result": value, "jsonrpc": "2.0", "id": mid} if ts_order else {"jsonrpc": "2.0", "id": mid, "result": value}
    if kind != "result":
        msg = {("error" if kind == "error" else "method"): msg.pop("result"), **msg}
        if kind == "method":
            msg["method"] = "x/y"
    line = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode()
    frame = parse_lenient(line)
    if isinstance(frame, LazyFrame):
        assert kind == "result"
        assert frame.member("id") == mid and frame.result() == json.loads(line)["result"]
        assert frame.member("id") == mid and frame.member("jsonrpc") == "2.0"  # the id is read once, then kept
        assert "method" not in frame
    else:
        assert frame == json.loads(line)


_CLIENT_BYTES = st.one_of(
    _json.map(lambda v: json.dumps({"v": v}, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.binary(max_size=40).map(lambda b: b"{" + b),
    st.sampled_from([b"{", b'{"a":1}x', b'{"a":1} \r\n', b'{"a":1}\x0c', b'{"a":"\x01"}', b'{"a":"\xed\xa0\x80"}',
                     b'{"a":1}{"b":2}', b"{\x00\x00\x00", b'{"a":NaN}', b'{"a":' + b"[" * 3000 + b"]" * 3000 + b"}",
                     b'\xef\xbb\xbf{"a":1}', b' {"a":1}', b'{"a":1e400}', b'{"a":-Infinity}', b'[NaN]',
                     b'\xef\xbb\xbf[1]']))


def _json_loads_strict(line: bytes):
    """json.loads, refusing what is not JSON (RFC 8259) though Python reads it: NaN, Infinity,
    a number that overflows a double, a byte order mark (adversarial review 16, F7)."""
    if line[:3] == b"\xef\xbb\xbf":
        raise ValueError("a byte order mark")

    def constant(name):
        raise ValueError(name)

    def finite(text):
        if math.isinf(float(text)):
            raise ValueError(text)
        return float(text)
    return json.loads(line, parse_constant=constant, parse_float=finite)


@settings(max_examples=300, deadline=None)
@given(_CLIENT_BYTES)
def test_a_client_frame_is_accepted_exactly_when_it_is_json_that_json_loads_reads(line):
    try:
        want = _json_loads_strict(line)
    except (ValueError, RecursionError):
        want = INVALID
    got = parse(line)
    assert (got is INVALID) == (want is INVALID)
    if got is not INVALID:
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def _response_key(msg):
    """What routing needs from a parsed frame: the id of a response, or None for no response."""
    if isinstance(msg, dict) and "method" not in msg and "id" in msg:
        return id_key(msg["id"])
    return None


_DECOYS = [None, "method", "later_id", "earlier_id", "escaped_method", "escaped_id", "error", "spaced"]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-10**18, 10**18), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)),
       _json, st.booleans(), st.sampled_from(_DECOYS))
def test_an_answer_routed_by_its_ends_is_sure_only_when_the_parse_agrees(mid, value, ts_order, decoy):
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    idj = json.dumps(mid, ensure_ascii=False)
    extra = {None: "", "method": ',"method":"x/y"', "later_id": "", "earlier_id": ',"id":"other"',
             "escaped_method": ',"\\u006dethod":"x/y"', "escaped_id": "", "error": ',"error":{"code":1}', "spaced": ""}[decoy]
    if ts_order:
        line = f'{{"result":{body}{extra},"jsonrpc":"2.0","id":{idj}}}'
    else:
        tail = {"later_id": ',"id":"other"', "escaped_id": ',"\\u0069d":"other"'}.get(decoy, extra)
        line = f'{{"jsonrpc":"2.0","id":{idj},"result":{body}{tail}}}'
    if decoy == "spaced":
        line += " \r"
    raw = line.encode()
    frame = parse_lenient(raw)
    full = json.loads(raw)
    if isinstance(frame, LazyFrame):
        assert frame.member("id") == mid  # what the ends say, always the id routing starts from
        if frame.sure():
            assert _response_key(full) == id_key(response_id(frame)) == id_key(mid)
            assert "method" not in full
            if decoy not in ("earlier_id", "error"):  # no other member beside the result: its span is exact
                assert frame.result() == full["result"]
    misleading = _response_key(full) != id_key(mid)  # a request with a result, or a later id
    assert misleading == (decoy in ("method", "escaped_method") or (not ts_order and decoy in ("later_id", "escaped_id", "earlier_id")))
    if misleading:
        assert not (isinstance(frame, LazyFrame) and frame.sure())  # the full parse decides these


@pytest.mark.parametrize(("ts_order", "decoy"), [
    (True, None), (True, "method"), (True, "escaped_method"),
    (False, None), (False, "method"), (False, "later_id"), (False, "escaped_id")])
def test_an_answer_over_1_mib_is_checked_for_decoys_like_a_small_one(ts_order, decoy):
    # adversarial review 9: a large frame was taken as sure by its two ends alone
    body = json.dumps({"content": [{"type": "text", "text": "x" * (LARGE + 10)}]}, separators=(",", ":"))
    extra = {"method": ',"method":"x/y"', "escaped_method": ',"\\u006dethod":"x/y"',
             "later_id": ',"id":"decoy"', "escaped_id": ',"\\u0069d":"decoy"'}.get(decoy, "")
    if ts_order:
        line = f'{{"result":{body}{extra},"jsonrpc":"2.0","id":7}}'
    else:
        line = f'{{"jsonrpc":"2.0","id":7,"result":{body}{extra}}}'
    raw = line.encode()
    frame = parse_lenient(raw)
    full = json.loads(raw)
    assert isinstance(frame, LazyFrame) and frame.member("id") == 7  # routed by its ends first
    assert (_response_key(full) != id_key(7)) == (decoy is not None)
    assert frame.sure() == (decoy is None)
    again = reread(raw)  # the envelope reader: the real members, the result not built
    assert isinstance(again, LazyFrame) and again.sure()
    rid = response_id(again)
    assert _response_key(full) == (None if rid is NOT_RESPONSE else id_key(rid))


def test_ids_are_keyed_as_a_javascript_server_answers_them():
    assert id_key(5) == id_key(5.0) == id_key(-0.0 + 5)
    assert id_key(0) == id_key(-0.0)
    assert id_key(2**53 + 1) == id_key(2**53) == id_key(float(2**53))  # rounded, as JSON.parse reads it
    assert id_key(2**53 - 1) != id_key(2**53 - 2)
    assert len({id_key(True), id_key(1), id_key("1"), id_key(None), id_key(1.5), id_key(10**400)}) == 6


def test_batch_items_reads_each_element_and_never_raises():
    """framing.batch_items (adversarial review 15, F3/F4): the elements of an array json.loads
    refused, each parsed, or its envelope when json.loads refuses it; None for what is no array."""
    from synartesis.proxy.framing import LazyFrame, batch_items
    big = b"9" * 5000
    items = batch_items(b' [ {"id":1,"method":"ping"} , {"id":2,"result":{"n":' + big + b'}},3,"x" ] \n')
    assert items[0] == {"id": 1, "method": "ping"} and items[2:] == [3, "x"]
    assert isinstance(items[1], LazyFrame) and items[1].response_id() == 2
    assert batch_items(b"[]") == []
    for bad in (b"", b"[", b"[1,", b'[{"id":1}', b"[1] 2", b"{}", b'["unterminated]', b"[}", b"\xff[1]"):
        assert batch_items(bad) is None, bad


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-10**12, 10**12), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)),
       _json, st.booleans(), st.sampled_from(["", " ", "\r\n "]))
def test_an_everyday_answers_members_come_from_its_result_span_as_its_ends_read_them(mid, value, ts_order, after):
    # the result span answer_frame finds with the id is kept, and the members are built from it
    # (not searched for again): the same spans as reading the frame's two ends, in that order
    from synartesis.proxy.framing import _answer_spans, answer_frame
    msg = {"result": value, "jsonrpc": "2.0", "id": mid} if ts_order else {"jsonrpc": "2.0", "id": mid, "result": value}
    line = (json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + after).encode()
    frame = answer_frame(line)
    found = _answer_spans(line)
    assert (frame is None) == (found is None)
    if frame is None:
        return
    assert not frame.has_error()
    assert frame.result_span() == found[1]["result"]
    assert list(frame.members.items()) == list(found[1].items())
    assert frame.result() == value and frame.member("jsonrpc") == "2.0" and frame.response_id() == mid
    a, b = frame.result_span()
    assert frame.result_size() == b - a and frame.result_digest()["sha256"] == hashlib.sha256(line[a:b]).hexdigest()


def test_a_frame_read_by_its_envelope_says_whether_it_has_an_error():
    frame = LazyFrame.scan(b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}}')
    assert frame.has_error() and frame.result_span() is None and frame.result_size() == 0
    frame = LazyFrame.scan(b'{"jsonrpc":"2.0","id":1,"result":{"a":1}}')
    assert not frame.has_error() and frame.line[slice(*frame.result_span())] == b'{"a":1}'


@pytest.mark.parametrize(("extra", "sure"), [
    (',"\\u006Dethod":"x/y"', False), (',"m\\u0065thod":"x/y"', False),  # an ASCII key spelled escaped
    (',"note":"\\u4e2d\\u2028\\ud83d\\ude00"', True)])  # escapes of what no key that matters holds
def test_only_an_escape_that_can_spell_an_ascii_key_makes_an_answer_unsure(extra, sure):
    # JSON spells an escaped ASCII character only as \u00XX: sure() looks for those four bytes
    body = json.dumps({"content": [{"type": "text", "text": "x" * 2000}]}, separators=(",", ":"))
    raw = f'{{"result":{body}{extra},"jsonrpc":"2.0","id":7}}'.encode()
    frame = parse_lenient(raw)
    assert isinstance(frame, LazyFrame) and frame.sure() == sure
    assert ("method" not in json.loads(raw)) == sure


def test_a_digest_reads_an_escaped_iserror_after_a_sure_frame_said_no_ascii_escape():
    body = '{"content":[{"type":"text","text":"' + "d" * 2000 + '"}],"\\u0069sError":true}'
    frame = parse_lenient(f'{{"result":{body},"jsonrpc":"2.0","id":3}}'.encode())
    assert isinstance(frame, LazyFrame) and not frame.sure()  # the escape makes it unsure; reread reads it
    plain = parse_lenient(('{"result":{"content":[{"type":"text","text":"' + "\\u4e2d" * 400 + '"}],"isError":true},'
                           '"jsonrpc":"2.0","id":3}').encode())
    assert plain.sure() and plain.result_digest().get("isError") is True
