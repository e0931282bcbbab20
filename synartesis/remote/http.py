"""A remote MCP server as an :class:`~synartesis.proxy.transport.Upstream`: Streamable HTTP,
falling back to the older HTTP+SSE transport.

What the MCP transport spec (2025-03-26 … 2025-11-25) asks of a client, and how it is done:

- Every client frame is a POST of its **original bytes** with ``Accept: application/json,
  text/event-stream``. A request is answered by a JSON body or an SSE stream; a notification
  or response gets ``202``. ``Mcp-Session-Id`` from the ``initialize`` answer goes on every
  later request, and ``MCP-Protocol-Version`` (the negotiated version) after the handshake.
- After ``notifications/initialized`` a GET stream is opened for server→client requests and
  notifications (``405`` = the server offers none). A stream that breaks after an event id
  is resumed with ``Last-Event-ID`` (after the server's ``retry`` delay), for the GET stream
  and for a request's own stream alike.
- ``DELETE`` ends the session at :meth:`HttpUpstream.close`. A ``404`` on a request that
  carried the session id means the session is gone: the client's own ``initialize`` and
  ``notifications/initialized`` are replayed (with our own id) to open a new one and the
  request is sent again (a 404 means it was not processed).
- An ``initialize`` refused with 400/404/405 (transport ``auto``) switches to the HTTP+SSE
  transport of 2024-11-05: GET the URL as an event stream, POST to the ``endpoint`` it names,
  answers arrive on the stream. ``transport="sse"`` goes there directly (Claude Code ``"type":
  "sse"`` entries).
- 2026-07-28 requests (``_meta`` carries ``io.modelcontextprotocol/protocolVersion``) get the
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers; cancelling one closes its
  POST instead of posting ``notifications/cancelled``.
- Redirects are followed only when they keep the method and stay on the endpoint's origin
  (or upgrade it to https), at most 5 times, as the mcp SDK does; TLS is verified against the
  system's CAs (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured); ``HTTPS_PROXY``, ``HTTP_PROXY``,
  ``ALL_PROXY`` and ``NO_PROXY`` are used (httpx2's ``trust_env``).

Outcomes (the journal's honesty depends on them):

- Nothing reached the server (connect error, TLS failure, proxy refused): our own request
  fails ``unsent``; a forwarded request is answered with a JSON-RPC error (not applied).
- The server refused it at the HTTP level (401, 403, other 4xx): ``error`` / a JSON-RPC error.
  A 401 with no usable token answers with :data:`SIGN_IN_CODE` naming ``synartesis login``.
- The connection dropped (or the server answered 5xx without a JSON-RPC error, or 202 to a
  request) **after** the request was sent and before its answer: our own request fails
  ``closed``; a forwarded request is answered with :data:`UNKNOWN_CODE` and
  ``error.data.synartesis.outcome == "unknown"`` (:func:`is_unknown_answer`), which the
  engine records as ``unknown``, never ``failed``.

Frames are delivered as the server sent them. The only change: a JSON body or SSE ``data``
that spans lines has its line breaks (which valid JSON can only hold as whitespace between
tokens) turned into spaces, because a stdio frame may not contain a newline.

Threads: one event loop thread owns every socket (httpx2's ``AsyncClient``); :meth:`send`,
:meth:`request` and :meth:`notify` hand frames to it from any thread, in call order, and
``on_message``/``on_close`` run on it.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from synartesis import __version__
from synartesis.log import log
from synartesis.proxy.framing import LazyFrame, parse_lenient, reread
from synartesis.proxy.transport import (
    CloseHandler,
    MessageHandler,
    RequestFailed,
    RequestIds,
    request_body,
)
from synartesis.remote.frames import (
    SIGN_IN_CODE,
    UNKNOWN_CODE,
    UNREACHABLE_CODE,
    error_frame,
    is_unknown_answer,
    request_ids,
)
from synartesis.remote.frames import flatten as _flatten
from synartesis.remote.frames import id_key as _id_key
from synartesis.remote.frames import parse as _parse
from synartesis.remote.sse import SSEParser

__all__ = [
    "PROTOCOL_VERSION",
    "SIGN_IN_CODE",
    "UNKNOWN_CODE",
    "UNREACHABLE_CODE",
    "BearerAuth",
    "HttpUpstream",
    "is_unknown_answer",
    "safe_url",
]

PROTOCOL_VERSION = "2025-06-18"

_ACCEPT_BOTH = "application/json, text/event-stream"
_MODERN_KEY = "io.modelcontextprotocol/protocolVersion"
_NAME_KEYS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_MAX_REDIRECTS = 5
_ERROR_BODY_CAP = 1 << 20
_RESUME_ATTEMPTS = 3
_LISTEN_ATTEMPTS = 5
#: below Node's default keep-alive timeout (5 s): a pooled connection the server is about to
#: close would turn a POST into "sent, answer lost" for no reason
_KEEPALIVE_EXPIRY = 4.0


class BearerAuth:
    """Where the ``Authorization`` header comes from when it is not a static header.

    The OAuth module implements this (:class:`synartesis.remote.oauth.OAuthBearer`); the
    upstream knows nothing of OAuth. Both methods run on the upstream's event loop.
    """

    async def authorization(self, client: httpx2.AsyncClient) -> str | None:
        """The header value to send (``Bearer …``), refreshing first if it has expired;
        None when there is no usable token (the server's 401 then names the sign-in)."""
        raise NotImplementedError

    async def refresh(self, client: httpx2.AsyncClient, www_authenticate: str | None) -> bool:
        """After a 401: try to get a new token; True when a retry may succeed."""
        raise NotImplementedError


def safe_url(url: str) -> str:
    """``url`` for a message or a log: scheme, host, port and path; no userinfo or query
    (either can carry a key: ``?api_key=…``, ``https://user:token@host``)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}" + ("?…" if parts.query else "")
    except ValueError:
        return "<url>"


def _same_origin(a: httpx2.URL, b: httpx2.URL) -> bool:
    if (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port):
        return True
    return a.host == b.host and a.scheme == "http" and b.scheme == "https" and a.port is None and b.port is None


@dataclass
class _Outgoing:
    """One frame on its way to the server."""

    frame: bytes
    msg: Any
    mine: concurrent.futures.Future | None = None  # our own request: its waiter

    @property
    def method(self) -> str | None:
        m = self.msg.get("method") if isinstance(self.msg, dict) else None
        return m if isinstance(m, str) else None

    @property
    def request_ids(self) -> list[Any]:
        """The ids this frame expects answers for (a request, or the requests of a batch)."""
        return request_ids(self.msg)

    @property
    def modern_version(self) -> str | None:
        params = self.msg.get("params") if isinstance(self.msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(_MODERN_KEY) if isinstance(meta, dict) else None
        return version if isinstance(version, str) else None


@dataclass
class _Exchange:
    """A request in flight: which ids still wait for an answer, and its POST task."""

    out: _Outgoing
    waiting: set[str] = field(default_factory=set)
    task: asyncio.Task | None = None


class _Gone(Exception):
    """The HTTP exchange ended without an answer; ``sent`` says whether the request may have
    reached the server, ``status`` the HTTP status when there was one."""

    def __init__(self, reason: str, sent: bool, status: int | None = None, code: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.sent, self.status, self.code = reason, sent, status, code


class HttpUpstream:
    """A remote MCP server over Streamable HTTP (or HTTP+SSE); see the module docstring.

    Args:
        url: the server's MCP endpoint (for ``transport="sse"``: its SSE endpoint).
        label: the server's name (messages, logs, the ``synartesis login NAME`` hint).
        transport: ``"auto"`` (Streamable HTTP, falling back to SSE), ``"http"`` or ``"sse"``.
        headers: static headers (already resolved from their references), or a callable
            returning them, called at start and again after a 401 (Claude Code's
            ``headersHelper``).
        auth: where ``Authorization`` comes from (OAuth), or None.
        sign_in_hint: the sentence a 401 answers with (default: run ``synartesis login LABEL``).
        connect_timeout: seconds to connect (TLS included) and to write a request.
    """

    def __init__(self, url: str, *, label: str, transport: str = "auto",
                 headers: Mapping[str, str] | Callable[[], Mapping[str, str]] | None = None,
                 auth: BearerAuth | None = None, sign_in_hint: str | None = None,
                 connect_timeout: float = 30.0) -> None:
        if transport not in ("auto", "http", "sse"):
            raise ValueError(f"unknown transport {transport!r}; expected auto, http or sse")
        self.url = url
        self.label = label
        self.transport = transport
        self._headers_source = headers
        self._static: dict[str, str] = {}
        self._auth = auth
        self.sign_in_hint = sign_in_hint or (
            f"{label} needs you to sign in: run `synartesis login {label}` in a terminal, then reconnect the server")
        self._connect_timeout = connect_timeout
        self._ids = RequestIds()
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx2.AsyncClient | None = None
        self._outbox: asyncio.Queue | None = None
        self._mode: str | None = {"http": "http", "sse": "sse"}.get(transport)  # None: not decided yet
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._init_frame: bytes | None = None
        self._initialized_frame: bytes | None = None
        self._endpoint: str | None = None  # HTTP+SSE: where to POST
        self._exchanges: dict[str, _Exchange] = {}
        self._own: dict[str, concurrent.futures.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._listener: asyncio.Task | None = None
        self._closing = False
        self._closed = threading.Event()
        self._close_called = False
        self._last_problem: str | None = None
        self._lock = threading.Lock()

    # -- the Upstream interface ---------------------------------------------------------------
    def start(self, on_message: MessageHandler | None, on_close: CloseHandler | None) -> None:
        """Start the event loop thread; frames go to ``on_message`` (None: standalone use,
        server→client requests are answered like a client with no capabilities would)."""
        if self._thread is not None:
            raise RuntimeError("start() was already called")
        self._on_message, self._on_close = on_message, on_close
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=f"http-{self.label}", daemon=True)
        self._thread.start()
        ready.wait()

    def send(self, line: bytes) -> None:
        """Forward one client frame (its bytes). RequestFailed("unsent") once closed."""
        self._enqueue(_Outgoing(bytes(line), None))

    def request(self, method: str, params: dict | None = None, *, timeout: float | None = 30.0,
                meta: dict | None = None) -> dict:
        """Our own request; see :meth:`synartesis.proxy.transport.Upstream.request`."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("request() called from the upstream's own thread (on_message) would wait for ever")
        mid = self._ids.next()
        body = request_body(mid, method, params, meta)
        waiter: concurrent.futures.Future = concurrent.futures.Future()
        frame = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        self._enqueue(_Outgoing(frame, body, waiter))
        try:
            reply = waiter.result(timeout)
        except concurrent.futures.TimeoutError:
            loop = self._loop
            if loop is not None and not self._closed.is_set():
                try:
                    loop.call_soon_threadsafe(self._own.pop, mid, None)
                except RuntimeError:
                    pass
            raise RequestFailed(f"{self.label} did not answer {method} within {timeout:g} s", "timeout") from None
        if "error" in reply:
            err = reply.get("error")
            err = err if isinstance(err, dict) else {"message": str(err)}
            raise RequestFailed(f"{self.label} answered {method} with an error: {err.get('message', 'error')}",
                                "error", err)
        result = reply.get("result")
        return result if isinstance(result, dict) else {"value": result}

    def notify(self, method: str, params: dict | None = None) -> None:
        """A notification of our own."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        self._enqueue(_Outgoing(json.dumps(body, separators=(",", ":")).encode(), body))

    def close(self, grace: float = 2.0) -> int:
        """End the session (DELETE), stop every stream, call ``on_close``; returns 0."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._closed.is_set():
            return 0
        if threading.current_thread() is thread:  # from on_message/on_close: do not wait on ourselves
            loop.call_soon(lambda: self._spawn(self._shutdown(grace)))
            return 0
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(grace), loop).result(grace + 5.0)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        thread.join(grace + 5.0)
        return 0

    def describe_failure(self, what: str) -> str:
        """``what`` and the last HTTP problem (status or connection error), on one line."""
        return f"{what} ({self._last_problem})" if self._last_problem else what

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server gave (None before the handshake or without sessions)."""
        return self._session_id

    @property
    def mode(self) -> str | None:
        """``"http"`` (Streamable HTTP) or ``"sse"`` (HTTP+SSE) once known."""
        return self._mode

    # -- plumbing between threads -------------------------------------------------------------
    def _enqueue(self, out: _Outgoing) -> None:
        loop = self._loop
        if loop is None:
            raise RequestFailed(f"{self.label} is not connected (start() was not called)", "unsent")
        with self._lock:
            if self._closing or self._closed.is_set():
                raise RequestFailed(f"{self.label} is closed", "unsent")
            try:
                loop.call_soon_threadsafe(self._accept, out)
            except RuntimeError as exc:  # the loop has stopped
                raise RequestFailed(f"{self.label} is closed", "unsent") from exc

    def _accept(self, out: _Outgoing) -> None:
        if out.msg is None:
            out.msg = _parse(out.frame)
        if out.mine is not None:
            self._own[str(out.msg["id"])] = out.mine
        assert self._outbox is not None
        self._outbox.put_nowait(out)

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._outbox = asyncio.Queue()
        ready.set()
        try:
            loop.run_until_complete(self._main())
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                self._closed.set()

    async def _main(self) -> None:
        self._static = await self._resolve_headers()
        timeout = httpx2.Timeout(self._connect_timeout, read=None, pool=None)
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=20,
                               keepalive_expiry=_KEEPALIVE_EXPIRY)
        self._client = httpx2.AsyncClient(timeout=timeout, limits=limits, follow_redirects=False,
                                          headers={"user-agent": f"synartesis/{__version__}"})
        try:
            await self._pump()
        finally:
            await self._client.aclose()

    async def _resolve_headers(self) -> dict[str, str]:
        src = self._headers_source
        if src is None:
            return {}
        if callable(src):
            try:
                got = await asyncio.get_running_loop().run_in_executor(None, src)
            except Exception as exc:  # noqa: BLE001 - a headersHelper that fails: go on without, say why
                log("warn", "could not compute the server's headers", server=self.label, error=str(exc))
                self._last_problem = f"headers: {exc}"
                return {}
            return {str(k).lower(): str(v) for k, v in dict(got).items()}
        return {str(k).lower(): str(v) for k, v in src.items()}

    def _spawn(self, coro: Awaitable) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _pump(self) -> None:
        """Send frames in the order they were handed over. Notifications and responses are
        posted one at a time (as the mcp SDK does); requests run concurrently once the
        transport is known."""
        assert self._outbox is not None
        while True:
            out = await self._outbox.get()
            if out is None:
                return
            try:
                await self._dispatch(out)
            except Exception as exc:  # noqa: BLE001 - never let one frame stop the pump
                log("error", "internal error sending a frame", server=self.label, error=repr(exc))
                self._answer_all(out, UNREACHABLE_CODE, f"synartesis internal error: {exc}", sent=False)

    async def _dispatch(self, out: _Outgoing) -> None:
        method = out.method
        ids = out.request_ids
        if method == "initialize":
            self._init_frame = out.frame
            self._protocol_version = None
        elif method == "notifications/initialized":
            self._initialized_frame = out.frame
        elif method == "notifications/cancelled" and self._cancel_modern(out):
            return
        if self._mode is None and method != "initialize" and not out.modern_version:
            self._mode = "http"
        if self._mode == "sse" or (self._mode is None and self.transport == "sse"):
            await self._sse_send(out)
            return
        if not ids:
            await self._post_oneway(out)
            if method == "notifications/initialized" and self._listener is None and self._mode == "http":
                self._listener = self._spawn(self._listen())
            return
        ex = _Exchange(out, {_id_key(i) for i in ids})
        for k in ex.waiting:
            self._exchanges[k] = ex
        if self._mode is None:  # the first request decides the transport: nothing overtakes it
            await self._exchange(ex)
        else:
            ex.task = self._spawn(self._exchange(ex))

    # -- Streamable HTTP ------------------------------------------------------------------
    async def _headers(self, out: _Outgoing | None, *, accept: str = _ACCEPT_BOTH) -> dict[str, str]:
        h = dict(self._static)  # the entry's headers first: the protocol's own win
        h["accept"] = accept
        if out is not None:
            h["content-type"] = "application/json"
        if self._session_id:
            h["mcp-session-id"] = self._session_id
        modern = out.modern_version if out is not None else None
        if modern:
            h["mcp-protocol-version"] = modern
            method = out.method
            if method:
                h["mcp-method"] = method
                key = _NAME_KEYS.get(method)
                params = out.msg.get("params") if isinstance(out.msg, dict) else None
                name = params.get(key) if key and isinstance(params, dict) else None
                if isinstance(name, str):
                    h["mcp-name"] = _header_value(name)
        elif self._protocol_version and not (out is not None and out.method == "initialize"):
            h["mcp-protocol-version"] = self._protocol_version
        if self._auth is not None and "authorization" not in self._static:
            value = await self._auth.authorization(self._client)
            if value:
                h["authorization"] = value
        return h

    async def _open(self, method: str, url: str, *, content: bytes | None, headers: dict[str, str]) -> httpx2.Response:
        """Send one HTTP request (streamed), following only redirects that keep the method and
        stay on the origin. Raises :class:`_Gone` (``sent=False``) when nothing reached the server."""
        assert self._client is not None
        try:  # a ${VAR} URL may expand to something unparsable (a line break): an answer, not a hang
            target = httpx2.URL(url)
        except httpx2.InvalidURL as exc:
            raise _Gone(f"bad URL {safe_url(url)}: {exc}", sent=False) from exc
        for _ in range(_MAX_REDIRECTS + 1):
            try:
                request = self._client.build_request(method, target, content=content, headers=headers)
            except (UnicodeError, ValueError, TypeError):
                # a value HTTP cannot carry (not ASCII, a line break): say which header, never its value
                bad = sorted(k for k, v in headers.items() if not _sendable(v)) or ["a header"]
                raise _Gone(f"the value of {', '.join(bad)} cannot be sent over HTTP (it must be visible "
                            "ASCII); check what the entry sets it to", sent=False) from None
            try:
                response = await self._client.send(request, stream=True)
            except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout, httpx2.ProxyError,
                    httpx2.UnsupportedProtocol) as exc:
                raise _Gone(f"could not connect to {safe_url(str(target))}: {_reason(exc)}", sent=False) from exc
            except httpx2.InvalidURL as exc:
                raise _Gone(f"bad URL {safe_url(url)}: {exc}", sent=False) from exc
            except (httpx2.TransportError, httpx2.DecodingError) as exc:
                # the request was on its way: whether the server got (and ran) it is unknown
                raise _Gone(f"the connection to {safe_url(str(target))} dropped: {_reason(exc)}", sent=True) from exc
            if response.status_code in (307, 308) and "location" in response.headers:
                await response.aclose()
                try:  # the server chose the Location: a bad one is the server's refusal, not a hang
                    location = target.join(response.headers["location"])
                except httpx2.InvalidURL as exc:
                    raise _Gone(f"{safe_url(str(target))} redirected to an unparsable location: {exc}; not followed",
                                sent=False, status=response.status_code) from exc
                if not _same_origin(target, location) or (location.userinfo and location.userinfo != target.userinfo):
                    raise _Gone(f"{safe_url(str(target))} redirected to {safe_url(str(location))}, another origin; "
                                "not followed (use that URL in the entry if it is the intended server)",
                                sent=False, status=response.status_code)
                target = location
                continue
            if 300 <= response.status_code < 400:
                await response.aclose()
                raise _Gone(f"{safe_url(str(target))} answered HTTP {response.status_code} (a redirect that would "
                            "change the method); not followed", sent=False, status=response.status_code)
            return response
        raise _Gone(f"{safe_url(url)}: more than {_MAX_REDIRECTS} redirects", sent=False)

    async def _post_oneway(self, out: _Outgoing) -> None:
        """POST a notification or response; the server answers 202 (or 200)."""
        for attempt in range(3):
            try:
                headers = await self._headers(out)
                response = await self._open("POST", self.url, content=out.frame, headers=headers)
            except _Gone as exc:
                self._problem(exc.reason)
                log("warn", "could not forward a message", server=self.label, error=exc.reason)
                return
            try:
                status = response.status_code
                if status == 401 and attempt == 0 and await self._refresh(response):
                    continue
                if status == 404 and self._session_id and attempt < 2 and await self._reinitialize():
                    continue
                if status >= 400:
                    body = await _read_capped(response)
                    self._problem(f"HTTP {status} from {safe_url(self.url)}")
                    log("warn", "the server refused a message", server=self.label, status=status,
                        detail=body[:200].decode("utf-8", "replace"))
                elif "text/event-stream" in response.headers.get("content-type", ""):
                    # lenient servers answer a response with more messages: deliver them
                    await self._consume_stream(response, None)
                return
            finally:
                await response.aclose()

    async def _exchange(self, ex: _Exchange) -> None:
        """POST a request and route its answer(s); every way it can end settles its waiters."""
        out = ex.out
        try:
            for attempt in range(3):
                headers = await self._headers(out)
                response = await self._open("POST", self.url, content=out.frame, headers=headers)
                try:
                    status = response.status_code
                    if status == 401 and attempt == 0 and await self._refresh(response):
                        continue
                    if status == 404 and self._session_id and out.method != "initialize" and attempt < 2 \
                            and await self._reinitialize():
                        continue
                    if out.method == "initialize" and self._mode is None and self.transport == "auto" \
                            and status in (400, 404, 405):
                        refusal = await _read_capped(response)
                        await self._fall_back_to_sse(ex, refusal, status, response)
                        return
                    if self._mode is None and status < 300:
                        self._mode = "http"
                    await self._answer(ex, response)
                    return
                finally:
                    await response.aclose()
        except _Gone as exc:
            self._problem(exc.reason)
            self._settle(ex, exc)
        except asyncio.CancelledError:
            self._settle(ex, _Gone("the request was cancelled while it was in flight", sent=True))
            raise
        except Exception as exc:  # noqa: BLE001 - a bug here must still answer the request, never hang it
            # the type only: an exception's text can quote a header value (a credential)
            log("error", "internal error in an HTTP exchange", server=self.label, error=type(exc).__name__)
            self._settle(ex, _Gone(f"internal error ({type(exc).__name__}) while sending the request", sent=True))
        finally:
            for k in list(ex.waiting):
                if self._exchanges.get(k) is ex:
                    del self._exchanges[k]

    async def _answer(self, ex: _Exchange, response: httpx2.Response) -> None:
        out = ex.out
        status = response.status_code
        if status == 401:
            www = response.headers.get("www-authenticate")
            self._problem(f"HTTP 401 from {safe_url(self.url)}")
            reason = self._unauthorized_reason()
            log("error", reason, server=self.label, www_authenticate=_short(www))
            raise _Gone(reason, sent=False, status=401, code=SIGN_IN_CODE)
        if status == 202:
            raise _Gone("the server accepted the request without answering it", sent=True, status=202)
        if status >= 400:
            body = await _read_capped(response)
            self._problem(f"HTTP {status} from {safe_url(self.url)}")
            if "json" in response.headers.get("content-type", "") and self._deliver_error_body(ex, body):
                return
            if status == 404 and self._session_id:
                raise _Gone("the server no longer knows this session", sent=False, status=404)
            if status >= 500:
                raise _Gone(f"the server failed with HTTP {status}", sent=True, status=status)
            detail = _without_credentials(body[:200].decode("utf-8", "replace").strip(), response)
            raise _Gone(f"the server refused the request with HTTP {status}" + (f": {detail}" if detail else ""),
                        sent=False, status=status)
        if out.method == "initialize":
            sid = response.headers.get("mcp-session-id")
            if sid and not _SESSION_ID_RE.fullmatch(sid):
                raise _Gone("the server's Mcp-Session-Id is not visible ASCII (as MCP requires), so it cannot be "
                            "sent back; the session cannot be used", sent=True, status=status)
            if sid:
                self._session_id = sid
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/json":
            try:
                body = await response.aread()
            except (httpx2.TransportError, httpx2.DecodingError) as exc:
                raise _Gone(f"the connection dropped while the answer arrived: {_reason(exc)}", sent=True) from exc
            self._route(_flatten(body))
            if ex.waiting:
                raise _Gone("the server's answer did not answer the request", sent=True)
            return
        if ctype == "text/event-stream":
            parser = await self._consume_stream(response, ex)
            attempts = 0
            while ex.waiting and parser is not None and parser.last_event_id is not None \
                    and attempts < _RESUME_ATTEMPTS and not self._closing:
                attempts += 1
                await asyncio.sleep((parser.retry_ms if parser.retry_ms is not None else 1000) / 1000)
                parser = await self._resume(ex, parser)
            if ex.waiting:
                raise _Gone("the answer's stream ended before the answer came", sent=True)
            return
        raise _Gone(f"the server answered with an unexpected content type {ctype or '(none)'}", sent=True,
                    status=status)

    async def _resume(self, ex: _Exchange, parser: SSEParser) -> SSEParser | None:
        """GET with ``Last-Event-ID`` to pick up a request's stream where it broke."""
        headers = await self._headers(None, accept="text/event-stream")
        headers["last-event-id"] = parser.last_event_id or ""
        try:
            response = await self._open("GET", self.url, content=None, headers=headers)
        except _Gone as exc:
            self._problem(exc.reason)
            return parser
        try:
            if response.status_code != 200 or "text/event-stream" not in response.headers.get("content-type", ""):
                self._problem(f"resuming the stream: HTTP {response.status_code}")
                return None
            return await self._consume_stream(response, ex, parser)
        finally:
            await response.aclose()

    async def _consume_stream(self, response: httpx2.Response, ex: _Exchange | None,
                              parser: SSEParser | None = None) -> SSEParser:
        """Route every ``message`` event of an SSE response; stop once ``ex`` is answered."""
        parser = parser or SSEParser()
        try:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if event.event == "message":
                        self._route(_flatten(event.data))
                if ex is not None and not ex.waiting:
                    return parser
        except (httpx2.TransportError, httpx2.DecodingError) as exc:
            self._problem(f"the stream from {safe_url(self.url)} broke: {_reason(exc)}")
        return parser

    def _deliver_error_body(self, ex: _Exchange, body: bytes) -> bool:
        """A JSON-RPC error in a non-2xx body answers the request (with its id put back when
        the server sent ``id: null``). False when the body is not one."""
        frame = _flatten(body)
        msg = _parse(frame)
        if not (isinstance(msg, dict) and isinstance(msg.get("error"), dict) and "method" not in msg):
            return False
        ids = ex.out.request_ids
        if msg.get("id") is None and len(ids) == 1:
            msg = {**msg, "id": ids[0]}
            frame = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        self._route(frame, msg)
        return not ex.waiting

    async def _refresh(self, response: httpx2.Response) -> bool:
        """After a 401: new headers from the helper, or a refreshed OAuth token."""
        await response.aread()
        www = response.headers.get("www-authenticate")
        if callable(self._headers_source):
            fresh = await self._resolve_headers()
            if fresh and fresh != self._static:
                self._static = fresh
                return True
        if self._auth is not None:
            try:
                return await self._auth.refresh(self._client, www)
            except Exception as exc:  # noqa: BLE001 - a refresh that breaks is a failed refresh
                log("warn", "could not refresh the sign-in", server=self.label, error=str(exc))
        return False

    async def _reinitialize(self) -> bool:
        """The session is gone (404): replay the client's handshake under our own id."""
        if self._init_frame is None:
            return False
        msg = _parse(self._init_frame)
        if not isinstance(msg, dict):
            return False
        log("warn", "the server ended the session; starting a new one", server=self.label)
        self._session_id = None
        mid = self._ids.next()
        replay = {**msg, "id": mid}
        frame = json.dumps(replay, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        waiter: concurrent.futures.Future = concurrent.futures.Future()
        self._own[mid] = waiter
        out = _Outgoing(frame, replay, waiter)
        ex = _Exchange(out, {_id_key(mid)})
        self._exchanges[_id_key(mid)] = ex
        await self._exchange(ex)
        if not waiter.done() or waiter.exception() is not None or "result" not in waiter.result():
            return False
        if self._initialized_frame is not None:
            await self._post_oneway(_Outgoing(self._initialized_frame, _parse(self._initialized_frame)))
        if self._listener is not None and self._listener.done() and not self._closing:
            self._listener = self._spawn(self._listen())
        return True

    async def _listen(self) -> None:
        """The GET stream: server→client requests and notifications, resumed when it breaks."""
        parser = SSEParser()
        failures = 0
        while not self._closing and failures < _LISTEN_ATTEMPTS:
            headers = await self._headers(None, accept="text/event-stream")
            if parser.last_event_id is not None:
                headers["last-event-id"] = parser.last_event_id
            try:
                response = await self._open("GET", self.url, content=None, headers=headers)
            except _Gone as exc:
                failures += 1
                log("debug", "GET stream not open", server=self.label, error=exc.reason)
                await asyncio.sleep(min(2 ** failures, 10) * 0.5)
                continue
            try:
                status = response.status_code
                if status == 401 and await self._refresh(response):
                    continue
                if status != 200 or "text/event-stream" not in response.headers.get("content-type", ""):
                    if status not in (405, 404):
                        log("debug", "the server offers no GET stream", server=self.label, status=status)
                    return
                failures = 0
                await self._consume_stream(response, None, parser)
            finally:
                await response.aclose()
            if not self._closing:
                await asyncio.sleep((parser.retry_ms if parser.retry_ms is not None else 1000) / 1000)

    def _cancel_modern(self, out: _Outgoing) -> bool:
        """2026-07-28: cancelling means closing the request's POST. True when that was done
        (the notification is then not posted)."""
        params = out.msg.get("params") if isinstance(out.msg, dict) else None
        rid = params.get("requestId") if isinstance(params, dict) else None
        ex = self._exchanges.get(_id_key(rid)) if rid is not None else None
        if ex is None or not ex.out.modern_version or ex.task is None:
            return False
        ex.waiting.clear()  # the client gave up on it: no answer is owed
        ex.task.cancel()
        return True

    # -- HTTP+SSE (2024-11-05) -----------------------------------------------------------------
    async def _fall_back_to_sse(self, ex: _Exchange, refusal: bytes, status: int,
                                response: httpx2.Response) -> None:
        """The ``initialize`` POST was refused (400/404/405): try the 2024-11-05 transport; if
        that fails too, the client gets the Streamable HTTP refusal (the likelier truth)."""
        log("info", "the server refused Streamable HTTP; trying the HTTP+SSE transport", server=self.label,
            status=status)
        try:
            await self._sse_open()
        except _Gone as exc:
            log("info", "HTTP+SSE did not work either", server=self.label, error=exc.reason)
            self._problem(f"HTTP {status} from {safe_url(self.url)}")
            if not self._deliver_error_body(ex, refusal):
                detail = _without_credentials(refusal[:200].decode("utf-8", "replace").strip(), response)
                raise _Gone(f"the server refused the handshake with HTTP {status}" + (f": {detail}" if detail else ""),
                            sent=False, status=status) from None
            return
        self._mode = "sse"
        await self._sse_send(ex.out)

    async def _sse_open(self) -> None:
        """GET the SSE endpoint and wait for its ``endpoint`` event."""
        headers = await self._headers(None, accept="text/event-stream")
        response = await self._open("GET", self.url, content=None, headers=headers)
        if response.status_code == 401 and await self._refresh(response):
            await response.aclose()
            headers = await self._headers(None, accept="text/event-stream")
            response = await self._open("GET", self.url, content=None, headers=headers)
        if response.status_code != 200 or "text/event-stream" not in response.headers.get("content-type", ""):
            status = response.status_code
            await response.aclose()
            if status == 401:
                raise _Gone(self._unauthorized_reason(), sent=False, status=401, code=SIGN_IN_CODE)
            raise _Gone(f"{safe_url(self.url)} answered HTTP {status} to the SSE stream request", sent=False,
                        status=status)
        parser = SSEParser()
        found: asyncio.Future = asyncio.get_running_loop().create_future()

        async def read() -> None:
            try:
                async for chunk in response.aiter_bytes():
                    for event in parser.feed(chunk):
                        if event.event == "endpoint" and not found.done():
                            found.set_result(event.data.decode("utf-8", "replace").strip())
                        elif event.event == "message":
                            self._route(_flatten(event.data))
            except (httpx2.TransportError, httpx2.DecodingError) as exc:
                self._problem(f"the SSE stream broke: {_reason(exc)}")
            finally:
                await response.aclose()
                if not found.done():
                    found.set_exception(_Gone("the SSE stream ended before it named its endpoint", sent=False))
                elif not self._closing:
                    self._session_lost("the server closed the SSE stream")

        self._listener = self._spawn(read())
        endpoint = await found
        target = httpx2.URL(self.url).join(endpoint)
        if not _same_origin(httpx2.URL(self.url), target):
            raise _Gone(f"the SSE endpoint {safe_url(str(target))} is on another origin; not used", sent=False)
        self._endpoint = str(target)

    async def _sse_send(self, out: _Outgoing) -> None:
        ids = out.request_ids
        ex = _Exchange(out, {_id_key(i) for i in ids}) if ids else None
        if ex is not None:
            for k in ex.waiting:
                self._exchanges[k] = ex
        try:
            if self._endpoint is None:
                await self._sse_open()
            assert self._endpoint is not None
            headers = await self._headers(out)
            headers.pop("mcp-session-id", None)
            response = await self._open("POST", self._endpoint, content=out.frame, headers=headers)
            try:
                if response.status_code >= 400:
                    body = await _read_capped(response)
                    self._problem(f"HTTP {response.status_code} from {safe_url(self._endpoint)}")
                    if ex is not None and "json" in response.headers.get("content-type", "") \
                            and self._deliver_error_body(ex, body):
                        return
                    raise _Gone(f"the server refused the message with HTTP {response.status_code}",
                                sent=response.status_code >= 500, status=response.status_code)
            finally:
                await response.aclose()
        except _Gone as exc:
            self._problem(exc.reason)
            if ex is not None:
                self._settle(ex, exc)
                for k in list(ex.waiting):
                    self._exchanges.pop(k, None)
            else:
                log("warn", "could not forward a message", server=self.label, error=exc.reason)

    def _session_lost(self, reason: str) -> None:
        """The HTTP+SSE stream is the session: when it ends, nothing more can come."""
        for ex in list({id(e): e for e in self._exchanges.values()}.values()):
            self._settle(ex, _Gone(reason, sent=True))
        self._exchanges.clear()
        self._fire_close()

    # -- routing answers and frames ---------------------------------------------------------
    def _route(self, frame: bytes, msg: Any = None) -> None:
        """One frame from the server: our own answer resolves its waiter; the rest goes to the
        client. Answers also tick off their exchange. Server frames are parsed as the stdio
        upstream parses them (:func:`~synartesis.proxy.framing.parse_lenient`): an answer or a
        frame over 1 MiB is a :class:`~synartesis.proxy.framing.LazyFrame` whose envelope is read
        without building the result."""
        if not frame:
            return
        if msg is None:
            msg = parse_lenient(frame)
        lazy = isinstance(msg, LazyFrame)
        if lazy and not msg.sure():  # its ends may not tell the whole truth (a method, a later id)
            msg = reread(frame)  # over 1 MiB its real envelope, without building the result
            lazy = isinstance(msg, LazyFrame)
        items = [msg] if lazy or not isinstance(msg, list) else msg
        for item in items:
            is_answer = (lazy or isinstance(item, dict)) and "method" not in item and "id" in item
            if not is_answer:
                continue
            rid = item.member("id") if lazy else item["id"]
            key = _id_key(rid)
            ex = self._exchanges.get(key)
            if ex is not None:
                ex.waiting.discard(key)
                if self._exchanges.get(key) is ex:
                    del self._exchanges[key]
                if ex.out.method == "initialize":
                    result = (item.member("result") if lazy else item.get("result"))
                    version = result.get("protocolVersion") if isinstance(result, dict) else None
                    if isinstance(version, str):
                        self._protocol_version = version
            if isinstance(rid, str) and (lazy or isinstance(msg, dict)):  # ours are never in a batch
                waiter = self._own.pop(rid, None)
                if waiter is not None:
                    if not waiter.done():
                        waiter.set_result(msg.parse() if lazy else msg)
                    return
                if self._ids.owns(rid):
                    return  # a late answer to one of ours (it timed out): never forwarded
        self._deliver(frame, msg)

    def _deliver(self, frame: bytes, msg: Any) -> None:
        if self._on_message is not None:
            try:
                self._on_message(frame, msg)
            except Exception as exc:  # noqa: BLE001 - the engine's handler must not kill our loop
                log("error", "internal error delivering a frame", server=self.label, error=repr(exc))
            return
        if isinstance(msg, dict) and "method" in msg and "id" in msg:  # standalone: answer like a bare client
            if msg["method"] == "ping":
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
            elif msg["method"] == "roots/list":
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}
            else:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
            assert self._outbox is not None
            self._outbox.put_nowait(_Outgoing(json.dumps(reply).encode(), reply))

    def _settle(self, ex: _Exchange, gone: _Gone) -> None:
        """Answer every id of ``ex`` still waiting: our own fail, the client's get an error frame."""
        for rid in ex.out.request_ids:
            key = _id_key(rid)
            if key not in ex.waiting:
                continue
            ex.waiting.discard(key)
            waiter = self._own.pop(rid, None) if isinstance(rid, str) else None
            if waiter is not None:
                if not waiter.done():
                    kind = "closed" if gone.sent else ("error" if gone.code == SIGN_IN_CODE else "unsent")
                    waiter.set_exception(RequestFailed(f"{self.label}: {gone.reason}", kind,
                                                       {"code": gone.code or UNREACHABLE_CODE,
                                                        "message": gone.reason} if kind == "error" else None))
                continue
            if gone.sent:
                frame = error_frame(rid, UNKNOWN_CODE, f"synartesis: {self.label}: {gone.reason}; whether the "
                                    "server carried the request out is unknown", "unknown")
            else:
                frame = error_frame(rid, gone.code or UNREACHABLE_CODE, f"synartesis: {gone.reason}", "not sent")
            self._deliver(frame, _parse(frame))

    def _answer_all(self, out: _Outgoing, code: int, message: str, sent: bool) -> None:
        ids = out.request_ids
        if ids:
            self._settle(_Exchange(out, {_id_key(i) for i in ids}), _Gone(message, sent=sent, code=code))

    def _problem(self, text: str) -> None:
        self._last_problem = text

    def _unauthorized_reason(self) -> str:
        """What a 401 means here: the entry's own credentials were refused, or a sign-in is
        needed (with why the stored one did not do)."""
        if "authorization" in self._static and self._auth is None:
            return (f"{self.label} refused the credentials its entry gives (HTTP 401 from {safe_url(self.url)}); "
                    "check the token the entry's headers name")
        detail = getattr(self._auth, "problem", None)
        return f"{self.sign_in_hint} ({detail})" if detail else self.sign_in_hint

    # -- shutdown ---------------------------------------------------------------------------
    async def _shutdown(self, grace: float) -> None:
        if self._closing:
            return
        with self._lock:
            self._closing = True
        assert self._outbox is not None
        # frames already handed over are still sent (a last notification, a response)
        deadline = asyncio.get_running_loop().time() + grace
        while not self._outbox.empty() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        if self._listener is not None:
            self._listener.cancel()
        if self._session_id and self._mode == "http":
            try:
                headers = await self._headers(None, accept=_ACCEPT_BOTH)
                response = await asyncio.wait_for(self._open("DELETE", self.url, content=None, headers=headers),
                                                  grace)
                await response.aclose()
            except (TimeoutError, _Gone, httpx2.HTTPError) as exc:
                log("debug", "could not end the session", server=self.label, error=str(exc))
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        if self._tasks:
            await asyncio.wait([t for t in self._tasks if t is not asyncio.current_task()] or [asyncio.sleep(0)],
                               timeout=grace)
        for waiter in list(self._own.values()):
            if not waiter.done():
                waiter.set_exception(RequestFailed(f"{self.label} was shut down", "closed"))
        self._own.clear()
        self._fire_close()
        self._outbox.put_nowait(None)

    def _fire_close(self) -> None:
        if self._close_called:
            return
        self._close_called = True
        with self._lock:
            self._closing = True
        for waiter in list(self._own.values()):
            if not waiter.done():
                waiter.set_exception(RequestFailed(f"{self.label}: the connection is gone", "closed"))
        self._own.clear()
        if self._on_close is not None:
            try:
                self._on_close()
            except Exception as exc:  # noqa: BLE001 - the engine's handler must not kill our loop
                log("error", "internal error in on_close", server=self.label, error=repr(exc))
        if self._outbox is not None:
            self._outbox.put_nowait(None)


