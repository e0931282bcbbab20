"""The CLI's own MCP client: a server it starts and talks to itself, over the synchronous upstream.

``undo``, ``redo``, ``show --live``, ``check``, ``pin``, ``init`` and ``install``'s introspection
start a server and speak to it through :class:`McpClient`, which sits on
:class:`synartesis.proxy.stdio.StdioUpstream`, the implementation the proxy itself uses: one way
to talk to a child, so what undo reads back is compared in exactly the representation the proxy
recorded (DESIGN §3). A remote entry is a stdio child too: its launch line is
``synartesis remote-relay …``. No event loop: requests block the calling thread, and several
servers are handshaken at once by sending every ``initialize`` before waiting for any
(:meth:`McpClient.begin_initialize`).

Contract kept from the asyncio façade this replaces: the child gets the caller's *whole*
environment and its own process group; lines of any length; our requests use
``syn-<nonce>-<n>`` ids; server→client requests (``roots/list``, ``ping``) are answered so the
server never waits; shutdown is stdin → grace → SIGTERM → grace → SIGKILL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from synartesis import __version__
from synartesis.errors import UpstreamError
from synartesis.proxy.framing import LazyFrame
from synartesis.proxy.stdio import StdioUpstream
from synartesis.proxy.transport import RequestFailed

__all__ = ["PROTOCOL_VERSION", "Introspection", "McpClient", "RequestFailed", "introspect"]

PROTOCOL_VERSION = "2025-06-18"


class McpClient:
    """A standalone MCP client over one started server (see the module docstring).

    Attributes:
        upstream: the :class:`StdioUpstream` doing the work (thread-safe).
        label: the server's name, for messages.
        init_result: the server's InitializeResult once :meth:`initialize` succeeded.
    """

    def __init__(self, upstream: StdioUpstream) -> None:
        self.upstream = upstream
        self.label = upstream.label
        self.init_result: dict = {}
        upstream.start(self._from_server, lambda: None)

    @classmethod
    def spawn(cls, command: str, args: list[str], *, env: Mapping[str, str] | None = None,
              cwd: str | None = None, label: str | None = None) -> McpClient:
        """Start ``command args`` (stderr captured for messages; the child dies with us on
        Linux — with the *thread* that starts it, so start servers on a thread that outlives them).

        Args:
            env: the child's whole environment; None = this process's ``os.environ``.
            cwd: working directory; None = ours.
        Raises:
            UpstreamError: the executable could not be started.
        """
        return cls(StdioUpstream.spawn(command, list(args), env=env, cwd=cwd, capture_stderr=True, label=label))

    @property
    def pid(self) -> int:
        return self.upstream.pid

    def _from_server(self, line: Any, msg: Any) -> None:
        """On the reader thread: answer server→client requests so the server never waits."""
        if isinstance(msg, LazyFrame):
            msg = msg.parse()
        if not (isinstance(msg, dict) and "method" in msg and "id" in msg):
            return  # notifications (logging, progress) are not ours to act on
        if msg["method"] == "roots/list":
            reply: dict = {"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}
        elif msg["method"] == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
        try:
            self.upstream.send(json.dumps(reply).encode())
        except RequestFailed:
            pass

    # -- requests ------------------------------------------------------------------------
    def request(self, method: str, params: dict | None = None, *, timeout: float | None = 30.0,
                meta: dict | None = None) -> dict:
        """Our own request, blocking; its ``result`` object (see ``transport.Upstream.request``).

        Raises:
            RequestFailed: kind ``error``/``timeout``/``closed``/``unsent``.
        """
        return self.upstream.request(method, params, timeout=timeout, meta=meta)

    def begin_initialize(self) -> Callable[[float | None], dict]:
        """Send ``initialize`` now; return ``finish(timeout)`` that waits for the answer, sends
        ``notifications/initialized`` and returns the InitializeResult. Sending every server's
        ``initialize`` before finishing any starts them in parallel without threads.

        Raises (here or from ``finish``):
            UpstreamError: the server failed, exited or did not answer (with its stderr tail).
        """
        try:
            waiting = self.upstream.submit("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "synartesis", "version": __version__}})
        except RequestFailed as exc:
            raise self._failed("initialize", exc) from exc

        def finish(timeout: float | None = 30.0) -> dict:
            try:
                outcome = waiting.wait(timeout)
                if outcome is None:
                    self.upstream.forget(waiting)
                    raise RequestFailed(f"{self.label} did not answer initialize within {timeout:g} s", "timeout")
                result = self.upstream.result_of("initialize", outcome)
                self.upstream.notify("notifications/initialized")
            except RequestFailed as exc:
                raise self._failed("initialize", exc) from exc
            self.init_result = result
            return result
        return finish

    def initialize(self, timeout: float | None = 30.0) -> dict:
        """Do the 2025-era handshake; return the server's InitializeResult.

        Raises:
            UpstreamError: the server failed, exited or did not answer (with its stderr tail).
        """
        return self.begin_initialize()(timeout)

    def _failed(self, method: str, exc: RequestFailed) -> UpstreamError:
        return UpstreamError(self.upstream.describe_failure(f"{self.label} failed during {method}: {exc.message}"))

    @property
    def server_info(self) -> dict:
        info = self.init_result.get("serverInfo")
        return info if isinstance(info, dict) else {}

    def list_tools(self, timeout: float | None = 30.0, deadline: float | None = None) -> list[dict]:
        """Every tool the server advertises (all pages, raw objects).

        ``deadline``: a ``time.monotonic()`` instant no page may wait past.
        Raises:
            UpstreamError: the request failed.
        """
        tools: list[dict] = []
        cursor = None
        for _ in range(1000):
            params = {"cursor": cursor} if cursor else {}
            try:
                page = self.request("tools/list", params, timeout=_left(timeout, deadline))
            except RequestFailed as exc:
                raise self._failed("tools/list", exc) from exc
            tools.extend(t for t in page.get("tools", []) if isinstance(t, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools

    def call_tool(self, name: str, arguments: dict, *, timeout: float | None = 60.0,
                  meta: dict | None = None) -> dict:
        """Call a tool; the raw CallToolResult (``isError`` results are returned too).

        Raises:
            RequestFailed: no result (see :class:`RequestFailed` for the kinds).
        """
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout=timeout, meta=meta)

    def describe_failure(self, what: str) -> str:
        """``what`` plus the server's last stderr lines, for error messages."""
        return self.upstream.describe_failure(what)

    # -- shutdown ------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL the server's process group now (no grace); requests waiting on it fail
        with ``RequestFailed(kind="closed")`` as its output closes. Safe from any thread."""
        self.upstream.kill()

    def close(self, grace: float = 2.0) -> int:
        """Shut the server down in order; its exit code (negative: killed by that signal)."""
        return self.upstream.close(grace)

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _left(timeout: float | None, deadline: float | None) -> float | None:
    if deadline is None:
        return timeout
    left = max(0.0, deadline - time.monotonic())
    return left if timeout is None else min(timeout, left)


@dataclass(frozen=True)
class Introspection:
    """What a server says about itself: ``serverInfo``, ``instructions`` and its tools."""

    server_info: dict
    instructions: str | None
    tools: list[dict]
    protocol_version: str | None = None


def introspect(command: str, args: list[str], env: Mapping[str, str] | None = None,
               cwd: str | None = None, timeout: float = 20.0, label: str | None = None) -> Introspection:
    """Start a server, handshake, read ``tools/list`` (all pages) and stop it. Blocking; safe
    to run on several threads at once (each server is stopped before this returns).

    Raises:
        UpstreamError: could not start, failed, or took longer than ``timeout`` seconds overall.
    """
    deadline = time.monotonic() + timeout
    with McpClient.spawn(command, list(args), env=env, cwd=cwd, label=label) as client:
        try:
            init = client.begin_initialize()(_left(timeout, deadline))
            tools = client.list_tools(timeout, deadline)
        except UpstreamError:
            if time.monotonic() >= deadline:
                raise UpstreamError(f"{label or command} did not answer within {timeout:g} s") from None
            raise
        instr = init.get("instructions")
        return Introspection(client.server_info, instr if isinstance(instr, str) else None,
                             tools, init.get("protocolVersion"))
