"""JSON-RPC frames as bytes, shared by the HTTP upstream and ``serve`` (standard library only).

A frame is one JSON-RPC message (or batch) without a line break: what stdio carries. HTTP
bodies and SSE events may spread a message over lines; :func:`flatten` makes one frame of
them without touching anything else.
"""

from __future__ import annotations

import json
from typing import Any

from synartesis.proxy.framing import id_key
from synartesis.proxy.transport import is_unknown_answer

__all__ = ["SIGN_IN_CODE", "UNKNOWN_CODE", "UNREACHABLE_CODE", "error_frame", "flatten", "id_key",
           "is_unknown_answer", "parse", "request_ids"]

#: JSON-RPC error codes of our own (the implementation-defined range, PROXY.md §3.7)
UNREACHABLE_CODE = -32000  # not sent, or refused before it was processed
SIGN_IN_CODE = -32002      # the server wants a sign-in we do not have
UNKNOWN_CODE = -32003      # sent, answer lost: the outcome is unknown


def flatten(body: bytes) -> bytes:
    """A JSON body or SSE data as one frame: surrounding whitespace dropped, inner line breaks
    (valid JSON holds them only as whitespace between tokens) turned into spaces."""
    body = body.strip()
    if b"\n" in body or b"\r" in body:
        body = body.replace(b"\r\n", b" ").replace(b"\n", b" ").replace(b"\r", b" ")
    return body


def parse(frame: bytes) -> Any:
    """The frame's JSON value, or None when it is not JSON."""
    try:
        return json.loads(frame)
    except (ValueError, RecursionError):
        return None


def request_ids(msg: Any) -> list[Any]:
    """The ids a message (or batch) expects answers for: those of its requests."""
    if isinstance(msg, dict):
        return [msg["id"]] if "method" in msg and "id" in msg else []
    if isinstance(msg, list):
        return [m["id"] for m in msg if isinstance(m, dict) and "method" in m and "id" in m]
    return []


def error_frame(rid: Any, code: int, message: str, outcome: str | None = None) -> bytes:
    """A JSON-RPC error answer for ``rid``; ``outcome`` (``"unknown"``, ``"not sent"``) goes to
    ``error.data.synartesis.outcome`` so the engine can tell "maybe applied" from "failed"."""
    error: dict[str, Any] = {"code": code, "message": message}
    if outcome:
        error["data"] = {"synartesis": {"outcome": outcome}}
    text = json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")
