"""The HTTP side of ``synartesis serve``: a Streamable HTTP server (MCP 2025-03-26 … 2025-11-25)
in front of one backend session per MCP session.

Every request is checked before anything is forwarded, in this order (a failed check answers
and stops): the ``Host`` header is one of the allowed names (DNS rebinding) → 403; an
``Origin``, when sent, is allowed → 403 (an allowed one's CORS preflight, ``OPTIONS``, is
answered here with 204, and every answer to it carries ``Access-Control-Allow-Origin``);
``GET /health`` answers here; the bearer token matches
(constant time) → 401; the path is ``/servers/NAME/mcp`` for a served NAME → 404; the method is
POST, GET or DELETE → 405; a body over the cap (``Content-Length`` or as read) → 413.
While draining (SIGTERM), new sessions and new ``tools/call`` s get 503.

Sessions: an ``initialize`` request (with an id) POSTed without ``Mcp-Session-Id`` opens one (a new upstream and
engine, :class:`Backend`); every later request must carry the id (unknown → 404, missing →
400). ``DELETE`` ends it; so does idleness (no request and no open stream for
``idle_timeout`` seconds) and shutdown. A request POST is answered with an SSE stream carrying
its answer (and progress notifications for its ``progressToken``); other server→client
messages go to the session's GET stream, or, while none is open, on the newest open POST
stream, else they wait (a bounded backlog) for a GET. A frame is written as the engine gave it.
Answers still owed when a session ends are answered with the "outcome unknown" error.

The backend is called from worker threads (a session's frames in order, on one thread) and
calls back from its own; this module keeps its state on the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from synartesis.log import log
from synartesis.remote.frames import (
    UNKNOWN_CODE,
    error_frame,
    flatten,
    id_key,
    parse,
    request_ids,
)
from synartesis.serve.token import token_matches

__all__ = ["Backend", "BackendSession", "ServeApp", "ServeConfig"]

_BACKLOG = 10_000
# and by size: a late answer (its POST's client left) can be tens of megabytes, and ten thousand
# of them waiting for a GET that never comes is memory serve would never give back; the oldest
# frames go first, as they do past the count (adversarial review 30)
_BACKLOG_BYTES = 64 * 1024 * 1024
# frames queued for one SSE stream whose client does not read them (its socket's buffer full):
# past this the stream is ended rather than holding memory for a reader that may never come back
# (adversarial review 30: the queue had no bound); the journal holds every answer regardless
_STREAM_BYTES = 64 * 1024 * 1024
_PATH_PREFIX = "/servers/"
_PATH_SUFFIX = "/mcp"


class BackendSession(Protocol):
    """One MCP session's upstream and engine."""

    def feed(self, frame: bytes) -> None:
        """One client frame (bytes, no newline), in the order received."""

    def close(self, drain: float) -> None:
        """Finish what is in flight (at most ``drain`` seconds), close the upstream and the run."""


class Backend(Protocol):
    """Opens backend sessions (``serve``'s engine wiring; tests may plug in another)."""

    def open(self, server: str, send: Callable[[bytes], None], ended: Callable[[], None]) -> BackendSession:
        """Start ``server`` for a new MCP session. ``send`` takes every frame for the client
        (any thread); ``ended`` says the upstream went away.

        Raises:
            Exception: the server could not be started (the client gets a 502 with why).
        """


@dataclass
class ServeConfig:
    """What ``serve`` allows.

    Attributes:
        token: the bearer token.
        servers: the names served at ``/servers/NAME/mcp``.
        allowed_hosts: ``Host`` values accepted (``host:port`` forms, lower case).
        allowed_origins: ``Origin`` values accepted (``scheme://host:port``, lower case).
        max_body: request bytes accepted (default 16 MiB).
        idle_timeout: seconds a session may sit unused before it is closed.
        drain: seconds SIGTERM (and a closing session) waits for calls in flight.
        max_sessions: sessions open at once (each runs its own server process); the next
            ``initialize`` gets 503 with ``Retry-After`` until one ends (DELETE, idleness).
            Adversarial review 30, F9: 40 ``initialize`` requests started 40 server processes.
    """

    token: str
    servers: list[str]
    allowed_hosts: set[str] = field(default_factory=set)
    allowed_origins: set[str] = field(default_factory=set)
    max_body: int = 16 * 1024 * 1024
    idle_timeout: float = 1800.0
    drain: float = 30.0
    max_sessions: int = 32


