"""Newline framing and cheap routing of JSON-RPC frames (standard library only).

- :class:`LineSplitter` cuts a byte stream into frames with no length limit, in linear time;
  a frame that arrived in one read is returned as a ``bytes`` slice, a frame that spanned many
  reads as the ``bytearray`` it was gathered in (never copied once more: a 50 MB answer is
  held once).
- :func:`parse` is how every frame is read: strict UTF-8 JSON, or ``None``.
- :class:`LazyFrame` stands in for the parsed value of a server frame that a byte pump should
  not parse: a frame over :data:`LARGE` bytes (its envelope, ``id``, ``method``, whether it
  is an error, is found by skipping over the values without building them: parsing a 50 MB
  line costs about 150 MB, skipping costs nothing but the line), and the everyday answer
  ``{"result":…,"jsonrpc":"2.0","id":N}`` (TypeScript SDK order) or
  ``{"jsonrpc":"2.0","id":N,"result":…}`` (Python SDK order), recognised by its two ends. The
  whole value is parsed only when someone needs it (:meth:`LazyFrame.parse`), and a result's
  size, SHA-256 and preview come straight from its bytes (:meth:`LazyFrame.result_digest`).
"""

from __future__ import annotations

import json
import os
import re
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["INVALID", "LARGE", "NOT_RESPONSE", "LazyFrame", "LineSplitter", "answer_frame", "batch_items", "dump", "id_key",
           "parse", "parse_lenient", "with_id",
           "parse_lenient_small", "read_frames", "refusal", "reread", "response_id", "unreadable", "write_frame"]

#: frames above this many bytes are routed by their envelope and parsed only on demand
LARGE = 1 << 20
#: characters of a digested result kept as its preview
PREVIEW = 200


