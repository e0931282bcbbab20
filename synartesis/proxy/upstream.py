"""One MCP server running as a child process, spoken to over newline-delimited JSON-RPC.

Contract:
- The child gets the caller's *whole* environment (``os.environ`` unless ``env`` is given) and
  cwd, in its own process group (``start_new_session``) so ``npx``/``uvx`` launchers and the
  real server die together (PROXY.md §2.6).
- Lines of any length are read (no 64 KiB limit: a 5 MB file read is a 10 MB line).
- Our own requests use string ids ``syn-<nonce>-<n>``; their responses resolve futures and are
  never passed to ``on_message``. Every other line from the child goes to ``on_message`` as its
  original bytes (plus the parsed value, or None when it is not JSON).
- Shutdown (:meth:`Child.close`): close stdin → wait for exit (grace) → SIGTERM the group →
  wait → SIGKILL (spec 2025-11-25 lifecycle, "stdio").

Both the proxy (which forwards everything else to its client) and the CLI (``undo``, ``check``,
``pin``, ``init``, ``install``) use this module, so what undo reads back is compared in exactly
the representation the proxy recorded (DESIGN §3).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import secrets
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from synartesis import __version__
from synartesis.errors import UpstreamError
from synartesis.proxy.spawn import popen_server, resolve_command
from synartesis.proxy.transport import RequestFailed

__all__ = [
    "Child",
    "Upstream",
    "RequestFailed",
    "Introspection",
    "introspect",
    "PROTOCOL_VERSION",
    "resolve_command",
]

PROTOCOL_VERSION = "2025-06-18"
_STDERR_TAIL = 20
_DRAIN_ABOVE = 1 << 20


class LineSplitter:
    """Incremental newline framing with no length limit and linear cost for huge lines."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the complete lines (without their newline) now available."""
        self._buf += data
        lines: list[bytes] = []
        start = 0
        while True:
            nl = self._buf.find(b"\n", max(self._scan, start))
            if nl < 0:
                break
            lines.append(bytes(self._buf[start:nl]))
            start = nl + 1
            self._scan = start
        if start:
            del self._buf[:start]
            self._scan = 0
        self._scan = len(self._buf)
        return lines

    def rest(self) -> bytes:
        """What is left after EOF (a final line without a newline)."""
        rest, self._buf = bytes(self._buf), bytearray()
        return rest


MessageHandler = Callable[[bytes, Any], None]


class _Pipe(asyncio.Protocol):
    """Read side of a child's pipe: every chunk is handed over synchronously, in order."""

    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self.on_data, self.on_eof = on_data, on_eof

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def eof_received(self) -> bool:
        self.on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_eof()