class _Stream:
    """An SSE response being written: frames queue up here, ``None`` ends it."""

    def __init__(self, kind: str, ids: list[Any] | None = None, progress: set[str] | None = None) -> None:
        self.kind = kind
        self.ids = {id_key(i): i for i in ids or []}
        self.waiting = set(self.ids)
        self.progress = progress or set()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.queued_bytes = 0
        self.open = True
        self.writer: asyncio.Task | None = None  # the pump's task while it is inside a write (_pump)
        self.cut = False  # _overflow cancelled that write

    def put(self, frame: bytes | None, last: bool = False) -> None:
        """Queue a frame; ``last``: it is the answer that completes this POST (the stream ends
        after writing it, never before: progress may still be queued ahead of it).

        A stream whose client has left more than :data:`_STREAM_BYTES` unread is ended: what it
        holds is dropped, the stream is closed (later frames go where a closed stream's would),
        and a warning is logged. One frame alone never ends it, whatever its size (a 70 MB file
        read answered to a client that reads: adversarial review 31b); only frames behind one
        still unread count."""
        if not self.open:
            return
        if frame is not None:
            waiting = self.queued_bytes
            self.queued_bytes += len(frame)
            if waiting and self.queued_bytes > _STREAM_BYTES:
                self._overflow()
                return
        self.queue.put_nowait((frame, last))

    def taken(self, frame: bytes | None) -> None:
        """A frame left the queue for the client (``queued_bytes`` counts what waits)."""
        if frame is not None:
            self.queued_bytes -= len(frame)

    def _overflow(self) -> None:
        dropped = self.queue.qsize()
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queued_bytes = 0
        self.open = False
        self.queue.put_nowait((None, True))
        if self.writer is not None:
            # the pump waits in that write for a socket that does not drain, and would never
            # get to the end queued above: cut it, so the response ends (adversarial review 31b)
            self.cut = True
            self.writer.cancel()
        log("warn", "a stream's client is not reading; the stream is ended",
            kind=self.kind, dropped_frames=dropped, limit_bytes=_STREAM_BYTES)


class _Session:
    def __init__(self, sid: str, server: str) -> None:
        self.id, self.server = sid, server
        self.backend: BackendSession | None = None
        self.pending: dict[str, _Stream] = {}
        self.by_progress: dict[str, _Stream] = {}
        self.posts: list[_Stream] = []
        self.get: _Stream | None = None
        self.backlog: collections.deque = collections.deque()
        self.backlog_bytes = 0
        self.last_active = time.monotonic()
        self.closed = False
        self._feed: queue.SimpleQueue = queue.SimpleQueue()
        self._feeder: threading.Thread | None = None

    def feed(self, frame: bytes) -> None:
        """Hand a frame to the backend on this session's feeder thread (in order, off the loop)."""
        if self._feeder is None:
            self._feeder = threading.Thread(target=self._feed_loop, name=f"serve-feed-{self.id[:6]}", daemon=True)
            self._feeder.start()
        self._feed.put(frame)

    def _feed_loop(self) -> None:
        while (frame := self._feed.get()) is not None:
            backend = self.backend
            if backend is None:
                continue
            try:
                backend.feed(frame)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not stop the session
                log("error", "internal error feeding a frame", session=self.id[:8], error=repr(exc))

    def keep(self, frame: bytes) -> None:
        """Keep a frame for the next GET stream: at most :data:`_BACKLOG` frames and
        :data:`_BACKLOG_BYTES` bytes (the newest frame always), the oldest dropped first."""
        self.backlog.append(frame)
        self.backlog_bytes += len(frame)
        while len(self.backlog) > 1 and (len(self.backlog) > _BACKLOG or self.backlog_bytes > _BACKLOG_BYTES):
            self.backlog_bytes -= len(self.backlog.popleft())

    def stop_feeding(self) -> None:
        self._feed.put(None)