class LineSplitter:
    """Incremental newline framing: no length limit, linear cost, no extra copy of big lines."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf: bytearray | None = None  # an unfinished frame

    def feed(self, data: bytes) -> list:
        """Add ``data``; return the complete frames (without their newline) now available.

        Frames are ``bytes`` or ``bytearray`` (both bytes-like: ``len``, slicing, ``json.loads``,
        ``os.write`` and comparison with ``bytes`` all work on either).
        """
        nl = data.find(b"\n")
        if nl < 0:
            if data:
                if self._buf is None:
                    self._buf = bytearray(data)
                else:
                    self._buf += data
            return []
        if self._buf is None:
            if nl == len(data) - 1:  # the common case: exactly one whole frame
                return [data[:nl]]
            frames = data.split(b"\n")
        else:
            head = self._buf
            head += data[:nl]
            frames = data[nl + 1:].split(b"\n")
            frames.insert(0, head)
            self._buf = None
        rest = frames.pop()
        if rest:
            self._buf = bytearray(rest)
        return frames

    def rest(self) -> bytes:
        """What is left after EOF (a final frame without a newline), and forget it."""
        rest, self._buf = self._buf, None
        return bytes(rest) if rest else b""


def dump(msg: Any) -> bytes:
    """A message as a compact JSON frame. Valid UTF-8 always: a lone surrogate (which
    ``surrogatepass`` would turn into bytes no peer can decode) is sent as its ``\\u`` escape."""
    text = json.dumps(msg, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(msg, separators=(",", ":")).encode("ascii")


def id_key(value: Any) -> str:
    """A JSON-RPC id as a dictionary key. Numbers compare as the server will answer them:
    ``1`` and ``1.0`` are one id, and integers beyond 2**53 as a JavaScript server rounds them."""
    if value.__class__ is int and -_EXACT < value < _EXACT:  # the everyday id: no float repr
        return "n:" + str(value)
    if isinstance(value, str):
        return "s:" + value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return "n:" + str(value)
        if number.is_integer() and -_EXACT < number < _EXACT:
            return "n:" + str(int(number))  # 5.0 is the id 5
        return "n:" + repr(number)
    return json.dumps(value, sort_keys=True)


_EXACT = 1 << 53  # integers below this are exact as JavaScript numbers


def read_frames(fd: int, on_frame: Any, chunk: int = 1 << 16) -> None:
    """Read ``fd`` until EOF (or an error), calling ``on_frame(frame)`` for every frame in order,
    the last one even without its newline."""
    splitter = LineSplitter()
    while True:
        try:
            data = os.read(fd, chunk)
        except OSError:
            break
        if not data:
            break
        for line in splitter.feed(data):
            on_frame(line)
    rest = splitter.rest()
    if rest.strip():
        on_frame(rest)


def write_frame(fd: int, line: Any) -> None:
    """Write one frame and its newline to ``fd`` (blocking), without copying a big frame.

    Raises:
        OSError: the reader went away (``BrokenPipeError``) or the descriptor is closed.
    """
    if len(line) < 1 << 16:
        data = line + b"\n"
        n = os.write(fd, data)
        if n < len(data):
            rest = memoryview(data)[n:]
            while rest:
                rest = rest[os.write(fd, rest):]
        return
    parts = [memoryview(line), memoryview(b"\n")]
    while parts:
        n = os.writev(fd, parts)
        while parts and n >= len(parts[0]):
            n -= len(parts[0])
            parts.pop(0)
        if parts and n:
            parts[0] = parts[0][n:]


def parse(line: Any) -> Any:
    """A frame parsed strictly (UTF-8 JSON); :data:`INVALID` when it is not.

    Used for client frames: what cannot be read is never forwarded. What ``json.loads(line)``
    accepts, less what is not JSON (RFC 8259) and a JavaScript server drops: ``NaN``,
    ``Infinity``, a number too large for a double (``1e400``), and a leading byte order mark
    (adversarial review 16, F7: such a call was journalled, forwarded, dropped by the server and
    waited out its call timeout as ``unknown``), and an object that repeats a member name
    (:func:`_unique`; RFC 8259 §4 leaves which one counts to the reader). A frame that opens with ``{`` (every request)
    skips the encoding detection and its layers of calls.
    """
    try:
        if line[:1] == b"{" and line[1:2] != b"\x00":  # not UTF-16/32 (json.loads detects those)
            text = line.decode("utf-8", "surrogatepass")  # as json.loads decodes bytes
            value, end = _scan(text, 0)
            if end != len(text) and text[end:].strip(" \t\n\r"):
                return _INVALID
            return value
        if line[:3] == b"\xef\xbb\xbf":
            return _INVALID
        return _STRICT.decode(bytes(line).decode(json.detect_encoding(line), "surrogatepass"))  # as json.loads
    except StopIteration:  # the scanner found no value where one must be
        return _INVALID
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return _INVALID


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (_INF, -_INF):
        raise ValueError(f"{text} is too large for a double")
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose names are unique, else ValueError: Python keeps a repeated name's last
    value, a server may keep its first, so what was journalled and gated could differ from
    what runs (adversarial review 18, F4: two ``arguments`` members). About 1 µs a frame."""
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("an object repeats a member name")
    return value


_INF = float("inf")
_STRICT = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite, object_pairs_hook=_unique)
_scan = _STRICT.scan_once


def _plain_value(token: Any) -> Any:
    """A JSON integer, or a string without escapes, read without :func:`json.loads` (how SDKs
    write ids); ``_UNREAD`` for anything else."""
    if token[:1] == b'"':
        if len(token) >= 2 and token[-1:] == b'"' and b"\\" not in token and b'"' not in token[1:-1]:
            try:
                text = bytes(token[1:-1]).decode("utf-8")
            except UnicodeDecodeError:
                return _UNREAD
            if text.isprintable() or not any(c < " " for c in text):  # JSON forbids raw control characters
                return text
        return _UNREAD
    digits = token[1:] if token[:1] == b"-" else token
    if digits.isdigit() and (digits[:1] != b"0" or len(digits) == 1) and len(digits) < 300:
        return int(token)
    return _UNREAD


_RESULT_FIRST = b'{"result":'
_TAIL = b',"jsonrpc":"2.0","id":'
_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT_KEY = b',"result":'


def _answer_spans(line: Any) -> tuple[Any, dict[str, tuple[int, int]]] | None:
    """``(id, member spans)`` of an everyday answer recognised by its two ends (the id as
    :func:`json.loads` reads it, taken only when it is an integer or a string without
    escapes); None when the frame has another shape. Nothing here makes sure the frame has
    no other members: :func:`answer_frame` does."""
    end = len(line)
    while end and line[end - 1] in _SPACE:
        end -= 1
    if end < 2 or line[end - 1] != 0x7D:
        return None
    if line.startswith(_RESULT_FIRST):
        cut = line.rfind(_TAIL, 0, end)
        if cut < 0:
            return None
        mid = _plain_value(line[cut + len(_TAIL):end - 1])
        if mid is _UNREAD:
            return None
        return mid, {"result": (len(_RESULT_FIRST), cut), "jsonrpc": (cut + 11, cut + 16),
                     "id": (cut + len(_TAIL), end - 1)}
    if line.startswith(_HEAD):
        comma = line.find(_RESULT_KEY, len(_HEAD), end)
        if comma < 0:
            return None
        mid = _plain_value(line[len(_HEAD):comma])
        if mid is _UNREAD:
            return None
        return mid, {"jsonrpc": (11, 16), "id": (len(_HEAD), comma), "result": (comma + 10, end - 1)}
    return None


