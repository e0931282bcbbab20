"""The MCP side: one mcp SDK ``ClientSession`` per server, each through ``synartesis proxy``.

A :class:`ServerLink` starts the wrapped command line (:func:`synartesis.services.wrapped.proxy_launch`)
over stdio, initialises, lists the tools, and then only relays ``tools/call``: the proxy
classifies, journals and gates every call. The proxy's stderr (JSON lines) is read on a thread:
its ``run started`` line names the journal run this connection writes to, and its last lines
explain a proxy that exits (a malformed policy, a server that does not start).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from synartesis.services.wrapped import ProxyLaunch

__all__ = ["ServerLink", "LinkError"]


class LinkError(Exception):
    """A server could not be started or stopped answering; the message says why."""


class ServerLink:
    """One proxied server connection (owned by one conversation).

    Args:
        launch: the wrapped launch.
        client_name: the ``clientInfo.name`` sent in ``initialize`` (the proxy labels its run
            with it: the conversation's title).
        on_run: called on the event loop with a run id when the proxy starts one.
    """

    def __init__(self, launch: "ProxyLaunch", client_name: str, on_run: Callable[[str], None] | None = None) -> None:
        self.launch = launch
        self.server = launch.server
        self.client_name = client_name
        self.on_run = on_run
        self.tools: list[Any] = []
        self.run_ids: list[str] = []
        self.tail: collections.deque[str] = collections.deque(maxlen=20)
        self._session: Any = None
        self._task: asyncio.Task | None = None
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- life cycle ------------------------------------------------------------------------
    async def start(self, timeout: float = 60.0) -> None:
        """Start the proxy, ``initialize``, ``tools/list``.

        Raises:
            LinkError: it exited or did not answer within ``timeout`` seconds (with its last log lines).
        """
        self._loop = asyncio.get_running_loop()
        self._ready = self._loop.create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._main(), name=f"link-{self.server}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except asyncio.TimeoutError:
            await self.close()
            raise LinkError(f"{self.server} did not answer within {timeout:g} s{self._why()}") from None
        except LinkError:
            await self.close()
            raise

    def _why(self) -> str:
        lines = []
        for raw in self.tail:
            try:
                rec = json.loads(raw)
                lines.append(str(rec.get("msg", "")) + (f": {rec['error']}" if rec.get("error") else ""))
            except ValueError:
                lines.append(raw)
        return ("; the proxy said: " + " | ".join(lines[-4:])) if lines else ""

    async def _main(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.types import Implementation

        from synartesis import __version__

        rfd, wfd = os.pipe()
        errlog = os.fdopen(wfd, "w")
        threading.Thread(target=self._read_stderr, args=(rfd,), daemon=True, name=f"stderr-{self.server}").start()
        params = StdioServerParameters(command=self.launch.argv[0], args=self.launch.argv[1:],
                                       env=self.launch.env, cwd=self.launch.cwd)
        assert self._ready is not None and self._stop is not None
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                errlog.close()  # the proxy holds its own copy; ours would keep the reader from EOF
                async with ClientSession(read, write, client_info=Implementation(name=self.client_name,
                                                                                 version=__version__)) as session:
                    await session.initialize()
                    tools, cursor = [], None
                    while True:
                        page = await session.list_tools(params=_cursor(cursor)) if cursor else await session.list_tools()
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    self.tools = tools
                    self._session = session
                    if not self._ready.done():
                        self._ready.set_result(None)
                    await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits, never raised into the loop
            if not self._ready.done():
                self._ready.set_exception(LinkError(f"{self.server} could not be started: "
                                                    f"{_describe(exc)}{self._why()}"))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None
            if not errlog.closed:
                errlog.close()

    def _read_stderr(self, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                self.tail.append(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("msg") == "run started" and isinstance(rec.get("run"), str):
                    run = rec["run"]
                    if self._loop is not None:
                        self._loop.call_soon_threadsafe(self._add_run, run)

    def _add_run(self, run: str) -> None:
        if run not in self.run_ids:
            self.run_ids.append(run)
            if self.on_run:
                self.on_run(run)

    @property
    def alive(self) -> bool:
        return self._session is not None and self._task is not None and not self._task.done()

    async def close(self, timeout: float = 10.0) -> None:
        """End the connection: stdin closes, the proxy ends its run and exits (the SDK kills it
        after its grace period). Waits until the task is done."""
        if self._stop is not None:
            self._stop.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except (asyncio.TimeoutError, Exception):
                self._task.cancel()
                try:
                    await self._task
                except BaseException:  # noqa: BLE001
                    pass

    # -- calls -----------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict) -> dict:
        """``tools/call`` through the proxy; the CallToolResult as a JSON dict.

        Raises:
            LinkError: the connection is gone or the call failed at the protocol level.
        """
        session = self._session
        if session is None:
            raise LinkError(f"{self.server} is not connected{self._why()}")
        try:
            result = await session.call_tool(tool, arguments)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise LinkError(f"{self.server}.{tool} failed: {_describe(exc)}") from None
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def _cursor(cursor: str):
    from mcp.types import PaginatedRequestParams
    return PaginatedRequestParams(cursor=cursor)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return str(exc) or type(exc).__name__