def _is_json(content_type: str) -> bool:
    """Is this Content-Type JSON: ``application/json`` or a ``+json`` type, parameters aside
    (``text/plain; x=json`` is not: adversarial review 30)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _response_start(status: int, headers: list[tuple[bytes, bytes]]) -> dict:
    return {"type": "http.response.start", "status": status, "headers": headers}


class ServeApp:
    """The ASGI application (see the module docstring)."""

    def __init__(self, config: ServeConfig, backend: Backend) -> None:
        self.config = config
        self.backend = backend
        self.sessions: dict[str, _Session] = {}
        self.draining = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reaper: asyncio.Task | None = None
        self.inflight_posts = 0
        self.opening = 0  # sessions whose server is starting (counted against max_sessions)
        self.closing = 0  # sessions ended whose server is still stopping (counted too)

    # -- ASGI ---------------------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        headers: dict[str, str] = {}
        for k, v in scope.get("headers") or []:
            name = k.decode("latin-1").lower()
            if name in headers and name in ("host", "authorization", "origin", "mcp-session-id", "content-length"):
                await self._plain(send, 400, f"duplicate {name} header")
                return
            headers[name] = v.decode("latin-1")
        if not self._host_ok(headers.get("host")):
            await self._plain(send, 403, "this Host is not allowed (DNS rebinding protection); see serve --allow-host")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower().rstrip("/") not in self.config.allowed_origins:
            await self._plain(send, 403, "this Origin is not allowed; see serve --allow-origin")
            return
        path, method = scope.get("path", ""), scope.get("method", "GET")
        if origin is not None:
            send = _with_cors(send, origin)
            if method == "OPTIONS" and "access-control-request-method" in headers:
                # a browser's preflight carries no token: answered for an allowed Origin only
                await send(_response_start(204, [
                    (b"access-control-allow-methods", b"POST, GET, DELETE"),
                    (b"access-control-allow-headers", _CORS_REQUEST_HEADERS),
                    (b"access-control-max-age", b"600"), (b"content-length", b"0")]))
                await send({"type": "http.response.body", "body": b""})
                return
        if path == "/health":
            if method != "GET":
                await self._plain(send, 405, "GET only", allow="GET")
                return
            await self._json(send, 200, {"status": "draining" if self.draining else "ok"})
            return
        if not token_matches(self.config.token, headers.get("authorization")):
            await self._plain(send, 401, "a valid bearer token is required (synartesis serve --show-token)",
                              extra=[(b"www-authenticate", b'Bearer realm="synartesis"')])
            return
        server = self._server_of(path)
        if server is None:
            await self._plain(send, 404, "no such server here; servers are at /servers/NAME/mcp")
            return
        if method == "POST":
            body = await self._body(receive, send, headers)
            if body is not None:
                await self._post(send, receive, server, headers, body)
        elif method == "GET":
            await self._get(send, receive, server, headers)
        elif method == "DELETE":
            await self._delete(send, server, headers)
        else:
            await self._plain(send, 405, "POST, GET or DELETE", allow="POST, GET, DELETE")

    async def _lifespan(self, receive: Callable, send: Callable) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loop = asyncio.get_running_loop()
                self._reaper = asyncio.ensure_future(self._reap_idle())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._reaper is not None:
                    self._reaper.cancel()
                await self.close_all(self.config.drain)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- checks -------------------------------------------------------------------------
    def _host_ok(self, host: str | None) -> bool:
        return bool(host) and host.lower() in self.config.allowed_hosts

    def _server_of(self, path: str) -> str | None:
        if not (path.startswith(_PATH_PREFIX) and path.endswith(_PATH_SUFFIX)):
            return None
        name = path[len(_PATH_PREFIX):-len(_PATH_SUFFIX)]
        return name if name in self.config.servers else None

    async def _body(self, receive: Callable, send: Callable, headers: dict[str, str]) -> bytes | None:
        cap = self.config.max_body
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await self._plain(send, 400, "bad Content-Length")
                return None
            if int(length) > cap:
                await self._plain(send, 413, f"the request body is over {cap} bytes")
                return None
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                await self._plain(send, 413, f"the request body is over {cap} bytes")
                return None
            parts.append(chunk)
            if not message.get("more_body"):
                return b"".join(parts)

    # -- POST -----------------------------------------------------------------------------
    async def _post(self, send: Callable, receive: Callable, server: str, headers: dict[str, str],
                    body: bytes) -> None:
        if not _is_json(headers.get("content-type", "")):
            await self._plain(send, 415, "Content-Type must be application/json")
            return
        frame = flatten(body)
        msg = parse(frame)
        if not isinstance(msg, (dict, list)):
            await self._json(send, 400, {"jsonrpc": "2.0", "id": None,
                                         "error": {"code": -32700, "message": "Parse error"}})
            return
        if msg == []:  # JSON-RPC 2.0 §6: one Response object, not an array (new user round 31, 10g)
            await self._json(send, 400, {"jsonrpc": "2.0", "id": None,
                                         "error": {"code": -32600, "message": "Invalid Request: an empty batch"}})
            return
        if self.draining and _starts_work(msg):
            await self._plain(send, 503, "synartesis serve is shutting down", extra=[(b"retry-after", b"5")])
            return
        sid = headers.get("mcp-session-id")
        new = False
        if sid is None:
            if not (isinstance(msg, dict) and msg.get("method") == "initialize"):
                await self._json(send, 400, {"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                                             "error": {"code": -32000, "message":
                                                       "Bad Request: Mcp-Session-Id header is required"}})
                return
            if "id" not in msg:
                # a notification gets no answer, so no Mcp-Session-Id: the session and its
                # server would sit unreachable until the idle timeout
                await self._json(send, 400, {"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": "Invalid Request: initialize is a request; give it an id"}})
                return
            session = await self._open_session(server, send)
            if session is None:
                return
            new = True
        else:
            session = self.sessions.get(sid)
            if session is None or session.server != server or session.closed:
                await self._plain(send, 404, "no such session (it ended); start a new one with initialize")
                return
        session.last_active = time.monotonic()
        ids = request_ids(msg)
        if not ids:
            session.feed(frame)
            await send(_response_start(202, [(b"content-length", b"0")]))
            await send({"type": "http.response.body", "body": b""})
            return
        keys = [id_key(i) for i in ids]
        counts = collections.Counter(keys)  # not keys.count per id: quadratic in a 16 MiB batch
        reused = [i for i, k in zip(ids, keys) if k in session.pending or counts[k] > 1]
        if reused:
            # An id already owed an answer in this session: forwarding it would hand this POST
            # the other call's answer and leave that one waiting for ever (JSON-RPC ids must be
            # unique among a session's requests in flight).
            await self._json(send, 400, {"jsonrpc": "2.0", "id": reused[0], "error": {
                "code": -32600, "message": f"Invalid Request: the id {json.dumps(reused[0])} is already in "
                                           "flight in this session; use a new id for each request"}})
            return
        stream = _Stream("post", ids, _progress_tokens(msg))
        for k in stream.waiting:
            session.pending[k] = stream
        for t in stream.progress:
            session.by_progress[t] = stream
        session.posts.append(stream)
        out_headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                       (b"x-accel-buffering", b"no")]
        if new:
            out_headers.append((b"mcp-session-id", session.id.encode()))
        self.inflight_posts += 1
        try:
            session.feed(frame)
            await send(_response_start(200, out_headers))
            await self._pump(send, receive, stream)
        finally:
            self.inflight_posts -= 1
            stream.open = False
            if stream in session.posts:
                session.posts.remove(stream)
            for t in stream.progress:
                if session.by_progress.get(t) is stream:
                    del session.by_progress[t]
            left_unanswered = bool(stream.waiting)
            for k in list(stream.waiting):
                if session.pending.get(k) is stream:
                    del session.pending[k]  # the client left: a late answer goes to the GET stream
            session.last_active = time.monotonic()
            if new and left_unanswered and not session.closed:
                # the client left before its initialize was answered: it may never have seen the
                # Mcp-Session-Id, so nobody could use or end this session; end it now
                asyncio.ensure_future(self._close_session(session, 0.0))

    async def _open_session(self, server: str, send: Callable) -> _Session | None:
        # a session being closed still has its server process until that has stopped (DELETE
        # with a call in flight drains it for up to --drain seconds): it keeps its slot until
        # then (adversarial review 31: DELETE freed the slot at once, so sessions draining their
        # calls and new ones added up to more server processes than --max-sessions)
        open_now = sum(1 for s in self.sessions.values() if not s.closed) + self.opening + self.closing
        if open_now >= self.config.max_sessions:
            log("warn", "refused a session: the cap is reached", server=server, sessions=open_now,
                closing=self.closing, max_sessions=self.config.max_sessions)
            closing = f", {self.closing} of them still closing" if self.closing else ""
            await self._plain(send, 503, f"synartesis serve has {open_now} sessions open{closing}, its limit "
                              f"(--max-sessions {self.config.max_sessions}); end one with DELETE, or wait for "
                              "an idle one to close", extra=[(b"retry-after", b"5")])
            return None
        self.opening += 1
        try:
            return await self._start_session(server, send)
        finally:
            self.opening -= 1

    async def _start_session(self, server: str, send: Callable) -> _Session | None:
        session = _Session(secrets.token_urlsafe(24), server)
        loop = asyncio.get_running_loop()

        def deliver(frame: bytes) -> None:
            loop.call_soon_threadsafe(self._route, session, frame)

        def ended() -> None:
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._close_session(session, 0.0)))

        try:
            session.backend = await loop.run_in_executor(None, self.backend.open, server, deliver, ended)
        except Exception as exc:  # noqa: BLE001 - the client is told why; the server keeps running
            log("error", "could not start the server for a session", server=server, error=str(exc))
            await self._plain(send, 502, f"could not start {server}: {exc}")
            return None
        if session.closed:
            # The server exited while the session opened (``ended`` ran first): never register
            # a closed session, whose POST nobody would answer; close its engine and say why.
            backend = session.backend
            try:
                if backend is not None:
                    await loop.run_in_executor(None, backend.close, 0.0)
            except Exception as exc:  # noqa: BLE001 - the client is answered all the same
                log("error", "error while closing a session", session=session.id[:8], error=repr(exc))
            log("error", "the server exited as its session opened", server=server, session=session.id[:8])
            await self._plain(send, 502, f"{server} exited as it started; see serve's log for its error output")
            return None
        self.sessions[session.id] = session
        log("info", "session opened", server=server, session=session.id[:8])
        return session

    async def _pump(self, send: Callable, receive: Callable, stream: _Stream) -> None:
        """Write the stream's frames until it ends or the client goes away."""
        gone = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            while True:
                getter = asyncio.ensure_future(stream.queue.get())
                done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    return
                frame, last = getter.result()
                stream.taken(frame)
                if frame is None:
                    break
                # while inside the write, _overflow may cancel this task (no task of its own per
                # frame: the write is awaited in place, as before)
                stream.writer = asyncio.current_task()
                try:
                    await send({"type": "http.response.body", "body": b"event: message\ndata: " + frame + b"\n\n",
                                "more_body": True})
                except asyncio.CancelledError:
                    task = stream.writer
                    if not stream.cut or task is None or task.uncancel() > 0:
                        raise  # cancelled from elsewhere too (the server shutting down)
                    return  # ended by _overflow while the write was stuck: the response is cut off
                finally:
                    stream.writer = None
                if last:
                    break
            await send({"type": "http.response.body", "body": b""})
        finally:
            gone.cancel()

    # -- GET / DELETE --------------------------------------------------------------------
    async def _get(self, send: Callable, receive: Callable, server: str, headers: dict[str, str]) -> None:
        if "text/event-stream" not in headers.get("accept", ""):
            await self._plain(send, 406, "the GET stream needs Accept: text/event-stream")
            return
        session = await self._session_for(send, server, headers)
        if session is None:
            return
        if session.get is not None and session.get.open:
            await self._plain(send, 409, "this session already has a GET stream")
            return
        stream = _Stream("get")
        session.get = stream
        while session.backlog:
            stream.put(session.backlog.popleft())
        session.backlog_bytes = 0
        await send(_response_start(200, [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                                         (b"x-accel-buffering", b"no")]))
        try:
            await self._pump(send, receive, stream)
        finally:
            stream.open = False
            if session.get is stream:
                session.get = None
            session.last_active = time.monotonic()

    async def _delete(self, send: Callable, server: str, headers: dict[str, str]) -> None:
        session = await self._session_for(send, server, headers)
        if session is None:
            return
        await self._close_session(session, self.config.drain)
        await self._plain(send, 200, "session ended")

    async def _session_for(self, send: Callable, server: str, headers: dict[str, str]) -> _Session | None:
        sid = headers.get("mcp-session-id")
        if sid is None:
            await self._plain(send, 400, "Mcp-Session-Id header is required")
            return None
        session = self.sessions.get(sid)
        if session is None or session.server != server or session.closed:
            await self._plain(send, 404, "no such session (it ended); start a new one with initialize")
            return None
        return session

    # -- frames from the backend ----------------------------------------------------------
    def _route(self, session: _Session, frame: bytes) -> None:
        """One frame for the client (on the loop): an answer to the POST that waits for it,
        progress to the POST whose token it names, anything else to the GET stream."""
        if not frame:
            return
        msg = parse(frame)
        items = msg if isinstance(msg, list) else [msg]
        target: _Stream | None = None
        last = False
        for item in items:
            if isinstance(item, dict) and "method" not in item and "id" in item:
                key = id_key(item["id"])
                stream = session.pending.pop(key, None)
                if stream is not None:
                    stream.waiting.discard(key)
                    target, last = stream, not stream.waiting
        if target is None and isinstance(msg, dict) and msg.get("method") == "notifications/progress":
            params = msg.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            if token is not None:
                target = session.by_progress.get(id_key(token))
        if target is None:
            if session.get is not None and session.get.open:
                target = session.get
            elif session.posts:
                target = session.posts[-1]
        if target is None:
            session.keep(frame)
            return
        target.put(frame, last)

    # -- ending sessions ----------------------------------------------------------------------
    async def _close_session(self, session: _Session, drain: float) -> None:
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        session.stop_feeding()
        backend = session.backend
        if backend is not None:
            self.closing += 1  # its server process lives until close returns: it keeps its slot
            try:
                await asyncio.get_running_loop().run_in_executor(None, backend.close, drain)
            except Exception as exc:  # noqa: BLE001 - closing must finish for the others
                log("error", "error while closing a session", session=session.id[:8], error=repr(exc))
            finally:
                self.closing -= 1
        for key, stream in list(session.pending.items()):
            stream.waiting.discard(key)
            stream.put(error_frame(stream.ids.get(key), UNKNOWN_CODE,
                                   f"synartesis: the session with {session.server} ended before it answered; "
                                   "whether the call was carried out is unknown (see `synartesis show`)", "unknown"),
                       not stream.waiting)
        session.pending.clear()
        for stream in [*session.posts, *([session.get] if session.get else [])]:
            stream.put(None)
        log("info", "session closed", server=session.server, session=session.id[:8])

    async def close_all(self, drain: float) -> None:
        """Close every session (shutdown), each given ``drain`` seconds for calls in flight."""
        await asyncio.gather(*(self._close_session(s, drain) for s in list(self.sessions.values())))

    async def drain(self, timeout: float) -> None:
        """SIGTERM: refuse new requests, let the requests in flight be answered (up to
        ``timeout`` seconds), then close every session (what is still owed becomes unknown)."""
        self.draining = True
        end = time.monotonic() + timeout
        while self.inflight_posts and time.monotonic() < end:
            await asyncio.sleep(0.05)
        await self.close_all(max(0.0, end - time.monotonic()))

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(max(0.1, min(1.0, self.config.idle_timeout / 4)))
            now = time.monotonic()
            for s in list(self.sessions.values()):
                busy = s.posts or (s.get is not None and s.get.open)
                if not busy and now - s.last_active > self.config.idle_timeout:
                    log("info", "closing an idle session", server=s.server, session=s.id[:8])
                    await self._close_session(s, self.config.drain)

    # -- small answers -------------------------------------------------------------------------
    @staticmethod
    async def _plain(send: Callable, status: int, text: str, *, allow: str | None = None,
                     extra: list[tuple[bytes, bytes]] | None = None) -> None:
        body = (text + "\n").encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        if allow:
            headers.append((b"allow", allow.encode()))
        headers += extra or []
        await send(_response_start(status, headers))
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def _json(send: Callable, status: int, value: Any) -> None:
        body = json.dumps(value, separators=(",", ":")).encode()
        await send(_response_start(status, [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]))
        await send({"type": "http.response.body", "body": body})