def answer_frame(line: Any) -> LazyFrame | None:
    """An everyday answer routed by its id read from its two ends, without parsing it (see
    the module docstring); None when the frame has another shape.

    For valid JSON the ends say this much for certain: a frame that opens with a ``result``
    key and ends ``,"jsonrpc":"2.0","id":ID}`` is an object whose *last* ``id`` member is
    ``ID`` (the one every parser keeps when keys repeat). Whether it has no other members (a
    ``method``, a later ``id``) is :meth:`LazyFrame.sure`'s question, asked where the answer
    is used (README, design notes, "The answer's id without parsing it").
    """
    if line[-1:] == b"}":  # no whitespace after it: what every SDK writes
        if line.startswith(_RESULT_FIRST):
            cut = line.rfind(_TAIL)
            if cut < 0:
                return None
            token = line[cut + len(_TAIL):-1]
            result = (len(_RESULT_FIRST), cut)
        elif line.startswith(_HEAD):
            comma = line.find(_RESULT_KEY, len(_HEAD))
            if comma < 0:
                return None
            token = line[len(_HEAD):comma]
            result = (comma + len(_RESULT_KEY), len(line) - 1)
        else:
            return None
        if token.isdigit() and len(token) < 300 and (token[0] != 0x30 or len(token) == 1):
            return LazyFrame(line, None, False, int(token), result)
        mid = _plain_value(token)
        return None if mid is _UNREAD else LazyFrame(line, None, False, mid, result)
    found = _answer_spans(line)
    if found is None:
        return None
    frame = LazyFrame(line, None, answer_id=found[0])
    frame._members = found[1]  # read once (whitespace after the frame: its ends are not where answer_frame looks)
    return frame


def parse_lenient(line: Any) -> Any:
    """A server frame parsed for routing: invalid UTF-8 is replaced (the bytes are forwarded as
    they are anyway); None when it is not JSON. Frames over :data:`LARGE` and everyday answers
    give a :class:`LazyFrame` (large ones None when their envelope is not an object or array)."""
    lazy = answer_frame(line)
    if lazy is not None:
        return lazy
    if len(line) > LARGE:
        return LazyFrame.scan(line)
    msg = parse_lenient_small(line)
    return msg if msg is not None else LazyFrame.scan(line)  # see unreadable()


def reread(line: Any) -> Any:
    """A server frame read exactly, for when its two ends are not sure
    (:meth:`LazyFrame.sure`): a frame over :data:`LARGE` bytes by the envelope reader (a
    :class:`LazyFrame` of its real members, or None; a 50 MB answer is not built), a smaller
    one parsed in full (:func:`parse_lenient_small`)."""
    if len(line) > LARGE:
        return LazyFrame.scan(line)
    msg = parse_lenient_small(line)
    return msg if msg is not None else LazyFrame.scan(line)  # see unreadable()


def unreadable(line: Any) -> LazyFrame | None:
    """A frame ``json.loads`` refused although its envelope is JSON: read by the envelope
    reader, as a frame over :data:`LARGE` is, so it is routed by its ``id``; None when the
    envelope is not JSON either. JSON sets no limit that CPython's reader has: an int of over
    4,300 digits (its int-string limit), nesting past its recursion limit. A JavaScript client
    or server reads both, so such a frame is a real answer (adversarial review 14: an answer
    routed as nothing left the lane waiting for it until the call timeout)."""
    return LazyFrame.scan(line)