@dataclass
class Child:
    """A running MCP server process and its JSON-RPC plumbing (see module docstring)."""

    command: str
    args: list[str]
    popen: subprocess.Popen
    on_message: MessageHandler | None = None
    label: str = "server"
    _nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    _next: int = 0
    _pending: dict[str, asyncio.Future] = field(default_factory=dict)
    _stderr_tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=_STDERR_TAIL))
    _stdin: asyncio.WriteTransport | None = None
    _splitter: LineSplitter = field(default_factory=LineSplitter)
    _err_splitter: LineSplitter = field(default_factory=LineSplitter)
    _exited: asyncio.Future | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    exit_code: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @classmethod
    async def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str] | None = None,
                    cwd: str | None = None, capture_stderr: bool = True,
                    on_message: MessageHandler | None = None, label: str | None = None) -> "Child":
        """Start ``command args`` and wire its pipes to the running event loop.

        Args:
            env: the child's whole environment; None = this process's ``os.environ``.
            cwd: working directory; None = ours.
            capture_stderr: True (CLI) drains stderr continuously and keeps the last lines for
                error messages; False (proxy) lets the child inherit our stderr fd.
            on_message: called (synchronously) with every line that is not an answer to one of
                our own requests: ``(original bytes, parsed value or None)``.
        Raises:
            UpstreamError: the executable could not be started.
        """
        popen = popen_server(command, args, env=env, cwd=cwd, capture_stderr=capture_stderr,
                             die_with_parent=capture_stderr)  # a CLI's servers die with it
        try:
            return await cls.adopt(popen, command, args, on_message=on_message, label=label)
        except BaseException:  # cancelled while wiring the pipes: nobody else will stop it
            _kill_group(popen)
            raise

    @classmethod
    async def adopt(cls, popen: subprocess.Popen, command: str, args: list[str], *,
                    on_message: MessageHandler | None = None, label: str | None = None) -> "Child":
        """Wire an already started process (from :func:`popen_server`) to the event loop."""
        loop = asyncio.get_running_loop()
        child = cls(command=command, args=list(args), popen=popen, on_message=on_message,
                    label=label or os.path.basename(command))
        assert popen.stdin is not None and popen.stdout is not None
        child._stdin, _ = await loop.connect_write_pipe(asyncio.Protocol, popen.stdin)
        await loop.connect_read_pipe(lambda: _Pipe(child._on_stdout, child._on_stdout_eof), popen.stdout)
        if popen.stderr is not None:
            await loop.connect_read_pipe(lambda: _Pipe(child._on_stderr, lambda: None), popen.stderr)
        child._exited = loop.run_in_executor(None, popen.wait)
        return child

    # -- reading -----------------------------------------------------------------------
    def _on_stdout(self, data: bytes) -> None:
        for line in self._splitter.feed(data):
            self._dispatch(line)

    def _on_stdout_eof(self) -> None:
        if self.closed.is_set():
            return
        rest = self._splitter.rest()
        if rest.strip():
            self._dispatch(rest)
        self._fail_pending("closed", f"{self.label} closed its output")
        self.closed.set()

    def _on_stderr(self, data: bytes) -> None:
        for line in self._err_splitter.feed(data):
            text = line.decode("utf-8", "replace").strip()
            if text:
                self._stderr_tail.append(text[:500])

    def _dispatch(self, line: bytes) -> None:
        try:
            msg = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            msg = None
        if isinstance(msg, dict) and "method" not in msg:
            mid = msg.get("id")
            if isinstance(mid, str) and mid in self._pending:
                fut = self._pending.pop(mid)
                if not fut.done():
                    fut.set_result(msg)
                return
        if self.on_message is not None:
            self.on_message(line, msg)
        else:
            self._default_handler(msg)

    def _default_handler(self, msg: Any) -> None:
        """Standalone use (CLI): answer server→client requests so the server never waits."""
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            if msg["method"] == "roots/list":
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}
            elif msg["method"] == "ping":
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
            else:
                reply = {"jsonrpc": "2.0", "id": msg["id"],
                         "error": {"code": -32601, "message": "Method not found"}}
            try:
                self.write_nowait(json.dumps(reply).encode())
            except RequestFailed:
                pass

    def _fail_pending(self, kind: str, message: str) -> None:
        for mid, fut in list(self._pending.items()):
            if not fut.done():
                fut.set_exception(RequestFailed(message, kind))
        self._pending.clear()

    # -- writing -----------------------------------------------------------------------
    def write_nowait(self, line: bytes) -> None:
        """Queue one frame (``line`` without newline) for the child's stdin, in order.

        Raises:
            RequestFailed(kind="unsent"): the child's stdin is closed.
        """
        t = self._stdin
        if t is None or t.is_closing() or self.closed.is_set():
            raise RequestFailed(f"{self.label} is not running", "unsent")
        try:
            t.write(line + b"\n")
        except (OSError, RuntimeError) as exc:  # BrokenPipe, ConnectionReset, closed transport
            raise RequestFailed(f"{self.label} is not running: {exc}", "unsent") from exc

    async def write(self, line: bytes) -> None:
        """Write one frame; waits only while the child is not reading (over 1 MiB queued).

        Raises:
            RequestFailed(kind="unsent"): the child's stdin is closed.
        """
        self.write_nowait(line)
        t = self._stdin
        while t is not None and not t.is_closing() and t.get_write_buffer_size() > _DRAIN_ABOVE \
                and not self.closed.is_set():
            await asyncio.sleep(0.005)

    def new_id(self) -> str:
        """A fresh id in our own namespace (``syn-<nonce>-<n>``)."""
        self._next += 1
        return f"syn-{self._nonce}-{self._next}"

    async def request(self, method: str, params: dict | None = None, *,
                      timeout: float | None = 30.0, meta: dict | None = None) -> dict:
        """Send our own request; return its ``result`` object.

        Args:
            meta: merged into ``params._meta`` (2026-07-28 envelopes, idempotency keys).
            timeout: seconds; None waits until the child answers or exits.
        Raises:
            RequestFailed: kind ``error``/``timeout``/``closed``/``unsent`` (see the class).
        """
        mid = self.new_id()
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": mid, "method": method}
        p = dict(params or {})
        if meta:
            p["_meta"] = {**p.get("_meta", {}), **meta}
        if p or params is not None:
            body["params"] = p
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[mid] = fut
        try:
            await self.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        except RequestFailed:
            self._pending.pop(mid, None)
            raise
        try:
            reply = await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            self._pending.pop(mid, None)
            raise RequestFailed(f"{self.label} did not answer {method} within {timeout:g} s", "timeout") from None
        if "error" in reply:
            err = reply.get("error") or {}
            msg = err.get("message", "error") if isinstance(err, dict) else str(err)
            raise RequestFailed(f"{self.label} answered {method} with an error: {msg}", "error",
                                err if isinstance(err, dict) else {"message": str(err)})
        result = reply.get("result")
        return result if isinstance(result, dict) else {"value": result}

    async def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (no id, no answer)."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        await self.write(json.dumps(body).encode())

    def stderr_tail(self, n: int = 4) -> list[str]:
        """The last ``n`` non-blank lines the child wrote to stderr (captured mode only)."""
        return list(self._stderr_tail)[-n:]

    def describe_failure(self, what: str) -> str:
        """``what`` plus the server's last stderr lines, for error messages."""
        tail = self.stderr_tail()
        return f"{what} — the server said: {'; '.join(tail)}" if tail else what

    # -- shutdown ----------------------------------------------------------------------
    async def close_stdin(self) -> None:
        """Close the child's stdin (the polite way to ask a stdio server to exit)."""
        t = self._stdin
        if t is not None and not t.is_closing():
            try:
                t.close()
            except (OSError, RuntimeError):
                pass

    def _signal_group(self, sig: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(self.popen.pid, sig)
            else:  # pragma: no cover - Windows
                self.popen.kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def kill(self) -> None:
        """SIGKILL the child's process group now (no grace): for cleanup that cannot await."""
        _kill_group(self.popen)

    async def wait(self) -> int:
        """Wait for the child to exit; its exit code."""
        assert self._exited is not None
        return await asyncio.shield(self._exited)

    async def close(self, grace: float = 2.0) -> int:
        """Shut the child down in order; return its exit code (negative = killed by signal).

        Cancelled part-way (the console's esc while its job shuts down), the group is killed
        at once before the cancellation goes on: a server is never left running.
        """
        try:
            return await self._close(grace)
        except BaseException:
            self.kill()
            raise

    async def _close(self, grace: float) -> int:
        await self.close_stdin()
        for sig in (None, signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            if sig is not None:
                self._signal_group(sig)
            try:
                self.exit_code = await asyncio.wait_for(self.wait(), grace)
                break
            except asyncio.TimeoutError:
                continue
        if os.name == "posix" and self.exit_code is not None:
            # the launcher (npx, uvx) may have exited while the real server lingers
            self._signal_group(signal.SIGTERM)
        try:  # let the rest of its output arrive
            await asyncio.wait_for(self.closed.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
        self._fail_pending("closed", f"{self.label} was shut down")
        return self.exit_code if self.exit_code is not None else -9


def _kill_group(popen: subprocess.Popen) -> None:
    """SIGKILL a child's process group (it was started as its own session), now."""
    try:
        if os.name == "posix":
            os.killpg(popen.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        else:  # pragma: no cover - Windows
            popen.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


class Upstream:
    """A standalone MCP client over a :class:`Child` (the CLI's way to talk to a server)."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.init_result: dict = {}

    @classmethod
    def spawn(cls, command: str, args: list[str], env: Mapping[str, str] | None = None,
              cwd: str | None = None, label: str | None = None) -> "_UpstreamContext":
        """``async with Upstream.spawn(cmd, args) as up:`` — started, not yet initialized."""
        return _UpstreamContext(command, list(args), env, cwd, label)

    async def initialize(self, timeout: float = 30.0) -> dict:
        """Do the 2025-era handshake; return the server's InitializeResult.

        Raises:
            UpstreamError: the server failed, exited or did not answer (with its stderr tail).
        """
        try:
            result = await self.child.request("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "synartesis", "version": __version__}}, timeout=timeout)
            await self.child.notify("notifications/initialized")
        except RequestFailed as exc:
            raise UpstreamError(self.child.describe_failure(
                f"{self.child.label} failed during initialize: {exc.message}")) from exc
        self.init_result = result
        return result

    @property
    def server_info(self) -> dict:
        info = self.init_result.get("serverInfo")
        return info if isinstance(info, dict) else {}

    async def list_tools(self, timeout: float = 30.0) -> list[dict]:
        """Every tool the server advertises (all pages, raw objects).

        Raises:
            UpstreamError: the request failed.
        """
        tools: list[dict] = []
        cursor = None
        for _ in range(1000):
            params = {"cursor": cursor} if cursor else {}
            try:
                page = await self.child.request("tools/list", params, timeout=timeout)
            except RequestFailed as exc:
                raise UpstreamError(self.child.describe_failure(
                    f"{self.child.label} failed during tools/list: {exc.message}")) from exc
            tools.extend(t for t in page.get("tools", []) if isinstance(t, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict, *, timeout: float | None = 60.0,
                        meta: dict | None = None) -> dict:
        """Call a tool; return the raw CallToolResult (``isError`` results are returned too).

        Raises:
            RequestFailed: no result (see :class:`RequestFailed` for the kinds).
        """
        return await self.child.request("tools/call", {"name": name, "arguments": arguments},
                                        timeout=timeout, meta=meta)

    async def close(self) -> int:
        return await self.child.close()


class _UpstreamContext:
    def __init__(self, command: str, args: list[str], env: Mapping[str, str] | None,
                 cwd: str | None, label: str | None) -> None:
        self._spec = (command, args, env, cwd, label)
        self._up: Upstream | None = None

    async def __aenter__(self) -> Upstream:
        command, args, env, cwd, label = self._spec
        child = await Child.spawn(command, args, env=env, cwd=cwd, capture_stderr=True, label=label)
        self._up = Upstream(child)
        return self._up

    async def __aexit__(self, *exc: object) -> None:
        if self._up is not None:
            await self._up.close()


@dataclass(frozen=True)
class Introspection:
    """What a server says about itself: ``serverInfo``, ``instructions`` and its tools."""

    server_info: dict
    instructions: str | None
    tools: list[dict]
    protocol_version: str | None = None


async def introspect(command: str, args: list[str], env: Mapping[str, str] | None = None,
                     cwd: str | None = None, timeout: float = 20.0,
                     label: str | None = None) -> Introspection:
    """Start a server, handshake, read ``tools/list`` (all pages) and stop it.

    Raises:
        UpstreamError: could not start, failed, or took longer than ``timeout`` seconds overall.
    """
    async def run() -> Introspection:
        async with Upstream.spawn(command, args, env=env, cwd=cwd, label=label) as up:
            init = await up.initialize(timeout=timeout)
            tools = await up.list_tools(timeout=timeout)
            instr = init.get("instructions")
            return Introspection(up.server_info, instr if isinstance(instr, str) else None,
                                 tools, init.get("protocolVersion"))
    try:
        return await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError:
        raise UpstreamError(f"{label or command} did not answer within {timeout:g} s") from None
