"""The policy form with two or more servers: one client, several children, names prefixed.

``synartesis proxy [--manifest P]`` starts every server of the policy and exposes each tool
and prompt as ``SERVER__name`` (``__`` because clients restrict names to ``[A-Za-z0-9_-]``;
reference-spec §4.3). ``initialize``, ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list``, ``ping`` and ``logging/setLevel`` are answered by the proxy from
the children's answers; ``tools/call`` goes through the same pipeline and lane as the
single-server form; other requests are routed by name prefix or resource URI; server→client
requests get ids of our own so two children cannot collide, and the client's answer is mapped
back. Only the 2025 protocol era (with ``initialize``) is supported in this form.

Same engine as :mod:`synartesis.proxy.engine` (threads, blocking I/O); the requests the proxy
answers itself block the client reader while the children answer, as a client talking to one
server would wait.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from synartesis import __version__
from synartesis.log import log
from synartesis.policy.model import Policy
from synartesis.proxy.call import CallContext
from synartesis.proxy.engine import INSTRUCTIONS, Engine, EngineOptions, batch_refusal, id_key, server_process
from synartesis.proxy.framing import INVALID, NOT_RESPONSE, LazyFrame, batch_items, dump, parse, refusal, with_id
from synartesis.proxy.pipeline import ReadOutcome, run_read_sync, start_read
from synartesis.proxy.stdio import StdioUpstream
from synartesis.proxy.transport import RequestFailed, Upstream

__all__ = ["MultiEngine", "RouteError", "ServerLaunch"]


class RouteError(LookupError):
    """No configured server provides the tool, prompt or resource asked for."""


class ServerLaunch:
    """How to start one server of the policy: command, args, env (whole), cwd."""

    def __init__(self, name: str, command: str, args: list[str], env: dict | None, cwd: str | None) -> None:
        self.name, self.command, self.args, self.env, self.cwd = name, command, args, env, cwd


class MultiEngine(Engine):
    """Several servers behind one client (see the module docstring)."""

    def __init__(self, launches: list[ServerLaunch], send_to_client: Any, *, policy: Policy,
                 journal_path: Any, options: EngineOptions, protected: list[str] | None = None,
                 saga_hook: Any = None) -> None:
        self.launches = {launch.name: launch for launch in launches}
        self.upstreams: dict[str, Upstream] = {}
        super().__init__("", _NoUpstream(), send_to_client, policy=policy, journal_path=journal_path,
                         options=options, protected=protected, saga_hook=saga_hook)
        self.capabilities: dict[str, dict] = {}
        self._owner: dict[str, str] = {}  # client request id → server it went to
        self._server_requests: dict[str, tuple[str, Any]] = {}
        self._next_server_request = 0
        self._catalogs: dict[str, dict[str, dict]] = {}
        self._uri_owner: dict[str, str] = {}
        self._srv_lock = threading.Lock()

    # -- routing ---------------------------------------------------------------------------
    def route(self, exposed: str) -> tuple[str, str]:
        for name in sorted(self.launches, key=len, reverse=True):
            prefix = name + "__"
            if exposed.startswith(prefix) and len(exposed) > len(prefix):
                return name, exposed[len(prefix):]
        raise RouteError(f"no configured server provides tool {exposed}")

    def launch_lines(self) -> dict:
        from synartesis.redact import redact_argv
        out = {}
        for n, s in self.launches.items():
            argv = redact_argv([s.command, *s.args])[0]
            out[n] = {"command": argv[0], "args": argv[1:], "cwd": s.cwd or os.getcwd(),
                      **server_process(self.upstreams.get(n))}
        return out

    def upstream_line(self, ctx: CallContext) -> Any:
        params = ctx.msg.get("params") or {}
        _, tool = self.route(params["name"])
        return dump({**ctx.msg, "params": {**params, "name": tool}})

    def upstream_for(self, ctx: CallContext) -> Upstream:
        server, _ = self.route(ctx.msg["params"]["name"])
        self._owner[ctx.id_key] = server
        return self.upstreams[server]

    def request_for(self, server: str) -> Any:
        return self.upstreams[server].request

    def read(self, read: dict) -> ReadOutcome:
        up = self.upstreams.get(read["server"])
        if up is None:
            return ReadOutcome("failed", reason=f"server {read['server']} is not connected")
        return run_read_sync(up.request, read, timeout=self.options.read_timeout,
                             max_bytes=self.options.max_snapshot_bytes)

    def _start_read(self, read: dict, on_answer: Any) -> Any:
        up = self.upstreams.get(read["server"])
        if up is None:
            failed = ReadOutcome("failed", reason=f"server {read['server']} is not connected")
            on_answer()
            return lambda: failed
        return start_read(up, read, timeout=self.options.read_timeout, max_bytes=self.options.max_snapshot_bytes,
                          on_answer=on_answer)

    def catalog(self, server: str) -> dict[str, dict] | None:
        if server not in self._catalogs:
            try:
                self._list_all(server, "tools/list", "tools")
            except RequestFailed as exc:
                log("warn", "could not read tools/list for pins", server=server, error=exc.message)
                return None
        return self._catalogs.get(server)

    # -- client → servers ----------------------------------------------------------------
    def on_client_line(self, line: Any) -> None:
        if not line or line.isspace():
            return
        msg = parse(line)
        if msg is INVALID:
            self.send_to_client(dump(refusal(line)))  # under the request's own id when it names one
            return
        if isinstance(msg, list):
            errors = batch_refusal(msg, "synartesis: batches are not supported when several servers share one proxy")
            if errors:
                self.send_to_client(dump(errors))
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method is None and "id" in msg:  # the client answers a server→client request
            with self._srv_lock:
                back = self._server_requests.pop(id_key(msg["id"]), None)
            if back is not None:
                server, original = back
                self._write(server, dump({**msg, "id": original}))
            return
        if method is not None and "id" in msg:
            self._client_request(line, msg, method)
            return
        if method == "notifications/initialized":
            for name in self.upstreams:
                self._write(name, line)
        elif method == "notifications/cancelled":
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            key = id_key(rid)
            if self._client_cancel(msg):
                return
            if key in self._owner:
                self._write(self._owner[key], line)
        elif method == "tools/call":
            log("warn", "dropped a tools/call notification (no id)")
        else:
            for name in self.upstreams:
                self._write(name, line)

    def _client_request(self, line: Any, msg: dict, method: str) -> None:
        mid = msg["id"]
        if method != "tools/call" and self._call_waits(id_key(mid)):  # its answer would settle the call
            self._refuse_taken_id(msg, self._id_taken(id_key(mid)))
            return
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        try:
            if method == "initialize":
                info = params.get("clientInfo")
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    self.client_name = info["name"]
                self._reply(mid, self._initialize_all(params))
            elif method == "ping":
                self._reply(mid, {})
            elif method == "tools/call":
                name = params.get("name")
                if isinstance(name, str):
                    self.route(name)
                self._client_call(CallContext(line, msg, id_key(mid)))
            elif method == "tools/list":
                self._reply(mid, {"tools": self._aggregate("tools/list", "tools", "tools", prefix=True)})
            elif method == "prompts/list":
                self._reply(mid, {"prompts": self._aggregate("prompts/list", "prompts", "prompts", prefix=True)})
            elif method == "resources/list":
                self._reply(mid, {"resources": self._aggregate("resources/list", "resources", "resources")})
            elif method == "resources/templates/list":
                self._reply(mid, {"resourceTemplates": self._aggregate(
                    "resources/templates/list", "resourceTemplates", "resources")})
            elif method == "prompts/get":
                server, name = self.route(str(params.get("name")))
                self._route_request(server, msg, {**params, "name": name})
            elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
                self._route_request(self._resource_owner(str(params.get("uri"))), msg, params)
            elif method == "completion/complete":
                ref = params.get("ref") or {}
                if ref.get("type") == "ref/prompt":
                    server, name = self.route(str(ref.get("name")))
                    self._route_request(server, msg, {**params, "ref": {**ref, "name": name}})
                else:
                    self._route_request(self._resource_owner(str(ref.get("uri"))), msg, params)
            elif method == "logging/setLevel":
                for name, caps in self.capabilities.items():
                    if "logging" in caps:
                        self.upstreams[name].request(method, params, timeout=self.options.read_timeout)
                self._reply(mid, {})
            else:
                self._error(mid, -32601, "Method not found")
        except RouteError as exc:
            self._error(mid, -32602, str(exc))
        except RequestFailed as exc:
            self._error(mid, -32603, f"synartesis: {exc.message}")

    def _route_request(self, server: str, msg: dict, params: dict) -> None:
        key = id_key(msg["id"])
        self._owner[key] = server
        self._requests[key] = msg["method"]  # a tools/call under this key would take its answer
        self._write(server, dump({**msg, "params": params}))

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

    def _initialize_all(self, params: dict) -> dict:
        merged: dict[str, Any] = {}
        instructions = [INSTRUCTIONS]
        version = None
        for name, up in self.upstreams.items():
            result = up.request("initialize", params, timeout=self.options.read_timeout)
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

    def _list_all(self, server: str, method: str, key: str) -> list[dict]:
        items: list[dict] = []
        cursor = None
        for _ in range(1000):
            page = self.upstreams[server].request(method, {"cursor": cursor} if cursor else {},
                                                  timeout=self.options.read_timeout)
            items.extend(i for i in page.get(key, []) if isinstance(i, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        if method == "tools/list":
            self._catalogs[server] = {t["name"]: t for t in items if isinstance(t.get("name"), str)}
        return items

    def _aggregate(self, method: str, key: str, capability: str, prefix: bool = False) -> list[dict]:
        out: list[dict] = []
        for name, caps in self.capabilities.items():
            if capability not in caps:
                continue
            for item in self._list_all(name, method, key):
                if prefix and isinstance(item.get("name"), str):
                    item = {**item, "name": f"{name}__{item['name']}"}
                if "uri" in item and isinstance(item["uri"], str):
                    self._uri_owner.setdefault(item["uri"], name)
                out.append(item)
        return out

    def _reply(self, mid: Any, result: dict) -> None:
        self.send_to_client(dump({"jsonrpc": "2.0", "id": mid, "result": result}))

    def _error(self, mid: Any, code: int, message: str) -> None:
        self.send_to_client(dump({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}))

    def _write(self, server: str, line: Any) -> None:
        try:
            self.upstreams[server].send(line)
        except RequestFailed:
            pass

    # -- servers → client ----------------------------------------------------------------
    def on_child_message(self, server: str, line: Any, msg: Any) -> None:
        """One frame from child ``server`` (on its reader thread)."""
        if isinstance(msg, LazyFrame):
            # one json.loads will not read (framing.unreadable): its envelope, the result digested
            msg = (msg.parse() or batch_items(msg.line, strict=False)) if msg.is_batch else msg.readable()
        if isinstance(msg, list):
            self._child_batch(server, line, msg)
            return
        if not isinstance(msg, dict):
            return
        if "method" not in msg and "id" in msg:
            key = id_key(msg["id"])
            self._owner.pop(key, None)
            ctx = self._inflight.pop(key, None)
            if ctx is None and key in self._expired:
                self._expired.discard(key)
                return
            if ctx is None:
                self._requests.pop(key, None)
                self.send_to_client(line)
            else:
                self._answer_or_keep(ctx, line, msg)
                self._settle(ctx, msg, None)
            return
        if "method" in msg and "id" in msg:  # a server→client request: ids of our own
            self.send_to_client(dump({**msg, "id": self._our_request_id(server, msg["id"])}))
            return
        self.send_to_client(line)

    def _our_request_id(self, server: str, theirs: Any) -> str:
        """A proxy-wide id for a request child ``server`` sent the client with id ``theirs``
        (two children may both use id 1); the client's answer is mapped back to ``theirs``."""
        with self._srv_lock:
            self._next_server_request += 1
            ours = f"syn-srv-{self._next_server_request}"
            self._server_requests[id_key(ours)] = (server, theirs)
        return ours

    def _child_batch(self, server: str, line: Any, items: list) -> None:
        """A JSON-RPC batch from child ``server`` (MCP has had none since 2025-06-18; an older
        server may still send one): passed on as one batch, as the single-server form does. An
        answer in it settles its call (its row holds what the server said), an answer to a call
        that timed out is dropped, and a request in it gets an id of ours. The frame goes out as
        the server wrote it when nothing in it changed. It was dropped whole before (stop 20)."""
        out, changed = [], False
        for item in items:
            if isinstance(item, LazyFrame) and not item.is_batch:  # an element json.loads refuses
                mid = item.response_id()
                if mid is NOT_RESPONSE and "method" in item and "id" in item:
                    item, changed = with_id(item, self._our_request_id(server, item.member("id"))), True
                elif mid is not NOT_RESPONSE and not self._batch_answer(id_key(mid), item):
                    changed = True
                    continue
            elif isinstance(item, dict) and "id" in item and "method" not in item:
                if not self._batch_answer(id_key(item["id"]), item):
                    changed = True
                    continue
            elif isinstance(item, dict) and "id" in item and "method" in item:
                item, changed = {**item, "id": self._our_request_id(server, item["id"])}, True
            out.append(item)
        if out:
            self.send_to_client(_batch_frame(out) if changed else line)

    def _batch_answer(self, key: str, item: Any) -> bool:
        """Settle the call an answer inside a child's batch answers; False when the answer is
        to a call that timed out (it is dropped from the batch)."""
        self._owner.pop(key, None)
        ctx = self._inflight.pop(key, None)
        if ctx is not None:
            self._settle(ctx, item, None)
        elif key in self._expired:
            self._expired.discard(key)
            return False
        else:
            self._requests.pop(key, None)
        return True

    def on_child_close(self, server: str) -> None:
        """A child can send nothing more: its calls in flight become ``unknown``; the session
        ends (as the single-server form follows its server out), and stderr says which one
        ended it (adversarial review 19, F11: the proxy and its other servers ended unexplained)."""
        if not self._stop.is_set():
            log("error", "a server exited; the proxy and its other servers end with it", server=server,
                others=sorted(n for n in self.upstreams if n != server))
        for ctx in list(self._inflight.values()):
            if self._owner.get(ctx.id_key) == server:
                self._inflight.pop(ctx.id_key, None)
                self._settle(ctx, None, RequestFailed(f"{server} exited before answering", "closed"))
        self._server_gone.set()
        self._stop.set()

    def start(self) -> None:
        for name, launch in self.launches.items():
            up = StdioUpstream.spawn(launch.command, launch.args, env=launch.env, cwd=launch.cwd,
                                     capture_stderr=False, die_with_parent=False, label=name)
            self.upstreams[name] = up
        for name, up in self.upstreams.items():
            up.start(functools.partial(self.on_child_message, name), functools.partial(self.on_child_close, name))
        self._start_lane()

    def shutdown(self) -> int:
        codes = [up.close(self.options.grace) for up in self.upstreams.values()]
        for name in self.upstreams:
            self.on_child_close(name)
        self._finish()
        return max(((c if c >= 0 else 128 - c) for c in codes), default=0)


class _NoUpstream:
    """The multi form has no single upstream: every frame goes to a named child."""

    label = "multi"

    def send(self, line: Any) -> None:
        raise RequestFailed("the multi-server form routes every frame to a named server", "unsent")

    def request(self, method: str, params: dict | None = None, *, timeout: float | None,
                meta: dict | None = None) -> dict:
        raise RequestFailed("the multi-server form routes every request to a named server", "unsent")


def _batch_frame(items: list) -> bytes:
    """A batch of ``items`` as one frame: parsed elements dumped, the bytes of an element
    ``json.loads`` refuses (a :class:`LazyFrame`, or its bytes once re-identified) as they came."""
    parts = [bytes(i.line) if isinstance(i, LazyFrame) else i if isinstance(i, bytes) else dump(i) for i in items]
    return b"[" + b",".join(parts) + b"]"