def batch_items(line: Any, strict: bool = True) -> list | None:
    """The elements of a JSON array frame that ``json.loads`` refused as a whole (an element
    holds an int of over 4,300 digits, or nests too deep): each parsed when it can be
    (``strict``: as :func:`parse` reads a client frame; else as :func:`parse_lenient_small`
    reads a server's), else a :class:`LazyFrame` of its envelope (:func:`unreadable`), else
    None. None when ``line`` is not an array whose elements can be told apart (adversarial
    review 15, F3/F4: such a batch was routed as nothing)."""
    try:
        pos = _RE.ws.match(line, 0).end()
        if line[pos:pos + 1] != b"[":
            return None
        pos += 1
        items: list = []
        while True:
            pos = _RE.ws.match(line, pos).end()
            c = line[pos]
            if c == 0x5D:  # ]
                return items if not bytes(line[pos + 1:]).strip(b" \t\n\r") else None
            if c == 0x2C:  # ,
                pos += 1
                continue
            end = _skip(line, pos)
            chunk = bytes(line[pos:end])
            value = parse(chunk) if strict else parse_lenient_small(chunk)
            if value is _INVALID or value is None:
                value = LazyFrame.scan(chunk)
            items.append(value)
            pos = end
    except (_Skip, _TooBig, ValueError, IndexError, RecursionError):
        return None


def with_id(frame: LazyFrame, new_id: Any) -> bytes:
    """``frame``'s bytes with its ``id`` member's value replaced by ``new_id`` (a frame
    ``json.loads`` will not read cannot be rebuilt from a parsed value)."""
    a, b = frame.members["id"]
    line = bytes(frame.line)
    return line[:a] + dump(new_id) + line[b:]


_READ_REFUSED = ("Parse error: synartesis could not read this {what} (it is not valid JSON, or JSON that Python's "
                 "reader refuses: a number of over 4,300 digits, nesting too deep, or an object that repeats a name), so {sent} sent to the server")


def refusal(line: Any) -> Any:
    """The JSON-RPC error for a client frame :func:`parse` refused. Under the request's own
    ``id`` when its envelope names one (a request that is valid JSON Python's reader refuses,
    :func:`unreadable`, or one broken inside its params), so the client's request is answered
    and not left waiting; otherwise ``id`` null, as JSON-RPC has it for a parse error. A batch
    is answered with a batch: an error under each request's id, none of it sent (adversarial
    review 15, F4: it was answered once with id null). Only a frame that is valid UTF-8 is
    looked into (adversarial review 14, F4)."""
    frame = None
    try:
        bytes(line).decode("utf-8")
        frame = LazyFrame.scan(line)
    except (UnicodeDecodeError, ValueError):
        pass
    if frame is not None and frame.is_batch:
        errors = []
        for item in batch_items(line) or ():
            mid = item.get("id") if isinstance(item, dict) and "method" in item else \
                item.member("id") if isinstance(item, LazyFrame) and not item.is_batch and "method" in item else None
            if mid.__class__ in (int, str) or (mid.__class__ is float and mid - mid == 0):  # finite
                errors.append({"jsonrpc": "2.0", "id": mid, "error": {"code": -32700, "message": _READ_REFUSED.format(
                    what="batch", sent="none of it was")}})
        if errors:
            return errors
    mid = frame.member("id") if frame is not None and not frame.is_batch and "method" in frame else None
    if mid.__class__ in (int, str):
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32700, "message": _READ_REFUSED.format(
            what="request", sent="it was not")}}
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700,
                                                   "message": "Parse error: synartesis forwards only valid UTF-8 JSON"}}


class _Invalid:
    def __repr__(self) -> str:
        return "<not JSON>"


_INVALID = _Invalid()
INVALID = _INVALID
_UNREAD = _Invalid()  # a member not read yet
#: what :meth:`LazyFrame.response_id` and :func:`response_id` give a frame that is no response
NOT_RESPONSE = _Invalid()


def response_id(msg: Any) -> Any:
    """The ``id`` of a server frame's parsed value (a dict or a :class:`LazyFrame`) when it is
    a response (an ``id``, no ``method``), else :data:`NOT_RESPONSE`."""
    if msg.__class__ is LazyFrame:
        return msg.response_id()
    if isinstance(msg, dict) and "method" not in msg:
        return msg.get("id", NOT_RESPONSE)
    return NOT_RESPONSE

