"""The SSE parser: every way a stream can be cut into chunks gives the same events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from synartesis.remote.sse import SSEParser

STREAM = (b": comment\r\nretry: 1500\r\n\r\nid: 7\r\ndata:\r\n\r\n"
          b"event: message\nid: 8\ndata: {\"a\":\ndata: 1}\n\n"
          b"data:{\"x\":\"\xc3\xa9\"}\r\rid: 9\rdata: last\r\r")


def events(parser: SSEParser, chunks: list[bytes]):
    out = []
    for c in chunks:
        out += parser.feed(c)
    return [(e.event, e.data, e.id) for e in out]


def test_fields_comments_priming_events_and_all_three_line_endings():
    p = SSEParser()
    got = events(p, [STREAM])
    assert got == [("message", b"", "7"), ("message", b'{"a":\n1}', "8"), ("message", b'{"x":"\xc3\xa9"}', "8"), ("message", b"last", "9")]
    assert p.retry_ms == 1500 and p.last_event_id == "9"


def test_an_id_without_data_is_remembered_and_an_empty_data_line_is_an_empty_event():
    p = SSEParser()
    assert p.feed(b"id: prime-1\n\n") == []
    assert p.last_event_id == "prime-1"
    [priming] = p.feed(b"id: prime-2\ndata:\n\n")  # MCP's priming event; the upstream skips empty data
    assert priming.data == b"" and p.last_event_id == "prime-2"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts):
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in zip(bounds, bounds[1:])]
    assert events(SSEParser(), chunks) == events(SSEParser(), [STREAM])


def test_a_huge_event_fed_byte_by_byte_in_large_pieces_stays_linear():
    body = b"data: " + b"x" * (4 << 20) + b"\n\n"
    p = SSEParser()
    out = []
    for i in range(0, len(body), 65536):
        out += p.feed(body[i:i + 65536])
    assert len(out) == 1 and len(out[0].data) == 4 << 20
