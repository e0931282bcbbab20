"""Canonical JSON: the one text every sameness comparison and hash is made over.

Keys sorted (code-point order), no insignificant whitespace, non-ASCII kept as UTF-8,
arrays in order. Two values are "the same" for synartesis iff their canonical texts are equal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical", "canonical_bytes", "same_state", "compact", "compact_ascii", "sha256_hex", "call_key", "MAX_DEPTH", "too_deep"]

# The deepest nesting synartesis journals. The journal, canonical JSON and the stdlib's JSON
# recurse once (or twice) per level under Python's 1,000-frame limit; real tool payloads nest a
# few dozen levels. Deeper values are refused with a sentence, never an "internal error".
MAX_DEPTH = 256


def canonical(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (a JSON-compatible Python value)."""
    return _encode(value)


def same_state(a: Any, b: Any, read: Any = None) -> bool:
    """Whether two observations of a resource are the same state: equal canonical texts, or,
    for a read whose policy says ``unordered: true`` (``read`` is the resolved read, a dict),
    equal once every array is taken as a multiset (each sorted by its elements' canonical
    texts). A knowledge graph's ``open_nodes`` lists entities in file order, and an undo that
    re-creates a deleted entity puts it last: the same graph, another order (new user round
    16, #1: undo halted on that "drift")."""
    if canonical(a) == canonical(b):
        return True
    return isinstance(read, dict) and read.get("unordered") is True and canonical(_sorted(a)) == canonical(_sorted(b))


def _sorted(value: Any) -> Any:
    """``value`` with every array sorted by its elements' canonical texts (recursively)."""
    if isinstance(value, dict):
        return {k: _sorted(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_sorted(v) for v in value), key=canonical)
    return value


def _encoder(sort_keys: bool, ensure_ascii: bool) -> Any:
    """``json.dumps(value, sort_keys=…, ensure_ascii=…, separators=(",", ":"))`` as one C
    encoder built once. ``json.dumps`` builds a JSONEncoder, and its ``encode`` a C encoder and
    a circular-reference table, on every call: for a read's small arguments that is two thirds
    of the time. Without that table a circular value raises RecursionError where dumps raises
    ValueError (nothing synartesis encodes is circular: it all came from JSON); everything else,
    the text and the errors, is dumps's (tests/test_canonical.py)."""
    from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii
    if c_make_encoder is None:  # a Python without the C accelerator: the stdlib's own path
        return json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=(",", ":")).encode
    default = json.JSONEncoder().default  # raises TypeError for what JSON has no form for
    made = c_make_encoder(None, default, encode_basestring_ascii if ensure_ascii else encode_basestring, None,
                          ":", ",", sort_keys, False, True)
    join = "".join
    return lambda value: join(made(value, 0))


_encode = _encoder(True, False)
_compact = _encoder(False, False)
_compact_ascii = _encoder(False, True)


def compact(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` with its encoder built
    once: compact JSON in the value's own key order, non-ASCII kept (the journal's stored
    payloads, the frames the proxy writes). Raises what ``json.dumps`` raises."""
    return _compact(value)


def compact_ascii(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))``: :func:`compact` with everything past ASCII
    escaped, so a text holding a lone surrogate stays valid UTF-8."""
    return _compact_ascii(value)


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON as UTF-8 bytes (``surrogatepass`` so lone surrogates never crash)."""
    return canonical(value).encode("utf-8", "surrogatepass")


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def call_key(server: str, tool: str, args: Any) -> str:
    """The identity of a call for approvals: SHA-256 over server, tool and canonical args."""
    return sha256_hex(canonical_bytes([server, tool, args]))


def too_deep(value: Any, text: Any = None, limit: int = MAX_DEPTH) -> int | None:
    """The nesting depth of ``value`` (arrays and objects; a scalar is 0) when it is over
    ``limit``, else None. Iterative, so it never hits the recursion limit itself. ``text``, the
    JSON text (str or bytes) ``value`` was parsed from, if known, answers the common case at
    C speed: a text with no more than ``limit`` brackets cannot nest deeper."""
    if isinstance(text, (bytes, bytearray)):
        if text.count(b"[") + text.count(b"{") <= limit:
            return None
    elif isinstance(text, str) and text.count("[") + text.count("{") <= limit:
        return None
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest if deepest > limit else None
