"""The CLI's way to talk to an MCP server: an asyncio façade over the threaded stdio upstream.

``undo``, ``show --live``, ``check``, ``pin``, ``init`` and ``install``'s introspection are
async code; they talk to a server through :class:`Child` (one child process) and
:class:`Upstream` (a standalone MCP client over it). Both sit on
:class:`synartesis.proxy.stdio.StdioUpstream`, the implementation the proxy itself uses: one way
to talk to a child, so what undo reads back is compared in exactly the representation the proxy
recorded (DESIGN §3). The reader thread hands answers to the event loop with
``call_soon_threadsafe``; nothing here blocks the loop except writing a frame to the child.

Contract kept from the asyncio implementation: the child gets the caller's *whole* environment
and its own process group; lines of any length; our requests use ``syn-<nonce>-<n>`` ids and
their answers never reach ``on_message``; shutdown is stdin → grace → SIGTERM → grace → SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from synartesis import __version__
from synartesis.errors import UpstreamError
from synartesis.proxy.framing import LazyFrame, LineSplitter
from synartesis.proxy.spawn import resolve_command
from synartesis.proxy.stdio import StdioUpstream
from synartesis.proxy.transport import RequestFailed

__all__ = [
    "PROTOCOL_VERSION",
    "Child",
    "Introspection",
    "LineSplitter",
    "RequestFailed",
    "Upstream",
    "introspect",
    "resolve_command",
]

PROTOCOL_VERSION = "2025-06-18"

MessageHandler = Callable[[bytes, Any], None]


class Child:
    """A running MCP server process, for async callers (see the module docstring).

    Attributes:
        stdio: the :class:`StdioUpstream` doing the work.
        closed: an :class:`asyncio.Event` set once the child's output has closed.
    """

    def __init__(self, command: str, args: list[str], stdio: StdioUpstream,
                 on_message: MessageHandler | None, loop: asyncio.AbstractEventLoop) -> None:
        self.command = command
        self.args = list(args)
        self.stdio = stdio
        self.popen: subprocess.Popen = stdio.popen
        self.label = stdio.label
        self.on_message = on_message
        self.closed = asyncio.Event()
        self.exit_code: int | None = None
        self._loop = loop
        stdio.start(self._from_reader, self._closed_from_reader)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @classmethod
    async def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str] | None = None,
                    cwd: str | None = None, capture_stderr: bool = True,
                    on_message: MessageHandler | None = None, label: str | None = None) -> Child:
        """Start ``command args`` and wire it to the running event loop.

        Args:
            env: the child's whole environment; None = this process's ``os.environ``.
            cwd: working directory; None = ours.
            capture_stderr: True (CLI) drains stderr and keeps the last lines for error
                messages, and the child dies with us (Linux); False lets it inherit our stderr.
            on_message: called on the loop with every frame that is not an answer to one of
                our own requests: ``(original bytes, parsed value or None)``.
        Raises:
            UpstreamError: the executable could not be started.
        """
        stdio = StdioUpstream.spawn(command, args, env=env, cwd=cwd, capture_stderr=capture_stderr, label=label)
        return cls(command, args, stdio, on_message, asyncio.get_running_loop())

    @classmethod
    async def adopt(cls, popen: subprocess.Popen, command: str, args: list[str], *,
                    on_message: MessageHandler | None = None, label: str | None = None) -> Child:
        """Wire an already started process (from :func:`popen_server`) to the event loop."""
        import os
        stdio = StdioUpstream(popen, label or os.path.basename(command))
        return cls(command, args, stdio, on_message, asyncio.get_running_loop())

    # -- reading (on the reader thread) ------------------------------------------------------
    def _from_reader(self, line: Any, msg: Any) -> None:
        if isinstance(msg, LazyFrame):
            msg = msg.parse()
        if self.on_message is None:
            self._default_handler(msg)
            return
        self._call_soon(self.on_message, bytes(line), msg)

    def _closed_from_reader(self) -> None:
        self._call_soon(self.closed.set)

    def _call_soon(self, fn: Callable, *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass

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

    # -- writing -----------------------------------------------------------------------
    def write_nowait(self, line: bytes) -> None:
        """Write one frame (``line`` without newline) to the child's stdin, in order.

        Raises:
            RequestFailed(kind="unsent"): the child's stdin is closed.
        """
        self.stdio.send(line)

    async def write(self, line: bytes) -> None:
        """Write one frame (see :meth:`write_nowait`)."""
        self.stdio.send(line)

    def new_id(self) -> str:
        """A fresh id in our own namespace (``syn-<nonce>-<n>``)."""
        return self.stdio.ids.next()

    async def request(self, method: str, params: dict | None = None, *,
                      timeout: float | None = 30.0, meta: dict | None = None) -> dict:
        """Send our own request; return its ``result`` object.

        Args:
            meta: merged into ``params._meta`` (2026-07-28 envelopes, idempotency keys).
            timeout: seconds; None waits until the child answers or exits.
        Raises:
            RequestFailed: kind ``error``/``timeout``/``closed``/``unsent`` (see the class).
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def resolve(outcome: Any) -> None:
            if not fut.done():
                fut.set_result(outcome)

        pending = self.stdio.submit(method, params, meta=meta,
                                    callback=lambda outcome: self._call_soon(resolve, outcome))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            self.stdio.forget(pending)
            raise RequestFailed(f"{self.label} did not answer {method} within {timeout:g} s", "timeout") from None
        return self.stdio.result_of(method, outcome)

    async def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (no id, no answer)."""
        self.stdio.notify(method, params)

    def stderr_tail(self, n: int = 4) -> list[str]:
        """The last ``n`` non-blank lines the child wrote to stderr (captured mode only)."""
        return self.stdio.stderr_tail(n)

    def describe_failure(self, what: str) -> str:
        """``what`` plus the server's last stderr lines, for error messages."""
        return self.stdio.describe_failure(what)

    # -- shutdown ----------------------------------------------------------------------
    async def close_stdin(self) -> None:
        """Close the child's stdin (the polite way to ask a stdio server to exit)."""
        await asyncio.get_running_loop().run_in_executor(None, self.stdio.close_stdin)

    def kill(self) -> None:
        """SIGKILL the child's process group now (no grace): for cleanup that cannot await."""
        self.stdio.kill()

    async def wait(self) -> int:
        """Wait for the child to exit; its exit code."""
        return await asyncio.get_running_loop().run_in_executor(None, self.popen.wait)

    async def close(self, grace: float = 2.0) -> int:
        """Shut the child down in order; return its exit code (negative = killed by signal).

        Cancelled part-way (the console's esc while its job shuts down), the group is killed
        at once before the cancellation goes on: a server is never left running.
        """
        try:
            self.exit_code = await asyncio.get_running_loop().run_in_executor(None, self.stdio.close, grace)
        except BaseException:
            self.kill()
            raise
        return self.exit_code


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