def _header_value(value: str) -> str:
    """An ``Mcp-Name`` value that survives HTTP: printable ASCII as is, else the spec's
    ``=?base64?…?=`` form."""
    if re.fullmatch(r"[\x20-\x7E]*", value) and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def _reason(exc: BaseException) -> str:
    """The innermost reason of a transport error (``Connection refused``, the TLS failure)."""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    text = str(seen) or str(exc) or type(exc).__name__
    return text.strip().rstrip(".")


_SESSION_ID_RE = re.compile(r"[\x21-\x7e]+")


def _sendable(value: object) -> bool:
    """A header value httpx sends as it is: text of printable ASCII (spaces and tabs allowed)."""
    return isinstance(value, str) and all(" " <= c <= "~" or c == "\t" for c in value)


#: Request headers whose values are no secret (the protocol's own); every other one may be a
#: credential (the entry's ``Authorization``, ``X-Api-Key`` …, and the session id).
_PLAIN_HEADERS = frozenset({"accept", "accept-encoding", "connection", "content-length", "content-type", "host",
                            "user-agent", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id"})


def _without_credentials(text: str, response: httpx2.Response) -> str:
    """``text`` (a refusal's body, quoted in our own message) without the credentials the
    request carried: a server may quote the key it rejects, and our message reaches the agent,
    the journal and ``show``."""
    try:
        sent = response.request.headers
    except (RuntimeError, AttributeError):
        return text
    from synartesis.redact import scrub_pieces
    secrets: list[str] = []
    for name, value in sent.items():
        if name.lower() in _PLAIN_HEADERS or not value:
            continue
        secrets.append(value)
        scheme, _, rest = value.partition(" ")
        if rest.strip() and scheme.isalpha():
            secrets.append(rest.strip())  # "Bearer <token>": the token alone too
    return scrub_pieces(text, secrets) if secrets else text


def _short(text: str | None) -> str | None:
    return None if text is None else text[:300]


async def _read_capped(response: httpx2.Response) -> bytes:
    """An error body, at most 1 MiB of it (a hostile server must not fill our memory)."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size >= _ERROR_BODY_CAP:
                break
    except (httpx2.TransportError, httpx2.DecodingError):
        pass
    return b"".join(parts)[:_ERROR_BODY_CAP]

