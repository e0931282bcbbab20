"""The upstream interface: one MCP server connection, whatever carries it.

The engine (the byte pumps, the ordered ``tools/call`` lane, the journal thread) and the
``tools/call`` pipeline talk to a server only through :class:`Upstream`. A transport is a room
of its own that implements it: a child process on pipes (:mod:`synartesis.proxy.stdio`), a
remote Streamable HTTP server. Nothing above this module knows which one it has (DESIGN §10).

Standard library only, and no heavy import: the proxy imports this on every client launch.

Contract every implementation keeps:
- **Thread-safe.** :meth:`Upstream.send`, :meth:`Upstream.request` and :meth:`Upstream.notify`
  may be called from any thread, concurrently; frames are never interleaved.
- **Frames are bytes.** One JSON-RPC message (or batch) per frame, without the newline that
  stdio puts after it. Client frames are forwarded as their original bytes.
- **Our own requests** carry string ids ``syn-<nonce>-<n>`` (:class:`RequestIds`). Their answers
  complete the waiting :meth:`Upstream.request` and are never delivered to ``on_message``.
- **Delivery.** Every other server→client frame goes to ``on_message(original bytes, parsed
  value or None)`` on the upstream's own reader thread, in the order the server sent them.
  The parsed value may instead be a :class:`synartesis.proxy.framing.LazyFrame` (routed by its
  envelope, parsed on demand): the stdio upstream hands one for frames over 1 MiB and for
  everyday answers, so a byte pump never parses a 50 MB result. Consumers take both; an
  upstream that always parses (dicts) is correct too.
  ``on_message`` must not block on the upstream (it must not call :meth:`Upstream.request`:
  the reader thread that would deliver the answer is the one waiting).
- **Lost answers.** A transport that can lose one forwarded request's answer while the
  connection lives on (a remote POST that dropped) answers it with an error whose
  ``data.synartesis.outcome`` is ``"unknown"`` (:func:`is_unknown_answer`).
- **Closing.** ``on_close()`` is called once, after the last ``on_message``, when no more frames
  can come (the child closed its output, the remote session ended). Requests still waiting
  then fail with ``RequestFailed(kind="closed")``.
"""

from __future__ import annotations

import itertools
import os
from synartesis.errors import UpstreamError

TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    #: ``on_message(original_bytes, parsed_value_or_None)``
    MessageHandler = Callable[[bytes, Any], None]
    #: ``on_close()``
    CloseHandler = Callable[[], None]
    _Interface = Protocol
else:  # the same names at run time, without typing (checkers see the Protocol and the aliases)
    MessageHandler = CloseHandler = None  # for annotations only
    _Interface = object

__all__ = ["RequestFailed", "Upstream", "MessageHandler", "CloseHandler", "RequestIds", "ID_PREFIX",
           "is_unknown_answer", "request_body"]

ID_PREFIX = "syn-"