# -- reading an envelope without building the values ------------------------------------
# Strings are skipped with bytes.find (memchr speed; a file's text has no unescaped quote), and
# with a possessive regex once a string shows many escaped quotes (JSON inside a text block).
class _Patterns:
    """The envelope reader's regular expressions, compiled when it first runs (not at import:
    most sessions never see a frame it is needed for)."""

    def __getattr__(self, name: str) -> Any:
        compiled = {"ws": re.compile(rb"[ \t\n\r]*"),
                    "string_rest": re.compile(rb'(?:[^"\\]++|\\.)*+"', re.S),
                    "scalar": re.compile(rb"-?[0-9][0-9.eE+-]*|true|false|null"),
                    "to_struct": re.compile(rb'[^"\[\]{}]*')}
        self.__dict__.update(compiled)
        return compiled[name]


_RE = _Patterns()
_BACKSLASH, _QUOTE = 0x5C, 0x22
_OPEN, _CLOSE = (0x7B, 0x5B), (0x7D, 0x5D)  # { [   } ]
_SPACE = (0x20, 0x09, 0x0A, 0x0D)


class _Skip(ValueError):
    """The bytes are not the JSON this reader expected."""


class _TooBig(Exception):
    """A value needs more work than the budget allows (the envelope reader goes round it)."""


def _string_end(buf: Any, pos: int, limit: int | None = None) -> int:
    """``buf[pos]`` is an opening quote; the index just after its closing quote.
    ``limit``: give up (:class:`_TooBig`) when the string runs past this index."""
    i = pos + 1
    escaped = 0
    while True:
        q = buf.find(b'"', i) if limit is None else buf.find(b'"', i, limit)
        if q < 0:
            if limit is not None and limit < len(buf):
                raise _TooBig
            raise _Skip("unterminated string")
        k = q - 1
        while buf[k] == _BACKSLASH:
            k -= 1
        if (q - 1 - k) % 2 == 0:
            return q + 1
        i = q + 1
        escaped += 1
        if escaped > 64:
            if limit is not None:
                raise _TooBig
            m = _RE.string_rest.match(buf, i)
            if m is None:
                raise _Skip("unterminated string")
            return m.end()


def _skip(buf: Any, pos: int, budget: int | None = None) -> int:
    """The end of the JSON value starting at ``pos`` (no leading whitespace), without building
    it. Lenient inside containers (commas and colons are not checked): it only has to find
    where a value ends. ``budget``: give up (:class:`_TooBig`) after that many bytes."""
    limit = None if budget is None else pos + budget
    c = buf[pos]
    if c == _QUOTE:
        return _string_end(buf, pos, limit)
    if c in _OPEN:
        depth = 0
        n = len(buf)
        while pos < n:
            ch = buf[pos]
            if ch == _QUOTE:
                pos = _string_end(buf, pos, limit)
            elif ch in _OPEN:
                depth += 1
                pos += 1
            elif ch in _CLOSE:
                depth -= 1
                pos += 1
                if depth == 0:
                    return pos
            else:
                pos = _RE.to_struct.match(buf, pos, n if limit is None else min(n, limit + 1)).end()
            if limit is not None and pos > limit:
                raise _TooBig
        raise _Skip("unterminated container")
    m = _RE.scalar.match(buf, pos)
    if m is None:
        raise _Skip("not a JSON value")
    return m.end()


def _back_ws(buf: Any, i: int) -> int:
    """The index of the last non-whitespace byte at or before ``i``."""
    while i >= 0 and buf[i] in _SPACE:
        i -= 1
    return i


def _back_string_start(buf: Any, close: int, floor: int) -> int:
    """``buf[close]`` is a closing quote; the index of its opening quote. Going backwards, the
    first quote not escaped by an odd run of backslashes opens the string."""
    i = close
    while True:
        q = buf.rfind(b'"', floor, i)
        if q < 0:
            raise _Skip("no opening quote")
        k = q - 1
        while k >= floor and buf[k] == _BACKSLASH:
            k -= 1
        if (q - 1 - k) % 2 == 0:
            return q
        i = q


def _back_container_start(buf: Any, close: int, floor: int, budget: int) -> int:
    """``buf[close]`` closes a container; the index of the bracket that opens it, found going
    backwards within ``budget`` bytes (:class:`_TooBig` beyond)."""
    depth = 0
    i = close
    stop = max(floor, close - budget)
    while i >= stop:
        c = buf[i]
        if c == _QUOTE:
            i = _back_string_start(buf, i, floor) - 1
            continue
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            depth -= 1
            if depth == 0:
                return i
        i -= 1
    raise _TooBig


