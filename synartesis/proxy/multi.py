"""The policy form with two or more servers: one client, several children, names prefixed.

``synartesis proxy [--manifest P]`` starts every server of the policy and exposes each tool
and prompt as ``SERVER__name`` (``__`` because clients restrict names to ``[A-Za-z0-9_-]``;
reference-spec §4.3). ``initialize``, ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list``, ``ping`` and ``logging/setLevel`` are answered by the proxy from
the children's answers; ``tools/call`` goes through the same pipeline as the single-server
form; other requests are routed by name prefix or resource URI; server→client requests get ids
of our own so two children cannot collide, and the client's answer is mapped back.
Only the 2025 protocol era (with ``initialize``) is supported in this form.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from typing import Any

from synartesis import __version__
from synartesis.journal import Journal
from synartesis.policy.model import Policy
from synartesis.proxy.pipeline import CallContext, ReadOutcome, run_read
from synartesis.proxy.relay import _UNPARSEABLE, INSTRUCTIONS, Proxy, ProxyOptions, _id_key, _Wire, parse_frame
from synartesis.proxy.upstream import Child, RequestFailed

__all__ = ["MultiProxy", "ServerLaunch"]


class RouteError(LookupError):
    pass


class ServerLaunch:
    def __init__(self, name: str, command: str, args: list[str], env: dict | None, cwd: str | None) -> None:
        self.name, self.command, self.args, self.env, self.cwd = name, command, args, env, cwd


class MultiProxy(Proxy):
    """Several servers behind one client (see module docstring)."""

    def __init__(self, launches: list[ServerLaunch], policy: Policy, journal: Journal, options: ProxyOptions) -> None:
        super().__init__("", "", [], policy, journal, options)
        self.launches = {launch.name: launch for launch in launches}
        self.children: dict[str, Child] = {}
        self.capabilities: dict[str, dict] = {}
        self._owner: dict[str, str] = {}  # client request id → server it went to
        self._server_requests: dict[str, tuple[str, Any]] = {}
        self._next_server_request = 0
        self._catalogs: dict[str, dict[str, dict]] = {}
        self._uri_owner: dict[str, str] = {}

    # -- routing ---------------------------------------------------------------------------
    def route(self, exposed: str) -> tuple[str, str]:
        for name in sorted(self.children, key=len, reverse=True):
            prefix = name + "__"
            if exposed.startswith(prefix) and len(exposed) > len(prefix):
                return name, exposed[len(prefix):]
        raise RouteError(f"no configured server provides tool {exposed}")

    def launch_lines(self) -> dict:
        return {n: {"command": s.command, "args": s.args, "cwd": s.cwd or os.getcwd()} for n, s in self.launches.items()}

    async def forward_to_child(self, ctx: CallContext) -> asyncio.Future | None:
        params = ctx.msg.get("params") or {}
        server, tool = self.route(params["name"])
        msg = dict(ctx.msg)
        msg["params"] = {**params, "name": tool}
        ctx.response = asyncio.get_running_loop().create_future()
        self._inflight[ctx.id_key] = ctx
        self._owner[ctx.id_key] = server
        try:
            await self.children[server].write(_dump(msg))
        except RequestFailed:
            self._inflight.pop(ctx.id_key, None)
            return None
        ctx.forwarded = True
        return ctx.response

    async def read(self, read: dict) -> ReadOutcome:
        child = self.children.get(read["server"])
        if child is None:
            return ReadOutcome("failed", reason=f"server {read['server']} is not connected")
        return await run_read(child.request, read, timeout=self.options.read_timeout,
                              max_bytes=self.options.max_snapshot_bytes)

    async def pin_problem(self, server: str) -> str | None:
        spec = self.policy.servers.get(server) if self.policy else None
        if spec is None or not spec.pins:
            return None
        if server not in self._catalogs:
            await self._list_all(server, "tools/list", "tools")
        from synartesis.pins import check_pins
        from synartesis.proxy.payload import cli_command
        return check_pins(server, spec.pins, self._catalogs.get(server, {}), self.policy, cli=cli_command(),
                          shapes=self.journal.shapes(spec.pins.values()))

    # -- client → servers ----------------------------------------------------------------
    async def on_client_line(self, line: bytes) -> None:
        msg = parse_frame(line)
        if msg is _UNPARSEABLE:
            self._error(None, -32700, "Parse error: synartesis forwards only valid UTF-8 JSON")
            return
        if isinstance(msg, list):
            errors = [{"jsonrpc": "2.0", "id": m.get("id"), "error": {"code": -32600, "message":
                      "synartesis: batches are not supported when several servers share one proxy"}}
                      for m in msg if isinstance(m, dict) and "id" in m and "method" in m]
            if errors:
                assert self.wire is not None
                self.wire.write(json.dumps(errors).encode())
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method is None and "id" in msg:  # the client answers a server→client request
            back = self._server_requests.pop(_id_key(msg["id"]), None)
            if back is not None:
                server, original = back
                await self._write(server, _dump({**msg, "id": original}))
            return
        if method is not None and "id" in msg:
            await self._client_request(line, msg, method)
            return
        if method == "notifications/initialized":
            for name in self.children:
                await self._write(name, line)
            self.ensure_run()
        elif method == "notifications/cancelled":
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            key = _id_key(rid)
            queued = self._queued.get(key)
            if queued is not None and not queued.forwarded:
                queued.cancelled = True
                return
            ctx = self._inflight.get(key)
            if ctx is not None and ctx.response is not None and not ctx.response.done():
                ctx.cancelled = True
                ctx.response.set_result(None)
            if key in self._owner:
                await self._write(self._owner[key], line)
        else:
            for name in self.children:
                await self._write(name, line)

    async def _client_request(self, line: bytes, msg: dict, method: str) -> None:
        mid = msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        try:
            if method == "initialize":
                info = params.get("clientInfo")
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    self.client_name = info["name"]
                self._reply(mid, await self._initialize_all(params))
            elif method == "ping":
                self._reply(mid, {})
            elif method == "tools/call":
                name = params.get("name")
                if not isinstance(name, str):
                    raise RouteError("tools/call needs a tool name")
                self.route(name)
                ctx = CallContext(line=line, msg=msg, id_key=_id_key(mid))
                self._queued[ctx.id_key] = ctx
                self._lane.put_nowait(ctx)
            elif method == "tools/list":
                self._reply(mid, {"tools": await self._aggregate("tools/list", "tools", "tools", prefix=True)})
            elif method == "prompts/list":
                self._reply(mid, {"prompts": await self._aggregate("prompts/list", "prompts", "prompts", prefix=True)})
            elif method == "resources/list":
                self._reply(mid, {"resources": await self._aggregate("resources/list", "resources", "resources")})
            elif method == "resources/templates/list":
                self._reply(mid, {"resourceTemplates": await self._aggregate(
                    "resources/templates/list", "resourceTemplates", "resources")})
            elif method in ("prompts/get",):
                server, name = self.route(str(params.get("name")))
                await self._route_request(server, msg, {**params, "name": name})
            elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
                await self._route_request(self._resource_owner(str(params.get("uri"))), msg, params)
            elif method == "completion/complete":
                ref = params.get("ref") or {}
                if ref.get("type") == "ref/prompt":
                    server, name = self.route(str(ref.get("name")))
                    await self._route_request(server, msg, {**params, "ref": {**ref, "name": name}})
                else:
                    await self._route_request(self._resource_owner(str(ref.get("uri"))), msg, params)
            elif method == "logging/setLevel":
                for name, caps in self.capabilities.items():
                    if "logging" in caps:
                        await self.children[name].request(method, params, timeout=self.options.read_timeout)
                self._reply(mid, {})
            else:
                self._error(mid, -32601, "Method not found")
        except RouteError as exc:
            self._error(mid, -32602, str(exc))
        except RequestFailed as exc:
            self._error(mid, -32603, f"synartesis: {exc.message}")

    async def _route_request(self, server: str, msg: dict, params: dict) -> None:
        self._owner[_id_key(msg["id"])] = server
        await self._write(server, _dump({**msg, "params": params}))

    def _resource_owner(self, uri: str) -> str:
        if uri in self._uri_owner:
            return self._uri_owner[uri]
        scheme = uri.split(":", 1)[0]
        for name, caps in self.capabilities.items():
            if "resources" in caps and any(u.split(":", 1)[0] == scheme for u, o in self._uri_owner.items() if o == name):
                return name
        for name, caps in self.capabilities.items():
            if "resources" in caps:
                return name
        raise RouteError(f"no configured server provides URI {uri}")

    async def _initialize_all(self, params: dict) -> dict:
        results = await asyncio.gather(*(c.request("initialize", params, timeout=self.options.read_timeout)
                                         for c in self.children.values()))
        merged: dict[str, Any] = {}
        instructions = [INSTRUCTIONS]
        version = None
        for name, result in zip(self.children, results):
            caps = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
            self.capabilities[name] = caps
            for key, value in caps.items():
                if isinstance(value, dict) and isinstance(merged.get(key), dict):
                    merged[key] = {**merged[key], **value}
                else:
                    merged[key] = value
            if isinstance(result.get("instructions"), str) and result["instructions"]:
                instructions.append(f"Tools prefixed {name}__:\n{result['instructions']}")
            version = version or result.get("protocolVersion")
        return {"protocolVersion": version or params.get("protocolVersion"), "capabilities": merged,
                "serverInfo": {"name": "synartesis", "version": __version__},
                "instructions": "\n\n".join(instructions)}

    async def _list_all(self, server: str, method: str, key: str) -> list[dict]:
        items: list[dict] = []
        cursor = None
        for _ in range(1000):
            page = await self.children[server].request(method, {"cursor": cursor} if cursor else {},
                                                       timeout=self.options.read_timeout)
            items.extend(i for i in page.get(key, []) if isinstance(i, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        if method == "tools/list":
            self._catalogs[server] = {t["name"]: t for t in items if isinstance(t.get("name"), str)}
        return items

    async def _aggregate(self, method: str, key: str, capability: str, prefix: bool = False) -> list[dict]:
        out: list[dict] = []
        for name, caps in self.capabilities.items():
            if capability not in caps:
                continue
            for item in await self._list_all(name, method, key):
                if prefix and isinstance(item.get("name"), str):
                    item = {**item, "name": f"{name}__{item['name']}"}
                if "uri" in item and isinstance(item["uri"], str):
                    self._uri_owner.setdefault(item["uri"], name)
                out.append(item)
        return out

    def _reply(self, mid: Any, result: dict) -> None:
        self._send_client({"jsonrpc": "2.0", "id": mid, "result": result})

    def _error(self, mid: Any, code: int, message: str) -> None:
        self._send_client({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})

    async def _write(self, server: str, line: bytes) -> None:
        try:
            await self.children[server].write(line)
        except RequestFailed:
            pass

    # -- servers → client ----------------------------------------------------------------
    def on_child_line(self, server: str, line: bytes, msg: Any) -> None:
        assert self.wire is not None
        if not isinstance(msg, dict):
            return
        if "method" not in msg and "id" in msg:
            key = _id_key(msg["id"])
            self._owner.pop(key, None)
            ctx = self._inflight.pop(key, None)
            self.wire.write(line)
            if ctx is not None and ctx.response is not None and not ctx.response.done():
                ctx.response.set_result(msg)
            return
        if "method" in msg and "id" in msg:  # a server→client request: ids of our own
            self._next_server_request += 1
            ours = f"syn-srv-{self._next_server_request}"
            self._server_requests[_id_key(ours)] = (server, msg["id"])
            self.wire.write(_dump({**msg, "id": ours}))
            return
        self.wire.write(line)

    async def run(self) -> int:
        self.wire = _Wire()
        await self.wire.start()
        for name, launch in self.launches.items():
            self.children[name] = await Child.spawn(launch.command, launch.args, env=launch.env, cwd=launch.cwd,
                                                    capture_stderr=False, label=name,
                                                    on_message=functools.partial(self.on_child_line, name))
        lane = asyncio.ensure_future(self._lane_worker())
        client_done = asyncio.ensure_future(self._read_client())
        any_child = [asyncio.ensure_future(c.closed.wait()) for c in self.children.values()]
        await asyncio.wait({client_done, *any_child}, return_when=asyncio.FIRST_COMPLETED)
        if client_done.done():
            drain = asyncio.ensure_future(self._lane.join())
            await asyncio.wait({drain, *any_child}, timeout=self.options.eof_drain, return_when=asyncio.FIRST_COMPLETED)
            drain.cancel()
        client_done.cancel()
        for t in any_child:
            t.cancel()
        codes = await self._shutdown(lane, [c.close(grace=self.options.grace) for c in self.children.values()])
        return max((c if c >= 0 else 128 - c) for c in codes) if codes else 0


def _dump(msg: Any) -> bytes:
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
