"""Server-sent events, parsed from bytes as they arrive (WHATWG HTML §9.2 "event stream").

Why our own parser: frames must reach the client as the server sent them (byte transparency),
and an answer can be tens of MB, so the parser works on bytes, never decodes, and costs linear
time in the size of an event however it is chunked.

Rules kept from the standard: lines end in CRLF, LF or CR; a line starting with ``:`` is a
comment; ``field: value`` drops one space after the colon; ``data`` lines of one event are
joined with LF; ``id`` without NUL sets the last event id (kept even when the event has no
data: MCP's "priming" events are exactly that); ``retry`` with only digits sets the
reconnection delay; a blank line dispatches; an event with no data is not dispatched.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Event", "SSEParser"]


@dataclass(frozen=True)
class Event:
    """One dispatched event: its type (``message`` by default), data bytes and id (or None)."""

    event: str
    data: bytes
    id: str | None


class SSEParser:
    """Incremental parser: :meth:`feed` chunks, get the events completed so far.

    Attributes:
        last_event_id: the last ``id`` field seen (None until one is), for ``Last-Event-ID``.
        retry_ms: the last ``retry`` field (milliseconds), or None.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0
        self._data: list[bytes] = []
        self._event = ""
        self._cr_pending = False  # the previous chunk ended with CR: a following LF belongs to it
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        """Add ``chunk``; return the events it completed, in order."""
        if self._cr_pending and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._cr_pending = False
        buf = self._buf
        buf += chunk
        events: list[Event] = []
        start = 0
        pos = self._scan
        n = len(buf)
        while True:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else n)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == n:
                    self._cr_pending = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            ev = self._line(bytes(buf[start:end]))
            if ev is not None:
                events.append(ev)
            start = pos = nxt
        if start:
            del buf[:start]
        self._scan = len(buf)
        return events

    def _line(self, line: bytes) -> Event | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return Event(event or "message", data[0] if len(data) == 1 else b"\n".join(data), self.last_event_id)