def _members(buf: Any, start: int = 0, stop: int | None = None,
             strict: bool = True) -> dict[str, tuple[int, int]] | None:
    """Top-level members of the object in ``buf[start:stop]``: ``{key: (value_start, value_end)}``.

    None when it is not an object. Small members are read from the front; the first value too
    big to skip cheaply (a ``result``, ``params`` or ``error``) is gone round: the members after
    it are read from the back, and what lies between is that one value. A JSON-RPC envelope
    has one such container, so this is exact for every frame the protocol allows. With
    ``strict`` False the value gone round may be several members (only the ones read from the
    front and the back are certain).
    """
    stop = len(buf) if stop is None else stop
    pos = _RE.ws.match(buf, start).end()
    last = _back_ws(buf, stop - 1)
    if pos >= stop or buf[pos] != 0x7B or last <= pos or buf[last] != 0x7D:
        return None
    members: dict[str, tuple[int, int]] = {}
    pos += 1
    while True:
        pos = _RE.ws.match(buf, pos).end()
        c = buf[pos]
        if c == 0x7D:
            if pos != last:
                raise _Skip("text after the object")
            return members
        if c == 0x2C:  # ,
            pos += 1
            continue
        if c != _QUOTE:
            raise _Skip("expected a key")
        kend = _string_end(buf, pos)
        key = json.loads(buf[pos:kend])
        pos = _RE.ws.match(buf, kend).end()
        if buf[pos] != 0x3A:  # :
            raise _Skip("expected a colon")
        vstart = _RE.ws.match(buf, pos + 1).end()
        try:
            vend = _skip(buf, vstart, budget=1 << 16)
        except _TooBig:
            break
        members[key] = (vstart, vend)
        pos = vend
    big_key, big_start = key, vstart
    tail: dict[str, tuple[int, int]] = {}
    p = last  # the object's closing brace
    while True:
        e = _back_ws(buf, p - 1)
        if e <= big_start:
            raise _Skip("malformed object")
        c = buf[e]
        if c in _CLOSE:
            try:  # a small container (an error object, an odd id) is read from the back too
                vs = _back_container_start(buf, e, big_start + 1, 1 << 16)
            except _TooBig:  # the value gone round ends here
                pairs = {0x7D: 0x7B, 0x5D: 0x5B}
                if strict and buf[big_start] != pairs[c]:
                    raise _Skip("mismatched container") from None
                members[big_key] = (big_start, e + 1)
                members.update(tail)
                return members
        elif c == _QUOTE:
            vs = _back_string_start(buf, e, big_start + 1)
        else:
            vs = e
            while vs > big_start and buf[vs - 1] not in _SPACE and buf[vs - 1] not in (0x3A, 0x2C):
                vs -= 1
        colon = _back_ws(buf, vs - 1)
        if buf[colon] != 0x3A:
            raise _Skip("expected a colon")
        kclose = _back_ws(buf, colon - 1)
        if buf[kclose] != _QUOTE:
            raise _Skip("expected a key")
        ks = _back_string_start(buf, kclose, big_start + 1)
        tail[json.loads(buf[ks:kclose + 1])] = (vs, e + 1)
        comma = _back_ws(buf, ks - 1)
        if buf[comma] != 0x2C:
            raise _Skip("expected a comma")
        p = comma


_sha256: Any = None  # hashlib.sha256, imported when first used