_CORS_REQUEST_HEADERS = (b"authorization, content-type, accept, mcp-session-id, mcp-protocol-version, "
                         b"last-event-id, mcp-method, mcp-name")


def _with_cors(send: Callable, origin: str) -> Callable:
    """``send`` adding the CORS response headers for an allowed ``origin`` (a browser may then
    read the answer and its ``Mcp-Session-Id``; the token is still required: no credentials
    mode, no cookies)."""
    extra = [(b"access-control-allow-origin", origin.encode("latin-1")),
             (b"access-control-expose-headers", b"mcp-session-id, www-authenticate, retry-after"),
             (b"vary", b"origin")]

    async def cors_send(message: dict) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": list(message.get("headers", [])) + extra}
        await send(message)
    return cors_send


def _starts_work(msg: Any) -> bool:
    """While draining, what is refused: new sessions and new ``tools/call`` s. The rest (a
    client's ``tools/list`` after a call, a response, a notification) still goes through, so
    the calls in flight can finish."""
    items = msg if isinstance(msg, list) else [msg]
    return any(isinstance(m, dict) and m.get("method") in ("initialize", "tools/call") for m in items)


async def _wait_disconnect(receive: Callable) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _progress_tokens(msg: Any) -> set[str]:
    out: set[str] = set()
    for item in msg if isinstance(msg, list) else [msg]:
        params = item.get("params") if isinstance(item, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is not None:
            out.add(id_key(token))
    return out
