"""A client ``tools/call`` as it moves through the engine, and the small helpers the engine
needs before it loads the pipeline (:mod:`synartesis.proxy.pipeline` is imported at the first
``tools/call``: a server that is never called never pays for it)."""

from __future__ import annotations

import json
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SURROGATE_REFUSAL", "CallContext", "error_answer", "is_plain_read", "lone_surrogate", "tool_result"]


class CallContext:
    """One client ``tools/call`` request as it moves through the engine and the pipeline.

    ``line`` is the original frame, ``msg`` its parsed value, ``id_key`` its id as a map key.
    The engine fills ``answer`` (the server's response message, or None when the client
    cancelled) and ``failure`` (a :class:`RequestFailed`) when the call settles. With
    ``hold_error`` (saga mode), an error answer is not forwarded: it waits in ``held``. With
    ``keep_answer`` (a write whose post-read is read back), every answer waits in ``kept`` until
    that read has been answered (:meth:`Engine.release_kept`).
    """

    # Every field but the first three starts as the class's default, set on the instance only
    # when it changes: a plain read sets four of them, and assigning all nineteen in __init__
    # cost about 45 bytecodes a call on the client's reader (issue 11, instructions per read).
    action_id: str | None = None
    read: dict | None = None  # a plain read's journal record, completed on its answer
    waiter: Any = None  # a held lock the lane waits on (released when it settles)
    answer: Any = None
    failure: Any = None  # a transport.RequestFailed
    deadline: float | None = None
    forwarded = False
    cancelled = False
    settled = False
    timed_out = False
    # saga mode: an error answer is kept back (``held``, its frame) for the pipeline to send
    # once the run has been rolled back, with what was rolled back said in it
    hold_error = False
    held: Any = None
    # a write read back after its answer: the answer is kept back until the read-back has been
    # answered, so nothing the agent (or a person it tells) does next can land before it and be
    # recorded as the state the write left (undo would then overwrite it)
    keep_answer = False
    kept: Any = None
    kept_by_read = False  # the read-back's answer releases it, not the pipeline

    def __init__(self, line: Any, msg: dict, id_key: str) -> None:
        self.line = line
        self.msg = msg
        self.id_key = id_key


def is_plain_read(rule: Any) -> bool:
    """A readonly rule with nothing to read before or after it and no gate."""
    return rule.cls == "readonly" and rule.snapshot is None and rule.verify is None and rule.gate == "never"


def tool_result(text: str, modern: bool) -> dict:
    """A CallToolResult with ``isError: true`` that the model can read and relay."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if modern:
        result["resultType"] = "complete"
    return result


def lone_surrogate(line: Any, value: Any) -> bool:
    """True when ``value`` (parsed from frame ``line``) holds a lone UTF-16 surrogate.

    JSON can carry one only as a ``\\uD800``-``\\uDFFF`` escape, so frames without ``\\ud``/``\\uD``
    are passed at memchr speed; the rest are checked exactly.
    """
    if b"\\ud" not in line and b"\\uD" not in line:
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


SURROGATE_REFUSAL = (
    "Synartesis did not send this call: its tool name or arguments hold a lone UTF-16 surrogate "
    "(a \\ud800-\\udfff escape that is not part of a pair), which is not Unicode text. Servers decode "
    "it differently (most replace it with U+FFFD), so what the call would do could not be recorded "
    "or undone faithfully. Send valid text instead.")


def error_answer(msg: Any) -> bool:
    """True for a JSON-RPC error or a ``CallToolResult`` with ``isError: true`` (``msg`` a dict
    or a :class:`~synartesis.proxy.framing.LazyFrame`, parsed here)."""
    if hasattr(msg, "parse") and not isinstance(msg, dict):
        msg = msg.parse()
    if not isinstance(msg, dict):
        return False
    result = msg.get("result")
    return "error" in msg or (isinstance(result, dict) and result.get("isError") is True)