class LazyFrame:
    """A frame routed by its envelope and parsed only on demand (see the module docstring).

    Attributes:
        line: the frame's bytes.
        members: top-level member spans (empty for a batch); for an everyday answer
            (:func:`answer_frame`) found only when first asked for.
        is_batch: the frame is a JSON array.
    """

    __slots__ = ("_id", "_members", "_result", "_sure", "_unescaped", "is_batch", "line")

    def __init__(self, line: Any, members: dict[str, tuple[int, int]] | None, is_batch: bool = False,
                 answer_id: Any = _UNREAD, result: tuple[int, int] | None = None) -> None:
        self.line = line
        self._members = members
        self.is_batch = is_batch
        self._id: Any = answer_id
        # an everyday answer's result span, found by answer_frame with its id: its members are
        # that, "jsonrpc" and "id", built from it when first asked for (no second search)
        self._result = result
        self._sure: bool | None = None if members is None else True
        self._unescaped = False  # sure() searched the whole frame and found no \u00 escape

    def sure(self) -> bool:
        """Whether the routing read without parsing is certain (for valid JSON): that the frame
        is a response (no ``method``), and its ``id``.

        Always for a frame read by the envelope reader. An everyday answer, of any size, is
        sure when no ``"method"`` can be a key in it (a request carrying a result is no
        answer), no ``"id"`` can follow the result of one in ``{"jsonrpc","id","result"}``
        order (a later id would be the one parsers keep), and nothing in it is spelled with a
        ``\\u00`` escape (a key can be: the keys that matter, ``method``, ``id``, ``result``,
        ``error``, ``isError``, are ASCII, and JSON spells an ASCII character escaped only as
        ``\\u00XX``; searching for the four bytes skips ahead further than for ``\\u``, about
        a third fewer instructions). Searches at memchr speed: a sixth of what ``json.loads``
        costs, a few milliseconds for 50 MB; asked once per frame. A frame that is not sure
        is read again with :func:`reread`.
        """
        sure = self._sure
        if sure is None:
            line = self.line
            sure = not (
                line.find(b'"method"') >= 0 or line.find(b"\\u00") >= 0
                or (line.startswith(_HEAD) and line.find(b'"id"', self.result_span()[0]) >= 0))
            self._sure = self._unescaped = sure
        return sure

    @property
    def members(self) -> dict[str, tuple[int, int]]:
        members = self._members
        if members is None:
            span = self._result
            if span is None:
                found = _answer_spans(self.line)
                members = found[1] if found is not None else {}
            elif span[0] == len(_RESULT_FIRST):  # {"result":…,"jsonrpc":"2.0","id":ID}, as _answer_spans reads it
                cut = span[1]
                members = {"result": span, "jsonrpc": (cut + 11, cut + 16), "id": (cut + len(_TAIL), len(self.line) - 1)}
            else:  # {"jsonrpc":"2.0","id":ID,"result":…}
                members = {"jsonrpc": (11, 16), "id": (len(_HEAD), span[0] - len(_RESULT_KEY)), "result": span}
            self._members = members
        return members

    def has_error(self) -> bool:
        """Whether the frame has a top-level ``error`` member (an everyday answer, known by its
        ``result`` and ``id`` at its two ends, has none)."""
        return self._result is None and "error" in self.members

    def result_span(self) -> tuple[int, int] | None:
        """``(start, end)`` of the ``result`` member's bytes; None without one."""
        span = self._result
        return span if span is not None else self.members.get("result")

    @classmethod
    def scan(cls, line: Any) -> LazyFrame | None:
        """Read the envelope of ``line``; None when it is not a JSON object or array."""
        try:
            members = _members(line)
        except (_Skip, ValueError, IndexError, RecursionError):
            return None
        if members is None:
            start = _RE.ws.match(line, 0).end()
            last = _back_ws(line, len(line) - 1)
            if line[start:start + 1] == b"[" and last > start and line[last] == 0x5D:
                return cls(line, {}, is_batch=True)
            return None
        return cls(line, members)

    def response_id(self) -> Any:
        """The ``id`` when the frame is a response (an ``id`` and no ``method``), else
        :data:`NOT_RESPONSE`; an everyday answer knows it without reading its members."""
        if self._members is None and self._id is not _UNREAD:
            return self._id
        members = self.members
        if "method" in members or "id" not in members:
            return NOT_RESPONSE
        return self.member("id")

    def member(self, key: str, default: Any = None) -> Any:
        """The parsed value of one top-level member (meant for the small ones: id, method).
        The ``id`` is parsed once per frame (the upstream's reader and the engine both ask)."""
        if key == "id" and self._id is not _UNREAD:
            return self._id
        span = self.members.get(key)
        if span is None:
            value = default
        else:
            token = self.line[span[0]:span[1]]
            value = _plain_value(token)
            if value is _UNREAD:
                try:
                    value = json.loads(token)
                except UnicodeDecodeError:  # read with the bytes replaced, as parse_lenient reads a frame
                    try:
                        value = json.loads(bytes(token).decode("utf-8", "replace"))
                    except (ValueError, RecursionError):
                        value = default
                except (ValueError, RecursionError):  # not JSON, too deep, or an int json.loads refuses
                    value = default
        if key == "id" and default is None:
            self._id = value
        return value

    def __contains__(self, key: str) -> bool:
        return key in self.members

    def parse(self) -> Any:
        """The whole value (costs what ``json.loads`` costs); None when it does not parse."""
        return parse_lenient_small(self.line)

    def readable(self) -> Any:
        """:meth:`parse`, or for a frame ``json.loads`` will not read (:func:`unreadable`) an
        envelope of what can be known without it: ``jsonrpc`` and ``id``, ``error`` (parsed
        when it can be) or ``result`` as its digest (:meth:`result_digest`, ``isError``
        included). None for a batch or a frame with neither."""
        value = self.parse()
        if value is not None or self.is_batch:
            return value
        out = {k: self.member(k) for k in ("jsonrpc", "id") if k in self}
        if "error" in self:
            out["error"] = self.member("error") or {"message": "an error synartesis could not read"}
        elif "result" in self:
            out["result"] = self.result_digest()
        else:
            return None
        return out

    def result(self) -> Any:
        """The parsed ``result`` member alone (None when absent or unreadable)."""
        return self.member("result")

    def result_size(self) -> int:
        """The byte length of the ``result`` member (0 when absent)."""
        span = self.result_span()
        return span[1] - span[0] if span else 0

    def result_digest(self) -> dict | None:
        """``{"synartesisDigest", "bytes", "sha256", "preview"}`` of the ``result`` member's own
        bytes (nothing is parsed), plus ``"isError": True`` when the result says so; None
        without a result."""
        span = self.result_span()
        if span is None:
            return None
        global _sha256
        if _sha256 is None:
            from hashlib import sha256 as _sha256  # not on the proxy's start-up path
        a, b = span
        head = self.line[a:min(b, a + PREVIEW)]
        if head.isascii():  # the first PREVIEW bytes are the first PREVIEW characters
            preview = head.decode("ascii")
        else:
            preview = bytes(self.line[a:min(b, a + PREVIEW * 4)]).decode("utf-8", "replace")[:PREVIEW]
        out: dict[str, Any] = {"synartesisDigest": True, "bytes": b - a,
                               "sha256": _sha256(memoryview(self.line)[a:b]).hexdigest(), "preview": preview}
        if self.line.find(b'"isError"', span[0], span[1]) < 0 and (
                self._unescaped or self.line.find(b"\\u00", span[0], span[1]) < 0):
            # unescaped, the key is spelled so wherever it is (memchr speed); only a \u escape
            # can spell it otherwise ("\u0069sError"), and then the result is parsed (sure()
            # has already looked for one in the whole frame when it was asked)
            error = False
        elif b - a <= 1 << 16 and (result := self.result()) is not None:
            # small enough to parse: json.loads beats walking it here (when it reads it at all:
            # an int of over 4,300 digits it refuses, and then the bytes are walked)
            error = isinstance(result, dict) and result.get("isError") is True
        else:
            error = self._result_is_error(span)
        if error:
            out["isError"] = True
        return out

    def _result_is_error(self, span: tuple[int, int]) -> bool:
        line = self.line
        try:
            inner = _members(line, *span, strict=False)
        except (_Skip, ValueError, IndexError, RecursionError):
            inner = None
        if inner is not None and "isError" in inner:
            a, b = inner["isError"]
            return line[a:b] == b"true"
        # isError may sit between two big members (content, structuredContent); an unescaped
        # "isError" key there is the only way it can, so look only then
        a, b = span
        if inner is not None:
            gone_round = [v for k, v in inner.items() if v[1] - v[0] > 1 << 16]
            if gone_round:
                a, b = gone_round[0]
        if line.find(b'"isError"', a, b) < 0:
            return False
        try:
            pos, members = span[0] + 1, {}
            while True:
                pos = _RE.ws.match(line, pos).end()
                c = line[pos]
                if c == 0x7D:
                    break
                if c == 0x2C:
                    pos += 1
                    continue
                kend = _string_end(line, pos)
                key = json.loads(line[pos:kend])
                pos = _RE.ws.match(line, kend).end() + 1
                pos = _RE.ws.match(line, pos).end()
                end = _skip(line, pos)
                members[key] = (pos, end)
                pos = end
        except (_Skip, ValueError, IndexError, RecursionError):
            return False
        if "isError" not in members:
            return False
        a, b = members["isError"]
        return line[a:b] == b"true"


def parse_lenient_small(line: Any) -> Any:
    """:func:`parse_lenient` without the large-frame shortcut (the full value, or None)."""
    try:
        return json.loads(line)
    except UnicodeDecodeError:
        try:
            return json.loads(bytes(line).decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return None
    except (ValueError, RecursionError):
        return None
