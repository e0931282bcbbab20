"""An SSE stream whose client stops reading does not hold memory without bound (adversarial
review 30, left open there): frames for a GET or POST stream queued while the client's socket
is full were kept in an unbounded queue. Past ``_STREAM_BYTES`` unread, the stream is ended,
what it held is dropped, and later frames go where a closed stream's go (the GET backlog, itself
bounded). The journal holds every answer whatever happens to the stream."""

from __future__ import annotations

import asyncio
import json

from synartesis.serve import app as serve_app
from synartesis.serve.app import ServeApp, ServeConfig, _Session, _Stream

_NOTE = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "x" * 1000}}).encode()


def test_a_stream_nobody_reads_is_ended_past_its_bound(monkeypatch, capsys):
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)

    async def scenario():
        stream = _Stream("get")
        for _ in range(500):  # 500 kB for a client that reads nothing
            stream.put(_NOTE)
        return stream

    stream = asyncio.run(scenario())
    assert not stream.open
    assert stream.queue.qsize() == 1 and stream.queue.get_nowait() == (None, True)
    assert stream.queued_bytes == 0
    assert "not reading" in capsys.readouterr().err


def test_a_reader_that_keeps_up_is_never_cut(monkeypatch):
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)

    async def scenario():
        stream = _Stream("get")
        for _ in range(500):  # 500 kB in all, but never more than one frame waiting
            stream.put(_NOTE)
            frame, _last = stream.queue.get_nowait()
            stream.taken(frame)
        return stream

    stream = asyncio.run(scenario())
    assert stream.open and stream.queued_bytes == 0


def test_frames_after_an_ended_get_stream_wait_in_the_bounded_backlog(monkeypatch):
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)
    app = ServeApp(ServeConfig(token="t" * 43, servers=["kv"]), backend=None)
    session = _Session("s", "kv")

    async def scenario():
        session.get = _Stream("get")
        for _ in range(300):
            app._route(session, _NOTE)

    asyncio.run(scenario())
    assert not session.get.open
    assert session.backlog, "frames after the stream ended wait for the next GET"
    assert session.backlog_bytes <= serve_app._BACKLOG_BYTES


def test_one_answer_bigger_than_the_bound_reaches_a_reader_that_keeps_up(monkeypatch, capsys):
    # the bound is on what waits unread, not on one frame: a 70 MB file read answered to a
    # POST whose client reads was dropped and the stream ended "not reading" (review 31b)
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "x" * 150_000}]}}).encode()

    async def scenario():
        stream = _Stream("post", ids=[1])
        stream.put(big, last=True)
        return stream

    stream = asyncio.run(scenario())
    assert stream.open
    assert stream.queue.get_nowait() == (big, True)
    assert "not reading" not in capsys.readouterr().err


def test_a_frame_queued_behind_an_unread_one_still_ends_the_stream_past_the_bound(monkeypatch):
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)
    big = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 150_000 + b'"}}'

    async def scenario():
        stream = _Stream("get")
        stream.put(_NOTE)  # not read
        stream.put(big)
        return stream

    stream = asyncio.run(scenario())
    assert not stream.open and stream.queue.get_nowait() == (None, True)


def test_a_stream_ended_while_its_write_is_stuck_lets_the_post_go(monkeypatch):
    # the client stopped reading: the pump waits in send (uvicorn waits for the socket to
    # drain) and never got to the end the overflow queued, so the POST stayed in the session's
    # posts (busy: never closed as idle, its --max-sessions slot held) and its pending answers
    # went to the ended stream (dropped) instead of the GET stream (adversarial review 31b)
    monkeypatch.setattr(serve_app, "_STREAM_BYTES", 100_000)
    app = ServeApp(ServeConfig(token="t" * 43, servers=["kv"]), backend=None)
    stuck = asyncio.Event()
    sent: list[dict] = []

    async def send(message):
        sent.append(message)
        if len(sent) >= 1:
            stuck.set()
            await asyncio.Event().wait()  # the socket never drains

    async def receive():
        await asyncio.Event().wait()  # the client never disconnects either

    async def scenario():
        stream = _Stream("post")
        pump = asyncio.ensure_future(app._pump(send, receive, stream))
        stream.put(_NOTE)
        await stuck.wait()
        for _ in range(500):
            stream.put(_NOTE)
        assert not stream.open
        await asyncio.wait_for(pump, 10)  # a deadline, not a timing: it returns once cut

    asyncio.run(scenario())