class RequestFailed(UpstreamError):
    """One of our own requests (or a forwarded frame) did not get a result.

    Attributes:
        kind: ``"error"`` (the server answered with a JSON-RPC error; ``error`` holds it),
            ``"timeout"`` (sent, no answer in time: outcome unknown), ``"closed"`` (the
            connection went away after the request was written: outcome unknown) or
            ``"unsent"`` (the request certainly did not reach the server).
        error: the JSON-RPC error object for kind ``"error"``, else None.
    """

    def __init__(self, message: str, kind: str, error: dict | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.error = error

    @property
    def maybe_applied(self) -> bool:
        """True when the request may have reached the server (timeout or disconnect)."""
        return self.kind in ("timeout", "closed")


def request_body(rid: str, method: str, params: dict | None = None, meta: dict | None = None) -> dict:
    """One of our own requests as a JSON-RPC object: ``meta`` merged into ``params._meta``;
    no ``params`` member when there are none and none were given (``params=None``)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    p = dict(params or {})
    if meta:
        p["_meta"] = {**p.get("_meta", {}), **meta}
    if p or params is not None:
        body["params"] = p
    return body


def is_unknown_answer(msg: Any) -> bool:
    """True for the error answer a transport makes up for a forwarded request whose real answer
    was lost after the request was sent (a remote connection dropped): its
    ``error.data.synartesis.outcome`` is ``"unknown"``. The journal records ``unknown`` for it,
    never ``failed``: the server may have carried the request out."""
    if not isinstance(msg, dict):
        return False
    err = msg.get("error")
    data = err.get("data") if isinstance(err, dict) else None
    mark = data.get("synartesis") if isinstance(data, dict) else None
    return isinstance(mark, dict) and mark.get("outcome") == "unknown"


class Upstream(_Interface):
    """One MCP server connection, whatever carries it (a child on pipes, Streamable HTTP).

    Thread-safe (see the module docstring for the whole contract).
    """

    #: a short name for messages and logs (the server's name in the policy)
    label: str

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Begin delivering every server→client frame that is not an answer to one of our own
        requests: original bytes (no newline) plus the parsed value (None if not JSON), on the
        upstream's own reader thread, in the order the server sent them.

        ``on_close`` is called once, after the last frame, when the connection is gone.
        Call once, before :meth:`send`; :meth:`request` works only after it.
        """
        ...

    def send(self, line: bytes) -> None:
        """Forward one client frame as its original bytes (no newline).

        May block while the server is not taking input (back-pressure), never longer than the
        transport's own write limits.
        Raises:
            RequestFailed: kind ``"unsent"`` when it certainly did not reach the server.
        """
        ...

    def request(self, method: str, params: dict | None = None, *, timeout: float | None,
                meta: dict | None = None) -> dict:
        """Our own request (id ``syn-<nonce>-<n>``), blocking the calling thread.

        Args:
            method: the JSON-RPC method (``tools/call``, ``tools/list``, ``initialize`` …).
            params: its params; None sends no ``params`` member.
            timeout: seconds to wait for the answer; None waits until it comes or the
                connection closes.
            meta: merged into ``params._meta`` (2026-07-28 envelope keys, idempotency keys).
        Returns:
            The answer's ``result`` when it is an object, else ``{"value": result}``.
        Raises:
            RequestFailed: ``"error"`` (JSON-RPC error in ``.error``), ``"timeout"`` /
                ``"closed"`` (maybe applied), ``"unsent"`` (certainly not applied).
        """
        ...

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification of our own (no id, no answer).

        Raises:
            RequestFailed: kind ``"unsent"``.
        """
        ...

    def close(self, grace: float = 2.0) -> int:
        """Orderly shutdown; returns the exit code (0 for a remote server).

        For a child: close its input, wait ``grace`` seconds, SIGTERM its process group, wait
        ``grace``, SIGKILL. A negative code means killed by that signal. Idempotent.
        """
        ...

    def describe_failure(self, what: str) -> str:
        """``what`` as a one-line reason for a user, with the server's stderr tail (or the
        HTTP status) where there is one."""
        ...


class RequestIds:
    """Ids for our own requests: ``syn-<nonce>-<n>``, unique per process and connection.

    The nonce is 8 random hex digits from ``os.urandom`` (no ``secrets``/``uuid`` import on the
    start-up path); ``n`` counts from 1. Thread-safe (``itertools.count`` is atomic under the GIL).
    """

    def __init__(self) -> None:
        self.nonce = os.urandom(4).hex()
        self.prefix = f"{ID_PREFIX}{self.nonce}-"
        self._count = itertools.count(1)

    def next(self) -> str:
        """A fresh id."""
        return f"{self.prefix}{next(self._count)}"

    def owns(self, value: Any) -> bool:
        """True when ``value`` is an id this source handed out (its answer is ours)."""
        return isinstance(value, str) and value.startswith(self.prefix)
