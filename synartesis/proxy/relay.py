"""The stdio relay: one MCP client on our stdin/stdout, one MCP server as our child.

Contract (DESIGN §3, PROXY.md §2):
- Every line is parsed to route it; every message that is not intercepted is forwarded as its
  original bytes in both directions (notifications, progress, cancellation, resources,
  prompts, pings, unknown methods, batches without ``tools/call``, server→client requests).
- Intercepted: ``tools/call`` (the pipeline, in one ordered lane so a later write never
  overtakes an earlier one); ``initialize`` results get the Synartesis instructions added;
  ``tools/list`` results are read (never altered) to learn tool shapes for pins.
- Our own requests use ``syn-<nonce>-<n>`` ids; their answers are never forwarded.
- stdout carries protocol frames only: fd 1 is duplicated for the wire and pointed at stderr,
  so a stray print cannot corrupt the protocol.
- Shutdown: client EOF → finish queued calls → close the child's stdin → relay its output until
  it closes → 2 s → SIGTERM the group → 2 s → SIGKILL; exit with the child's code. The child
  exiting first ends the proxy with its code; calls in flight become ``unknown``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
import threading
from typing import Any

from synartesis.errors import JournalError
from synartesis.journal import Journal
from synartesis.log import log
from synartesis.policy.model import Policy, Rule
from synartesis.proxy.pipeline import CallContext, ReadOutcome, handle_call, run_read, tool_result
from synartesis.proxy.upstream import Child, LineSplitter, RequestFailed

__all__ = ["Proxy", "ProxyOptions", "INSTRUCTIONS"]

INSTRUCTIONS = (
    "These tools are guarded by Synartesis, which records every change so it can be undone later.\n\n"
    "Some actions cannot be undone. Those are held until a person approves them: the call returns "
    "an error beginning \"Synartesis is holding this call for approval\" and nothing is done. When "
    "that happens:\n"
    "  1. Tell the user plainly that the call is held and what it would do.\n"
    "  2. Give them the exact `synartesis approve …` command from the error.\n"
    "  3. Once they say they approved it, make the same call again with the same arguments. It will go through.\n"
    "If the error says the call was denied, do not retry it; ask the user what they want instead.\n"
    "Do not work around a held call by using a different tool to achieve the same thing."
)
_MODERN_KEY = "io.modelcontextprotocol/protocolVersion"


class ProxyOptions:
    """Tunables: timeouts in seconds (None = wait), the snapshot cap in bytes."""

    def __init__(self, call_timeout: float | None = None, read_timeout: float = 30.0,
                 max_snapshot_bytes: int = 8 * 1024 * 1024, grace: float = 2.0, eof_drain: float = 60.0) -> None:
        self.eof_drain = eof_drain
        self.call_timeout = call_timeout
        self.read_timeout = read_timeout
        self.max_snapshot_bytes = max_snapshot_bytes
        self.grace = grace


class _Wire:
    """Our stdout: a private duplicate of fd 1; fd 1 itself now points at stderr."""

    def __init__(self) -> None:
        self.fd = os.dup(1)
        os.dup2(2, 1)
        try:
            sys.stdout = open(1, "w", closefd=False)  # stray prints land on stderr
        except OSError:
            pass
        self.transport: asyncio.WriteTransport | None = None
        self._closed = False

    async def start(self) -> None:
        mode = os.fstat(self.fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(self.fd):
            loop = asyncio.get_running_loop()
            try:
                self.transport, _ = await loop.connect_write_pipe(
                    asyncio.Protocol, os.fdopen(self.fd, "wb", buffering=0, closefd=False))
            except (OSError, ValueError):
                self.transport = None

    def write(self, line: bytes) -> None:
        if self._closed:
            return
        data = line + b"\n"
        try:
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(data)
                return
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._closed = True

    async def close(self) -> None:
        if self.transport is not None:
            # let buffered frames out before exiting
            for _ in range(200):
                if self.transport.get_write_buffer_size() == 0:
                    break
                await asyncio.sleep(0.01)
            self.transport.close()
        try:
            os.close(self.fd)
        except OSError:
            pass
        self._closed = True


class Proxy:
    """One server behind one client (the installed form, ``proxy --server NAME -- CMD …``)."""

    def __init__(self, server: str, command: str, args: list[str], policy: Policy | None,
                 journal: Journal, options: ProxyOptions, policy_note: str | None = None,
                 popen: Any = None) -> None:
        self.server = server
        self.command = command
        self.args = args
        self.policy = policy
        self.policy_note = policy_note
        self.journal = journal
        self.options = options
        self.child: Child | None = None
        self.popen = popen  # started early by main(), before the policy and journal were loaded
        self.wire: _Wire | None = None
        self.run_id: str | None = None
        self.client_name: str | None = None
        self.modern_meta: dict | None = None
        self._init_ids: set[str] = set()
        self._list_ids: set[str] = set()
        self._inflight: dict[str, CallContext] = {}
        self._queued: dict[str, CallContext] = {}
        self._lane: asyncio.Queue[CallContext | None] = asyncio.Queue()
        self._catalog: dict[str, dict] | None = None
        self._catalog_partial: dict[str, dict] = {}
        self._pins_logged = False
        self._background: set[asyncio.Task] = set()
        self._reads = None
        self._seq = 0
        self._lane_busy = False
        self._protected: list[str] | None = None

    # -- helpers used by the pipeline ----------------------------------------------------
    def protected_paths(self) -> list[str]:
        """synartesis's own files, which no guarded call may write without approval."""
        if self._protected is None:
            from synartesis.paths import Env, synartesis_home
            paths = [str(self.journal.path), str(self.journal.path) + "-wal", str(self.journal.path) + "-shm",
                     os.path.realpath(synartesis_home(Env.current())) + os.sep]
            if self.policy is not None:
                paths.append(os.path.realpath(self.policy.path))
            self._protected = [os.path.realpath(p) + (os.sep if p.endswith(os.sep) else "") for p in paths]
        return self._protected

    def next_seq(self) -> int:
        """The next seq of this proxy's run (the proxy is the only writer of its run)."""
        self._seq += 1
        return self._seq

    def record_read(self, item: dict) -> None:
        """Journal a finished read on the reader thread (started on first use)."""
        if self._reads is None:
            from synartesis.proxy.recorder import ReadRecorder
            self._reads = ReadRecorder(self.journal.path)
        self._reads.add(item)

    def track(self, task: asyncio.Task) -> None:
        """Keep a background task alive until it finishes (asyncio holds only weak refs)."""
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def route(self, exposed: str) -> tuple[str, str]:
        """(server, upstream tool name); ``SERVER__x`` with our own name unwraps to ``x``."""
        prefix = self.server + "__"
        if exposed.startswith(prefix) and len(exposed) > len(prefix):
            return self.server, exposed[len(prefix):]
        return self.server, exposed

    def policy_rule(self, server: str, tool: str, args: Any) -> Rule:
        if self.policy is None:
            return Rule(match=f"{server}.{tool}", cls="irreversible", gate="always", matched=False,
                        note=self.policy_note or "there is no policy, so every tool is held")
        return self.policy.rule_for(server, tool, args)

    def ensure_run(self) -> str:
        if self.run_id is None:
            self.run_id = self.journal.begin_run(self.client_name, self.launch_lines())
            self.journal.own_run(self.run_id, self.next_seq)
            log("info", "run started", run=self.run_id, servers=list(self.launch_lines()), client=self.client_name)
        return self.run_id

    def launch_lines(self) -> dict:
        """{server: {command, args, cwd}}: recorded with the run so undo starts the same thing."""
        return {self.server: {"command": self.command, "args": self.args, "cwd": os.getcwd()}}

    async def reply_error_result(self, ctx: CallContext, text: str) -> None:
        modern = self._is_modern(ctx.msg)
        body = {"jsonrpc": "2.0", "id": ctx.msg.get("id"), "result": tool_result(text, modern)}
        self._send_client(body)

    async def reply_protocol_error(self, ctx: CallContext, code: int, message: str) -> None:
        self._send_client({"jsonrpc": "2.0", "id": ctx.msg.get("id"), "error": {"code": code, "message": message}})

    def _send_client(self, body: dict) -> None:
        assert self.wire is not None
        self.wire.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))

    async def forward_to_child(self, ctx: CallContext) -> asyncio.Future | None:
        """Forward the client's request (original bytes unless the name was unwrapped).

        Returns a future resolved with the server's response message (None if cancelled);
        None when the request could not be written (certainly not applied).
        """
        assert self.child is not None
        line = ctx.line
        params = ctx.msg.get("params")
        if isinstance(params, dict) and isinstance(params.get("name"), str):
            _, tool = self.route(params["name"])
            if tool != params["name"]:
                msg = dict(ctx.msg)
                msg["params"] = {**params, "name": tool}
                line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        ctx.response = asyncio.get_running_loop().create_future()
        self._inflight[ctx.id_key] = ctx
        try:
            await self.child.write(line)
        except RequestFailed:
            self._inflight.pop(ctx.id_key, None)
            return None
        ctx.forwarded = True
        return ctx.response

    async def await_response(self, fut: asyncio.Future) -> dict | None:
        """The response to a forwarded call; RequestFailed(timeout/closed) when none came."""
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.options.call_timeout)
        except asyncio.TimeoutError:
            raise RequestFailed(f"no answer within {self.options.call_timeout:g} s", "timeout") from None

    async def read(self, read: dict) -> ReadOutcome:
        """Run one of our reads (pre-read, post-read) on the server."""
        assert self.child is not None
        if read["server"] != self.server:
            return ReadOutcome("failed", reason=f"server {read['server']} is not connected to this proxy")
        return await run_read(self.child.request, read, timeout=self.options.read_timeout,
                              max_bytes=self.options.max_snapshot_bytes, meta=self.modern_meta)

    async def pin_problem(self, server: str) -> str | None:
        """Why calls of ``server`` are refused because of pins (None when fine or unpinned)."""
        spec = self.policy.servers.get(server) if self.policy else None
        if spec is None or not spec.pins:
            return None
        if self._catalog is None:
            await self._fetch_catalog()
        from synartesis.pins import check_pins  # stdlib only
        try:
            shapes = self.journal.shapes(spec.pins.values())
        except JournalError:
            shapes = {}
        problem = check_pins(server, spec.pins, self._catalog or {}, self.policy, cli=_cli(), shapes=shapes)
        if problem and not self._pins_logged:
            self._pins_logged = True
            log("error", "tool shapes changed since they were pinned; every call is refused", server=server,
                detail=problem)
        return problem

    async def _fetch_catalog(self) -> None:
        assert self.child is not None
        tools: dict[str, dict] = {}
        cursor = None
        try:
            for _ in range(1000):
                page = await self.child.request("tools/list", {"cursor": cursor} if cursor else {},
                                                timeout=self.options.read_timeout, meta=self.modern_meta)
                for t in page.get("tools", []):
                    if isinstance(t, dict) and isinstance(t.get("name"), str):
                        tools[t["name"]] = t
                cursor = page.get("nextCursor")
                if not cursor:
                    break
        except RequestFailed as exc:
            log("warn", "could not read tools/list for pins", error=exc.message)
            return
        self._catalog = tools
        self._remember(tools)

    def _is_modern(self, msg: Any) -> bool:
        params = msg.get("params") if isinstance(msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and _MODERN_KEY in meta

    # -- client → server -------------------------------------------------------------------
    async def on_client_line(self, line: bytes) -> None:
        assert self.child is not None
        if not line.strip():
            return
        msg = parse_frame(line)
        if msg is _UNPARSEABLE:
            # Never forward what we cannot read: a server decoding it leniently (bad UTF-8
            # replaced, deep nesting) could run a tools/call that bypassed the gate and journal.
            log("warn", "refused an unparseable line from the client", bytes=len(line))
            self._send_client({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32700, "message": "Parse error: synartesis forwards only valid UTF-8 JSON"}})
            return
        if isinstance(msg, list):
            await self._client_batch(line, msg)
            return
        if not isinstance(msg, dict):
            await self._forward_raw(line)
            return
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            self._note_modern(msg)
            if method == "tools/call":
                ctx = CallContext(line=line, msg=msg, id_key=_id_key(msg["id"]))
                if self._lane_idle() and self._plain_read(msg):
                    await handle_call(self, ctx)  # nothing ahead of it, nothing to capture: no lane hop
                    return
                self._queued[ctx.id_key] = ctx
                self._lane.put_nowait(ctx)
                return
            if method == "initialize":
                self._init_ids.add(_id_key(msg["id"]))
                params = msg.get("params")
                info = params.get("clientInfo") if isinstance(params, dict) else None
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    self.client_name = info["name"]
            elif method == "tools/list":
                self._list_ids.add(_id_key(msg["id"]))
        elif method == "tools/call":
            # a tools/call without an id cannot be answered or journalled; servers must ignore
            # it, and one that did not would run it unguarded: it is not forwarded
            log("warn", "dropped a tools/call notification (no id)")
            return
        elif method == "notifications/initialized":
            await self._forward_raw(line)
            try:
                self.ensure_run()
            except JournalError as exc:
                log("error", "could not start a run", error=str(exc))
            spec = self.policy.servers.get(self.server) if self.policy else None
            if spec is not None and spec.pins:
                # say at start (stderr) when tool shapes moved since they were pinned
                task = asyncio.ensure_future(self.pin_problem(self.server))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            return
        elif method == "notifications/cancelled":
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            if rid is not None:
                key = _id_key(rid)
                queued = self._queued.get(key)
                if queued is not None and not queued.forwarded:
                    queued.cancelled = True  # never sent: drop the call and the cancel
                    return
                ctx = self._inflight.get(key)
                if ctx is not None and ctx.response is not None and not ctx.response.done():
                    ctx.cancelled = True
                    ctx.response.set_result(None)
        await self._forward_raw(line)

    def _note_modern(self, msg: dict) -> None:
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and _MODERN_KEY in meta:
            self.modern_meta = {k: v for k, v in meta.items()
                                if k.startswith("io.modelcontextprotocol/") and not k.endswith("/logLevel")}
            info = meta.get("io.modelcontextprotocol/clientInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str) and not self.client_name:
                self.client_name = info["name"]

    async def _client_batch(self, line: bytes, batch: list) -> None:
        calls = [m for m in batch if isinstance(m, dict) and m.get("method") == "tools/call"]
        if not calls:
            await self._forward_raw(line)
            return
        # A tools/call inside a batch cannot be journalled in order; refuse the batch as a whole.
        errors = [{"jsonrpc": "2.0", "id": m.get("id"), "error": {
            "code": -32600, "message": "synartesis: send tools/call on its own, not inside a batch, so it can be journalled"}}
            for m in batch if isinstance(m, dict) and "id" in m and "method" in m]
        if errors:
            assert self.wire is not None
            self.wire.write(json.dumps(errors, separators=(",", ":")).encode())

    async def _forward_raw(self, line: bytes) -> None:
        assert self.child is not None
        try:
            await self.child.write(line)
        except RequestFailed:
            pass

    # -- server → client -------------------------------------------------------------------
    def on_server_line(self, line: bytes, msg: Any) -> None:
        assert self.wire is not None
        if isinstance(msg, dict) and "method" not in msg and "id" in msg:
            key = _id_key(msg["id"])
            ctx = self._inflight.pop(key, None)
            if ctx is not None:
                self.wire.write(line)
                if ctx.response is not None and not ctx.response.done():
                    ctx.response.set_result(msg)
                return
            if key in self._init_ids:
                self._init_ids.discard(key)
                self.wire.write(self._with_instructions(line, msg))
                return
            if key in self._list_ids:
                self._list_ids.discard(key)
                self._observe_tools(msg)
        self.wire.write(line)

    def _with_instructions(self, line: bytes, msg: dict) -> bytes:
        result = msg.get("result")
        if not isinstance(result, dict):
            return line
        theirs = result.get("instructions")
        result = dict(result)
        result["instructions"] = INSTRUCTIONS + (f"\n\n{theirs}" if isinstance(theirs, str) and theirs else "")
        out = dict(msg)
        out["result"] = result
        return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")

    def _observe_tools(self, msg: dict) -> None:
        result = msg.get("result")
        if not isinstance(result, dict):
            return
        for t in result.get("tools") or []:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                self._catalog_partial[t["name"]] = t
        if not result.get("nextCursor"):
            self._catalog, self._catalog_partial = self._catalog_partial, {}
            self._remember(self._catalog)

    def _remember(self, catalog: dict[str, dict]) -> None:
        """Keep each tool shape by fingerprint, so a later pin mismatch can say what changed."""
        try:
            from synartesis.pins import fingerprint
            self.journal.remember_shapes(self.server, {fingerprint(t): t for t in catalog.values()})
        except (JournalError, ImportError) as exc:
            log("warn", "could not record tool shapes", error=str(exc))

    # -- lanes and lifecycle -------------------------------------------------------------
    def _lane_idle(self) -> bool:
        return self._lane.empty() and not self._lane_busy

    def _plain_read(self, msg: dict) -> bool:
        """A call whose rule is readonly with nothing to read before or after it, and no pins."""
        params = msg.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return False
        try:
            server, tool = self.route(params["name"])
        except LookupError:
            return False
        spec = self.policy.servers.get(server) if self.policy else None
        if spec is None or spec.pins:
            return False
        rule = self.policy_rule(server, tool, params.get("arguments") or {})
        return rule.cls == "readonly" and rule.snapshot is None and rule.verify is None and rule.gate == "never"

    async def _lane_worker(self) -> None:
        while True:
            ctx = await self._lane.get()
            self._lane_busy = True
            try:
                if ctx is None:
                    return
                self._queued.pop(ctx.id_key, None)
                if ctx.cancelled:
                    continue
                await handle_call(self, ctx)
            except Exception as exc:  # never let one call kill the relay
                log("error", "internal error in tools/call", error=repr(exc))
                if ctx is not None and not ctx.forwarded:
                    await self.reply_protocol_error(ctx, -32603, f"synartesis internal error: {exc}")
            finally:
                self._lane_busy = False
                self._lane.task_done()

    async def run(self) -> int:
        """Relay until the client or the server goes away; return the exit code."""
        loop = asyncio.get_running_loop()
        self.wire = _Wire()
        await self.wire.start()
        if self.popen is not None:
            self.child = await Child.adopt(self.popen, self.command, self.args,
                                           on_message=self.on_server_line, label=self.server)
        else:
            self.child = await Child.spawn(self.command, self.args, capture_stderr=False,
                                           on_message=self.on_server_line, label=self.server)
        lane = asyncio.ensure_future(self._lane_worker())
        client_done = asyncio.ensure_future(self._read_client())
        child_done = asyncio.ensure_future(self.child.closed.wait())
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
            if sig is not None:
                try:
                    loop.add_signal_handler(sig, stop.set)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        stop_wait = asyncio.ensure_future(stop.wait())
        await asyncio.wait({client_done, child_done, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if client_done.done() and not child_done.done() and not stop.is_set():
            # client EOF: answer everything already received before closing the server
            # (bounded: an answer the server never sends must not keep the proxy alive forever)
            drain = asyncio.ensure_future(self._lane.join())
            await asyncio.wait({drain, child_done, stop_wait}, timeout=self.options.eof_drain,
                               return_when=asyncio.FIRST_COMPLETED)
            drain.cancel()
        for t in (client_done, stop_wait, child_done):
            t.cancel()
        [code] = await self._shutdown(lane, [self.child.close(grace=self.options.grace)])
        return code if code >= 0 else 128 - code

    async def _shutdown(self, lane: asyncio.Task, closers: list) -> list[int]:
        """After relaying stops: close the children, settle what was in flight (``unknown``),
        let the lane and background journalling finish, close the run and our stdout."""
        self._lane.put_nowait(None)
        codes = list(await asyncio.gather(*closers))
        for ctx in list(self._inflight.values()):
            if ctx.response is not None and not ctx.response.done():
                ctx.response.set_exception(RequestFailed("the server exited before answering", "closed"))
        if self._background:
            await asyncio.wait(set(self._background), timeout=5.0)
        try:
            await asyncio.wait_for(asyncio.gather(lane, return_exceptions=True), 5.0)
        except asyncio.TimeoutError:
            lane.cancel()
        if self._reads is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._reads.close)
        if self.run_id is not None:
            try:
                self.journal.end_run(self.run_id)
            except JournalError as exc:
                log("error", "could not close the run", error=str(exc))
        assert self.wire is not None
        await self.wire.close()
        return codes

    async def _read_client(self) -> None:
        """Read our stdin until EOF, handing each line over in order."""
        splitter = LineSplitter()
        async for chunk in self._client_chunks():
            for line in splitter.feed(chunk):
                await self.on_client_line(line)
        rest = splitter.rest()
        if rest.strip():
            await self.on_client_line(rest)

    async def _client_chunks(self):
        """Chunks of our stdin: through the event loop for pipes, sockets and terminals; a
        reader thread for regular files (and Windows, where the loop cannot watch stdin)."""
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
        # pipes, sockets and terminals can be watched by the loop (/dev/null cannot)
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd):
            reader = asyncio.StreamReader(limit=1 << 30)
            try:
                await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                             os.fdopen(fd, "rb", buffering=0, closefd=False))
            except (OSError, ValueError):
                reader = None
            if reader is not None:
                while chunk := await reader.read(1 << 16):
                    yield chunk
                return
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        def pump() -> None:
            while True:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    data = b""
                loop.call_soon_threadsafe(queue.put_nowait, data or None)
                if not data:
                    return

        threading.Thread(target=pump, daemon=True).start()
        while (chunk := await queue.get()) is not None:
            yield chunk


_UNPARSEABLE = object()


def parse_frame(line: bytes) -> Any:
    """A JSON-RPC frame parsed strictly (UTF-8, JSON), or ``_UNPARSEABLE``."""
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return _UNPARSEABLE


def _id_key(value: Any) -> str:
    """A JSON-RPC id as a dictionary key. Numbers compare as the server will answer them:
    ``1`` and ``1.0`` are one id, and integers beyond 2**53 as a JavaScript server rounds them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return "n:" + repr(float(value))
        except OverflowError:
            return "n:" + str(value)
    return json.dumps(value, sort_keys=True)


def _cli() -> str:
    from synartesis.proxy.payload import cli_command
    return cli_command()
