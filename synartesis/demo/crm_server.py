"""A toy CRM as a stdio MCP server: the fixture `synartesis demo` and the tests drive.

Semantics follow reference-spec §8.5 (the TypeScript fixture it describes):

- Seeds: c_001 Ada Lovelace (pro, "founding customer"), c_002 Grace Hopper (enterprise,
  "renewal in March"), c_003 Alan Turing (free, "").
- Ids ``c_NNN`` are never reused, not even across restarts: the highest id ever issued is
  kept in a sidecar file (``STATE.ids``) beside the store, like a database sequence. The
  sequence is deliberately *not* part of the store file, so undoing a run that created
  customers returns the store to byte-identical contents while a later create still gets a
  fresh id.
- Tools: ``get_customer`` and ``list_customers`` (``readOnlyHint``), ``update_customer``
  (field-by-field patch: an absent or null field keeps its value), ``create_customer``,
  ``delete_customer``, ``restore_customer`` (re-create a deleted customer under its old id)
  and ``send_email`` (appends to the outbox; nothing takes a message back).
- Every answer is JSON in one text block and the same object as ``structuredContent``.
  A missing customer is a tool error (``isError``) "no customer with id X"; a plan outside
  free/pro/enterprise is a tool error naming the allowed values.
- ``--state FILE`` persists after every write (atomic replace; sorted keys, two-space
  indent, UTF-8, final newline: the same data always gives the same bytes) and is reloaded
  on start; a missing file is created from the seed. The file is the truth: when its bytes
  change under a running server (a person's edit, another server process) the next call
  reads them first, as a client of a shared database would see another client's write.
- The process exits when stdin ends, after answering every request it had read. stdout
  carries protocol frames only: the SDK is imported with ``sys.stdout`` pointed at stderr,
  and while serving fd 1 itself points at stderr and frames go through a private duplicate.

Run: ``python -m synartesis.demo.crm_server --state FILE [--now ISO-8601]``.

Over Streamable HTTP (the remote form, as a hosted server such as Synap is reached):
``python -m synartesis.demo.crm_server --http [--host 127.0.0.1] [--port P] --state FILE``
serves ``http://HOST:PORT/mcp`` (``--port 0``: any free port) and writes
``toy-crm: serving URL`` on stderr once it listens. Every request must carry
``Authorization: Bearer TOKEN`` where TOKEN is the value of the environment variable named
by ``--token-env`` (default ``CRM_TOKEN``), compared in constant time; anything else gets 401
with ``WWW-Authenticate: Bearer`` before it reaches the MCP layer. The variable must be set.
SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# Anything the SDK prints while importing lands on stderr, never on the protocol wire.
with contextlib.redirect_stdout(sys.stderr):
    import anyio
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError
    from mcp.server.stdio import stdio_server
    from mcp_types import CallToolResult, TextContent, ToolAnnotations

from synartesis import __version__

__all__ = [
    "PLANS",
    "SEED",
    "CrmError",
    "CrmStore",
    "dump_store",
    "build_server",
    "main",
]

SERVER_NAME = "toy-crm"
INSTRUCTIONS = "A toy CRM. Customer ids look like c_001."
PLANS = ("free", "pro", "enterprise")
FIELDS = ("name", "email", "plan", "notes")
_ID_RE = re.compile(r"^c_(\d{3,})$")

SEED: dict[str, dict[str, str]] = {
    "c_001": {"id": "c_001", "name": "Ada Lovelace", "email": "ada@example.com",
              "plan": "pro", "notes": "founding customer"},
    "c_002": {"id": "c_002", "name": "Grace Hopper", "email": "grace@example.com",
              "plan": "enterprise", "notes": "renewal in March"},
    "c_003": {"id": "c_003", "name": "Alan Turing", "email": "alan@example.com",
              "plan": "free", "notes": ""},
}


class CrmError(Exception):
    """A refusal the server reports as a tool error (``isError: true``) with this message."""


def dump_store(data: dict[str, Any]) -> bytes:
    """The store's on-disk bytes: JSON, keys sorted, two-space indent, UTF-8, final newline.

    Args: data = ``{"customers": {id: customer}, "outbox": [message, ...]}``.
    Returns: bytes that depend only on ``data`` (the "byte-identical store" tests rely on it).
    """
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _atomic_write(path: Path, payload: bytes) -> None:
    """Write the store through synartesis's one write path (temp file, fsync, atomic replace)."""
    from synartesis import fsops

    fsops.atomic_write(path, payload)


def _id_number(cid: str) -> int | None:
    match = _ID_RE.match(cid)
    return int(match.group(1)) if match else None


class CrmStore:
    """The CRM's data and its persistence; no MCP here, so it is testable on its own.

    ``state`` None keeps everything in memory. Otherwise the store file is the truth: it is
    read on construction (created from :data:`SEED` when missing), re-read before each
    operation when its bytes changed (another process, or a person, edited it), and
    rewritten after every write. Two processes writing at the same instant can still lose
    one write (no file lock: it is a toy).
    Raises ``ValueError`` when an existing state file is not a store this class wrote
    (bad input never gets silently replaced by the seed).
    """

    def __init__(self, state: Path | None = None, now: str | None = None) -> None:
        self.state = state
        self._now = now
        self._seen: bytes | None = None  # the store file's bytes as last read or written
        self.customers: dict[str, dict[str, str]] = copy.deepcopy(SEED)
        self.outbox: list[dict[str, str]] = []
        self.last_id = max(_id_number(c) or 0 for c in SEED)
        if state is None:
            return
        if state.exists():
            self._load(state.read_bytes())
        else:
            self._save()

    # -- persistence -------------------------------------------------------------------
    @property
    def ids_file(self) -> Path | None:
        """The sidecar holding the highest customer number ever issued (None in memory)."""
        return None if self.state is None else self.state.with_name(self.state.name + ".ids")

    def refresh(self) -> None:
        """Reload the store file if its bytes changed since we last read or wrote it.

        Raises CrmError (reported as a tool error; memory and file left as they are) when
        the file is gone or no longer a store.
        """
        if self.state is None:
            return
        try:
            raw = self.state.read_bytes()
        except OSError as exc:
            raise CrmError(f"the store {self.state} cannot be read: {exc}") from exc
        if raw != self._seen:
            try:
                self._load(raw)
            except ValueError as exc:
                raise CrmError(str(exc)) from exc

    def _load(self, raw: bytes) -> None:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{self.state}: not a toy CRM store ({exc})") from exc
        if (not isinstance(data, dict) or not isinstance(data.get("customers"), dict)
                or not isinstance(data.get("outbox"), list)):
            raise ValueError(f"{self.state}: not a toy CRM store (needs 'customers' and 'outbox')")
        self.customers = data["customers"]
        self.outbox = data["outbox"]
        self._seen = raw
        numbers = [_id_number(c) or 0 for c in self.customers]
        self.last_id = max([self.last_id, *numbers])
        ids_file = self.ids_file
        if ids_file is not None and ids_file.exists():
            with contextlib.suppress(ValueError, OSError):
                self.last_id = max(self.last_id, int(ids_file.read_text(encoding="ascii").strip()))

    def _save(self) -> None:
        if self.state is None:
            return
        raw = self.store_bytes()
        _atomic_write(self.state, raw)
        self._seen = raw

    def _save_ids(self) -> None:
        ids_file = self.ids_file
        if ids_file is not None:
            _atomic_write(ids_file, f"{self.last_id}\n".encode("ascii"))

    def store_bytes(self) -> bytes:
        """The bytes the store file holds for the current data (see :func:`dump_store`)."""
        return dump_store({"customers": self.customers, "outbox": self.outbox})

    # -- reads -------------------------------------------------------------------------
    def get(self, cid: str) -> dict[str, str]:
        """A copy of customer ``cid``. Raises CrmError "no customer with id X"."""
        customer = self.customers.get(cid)
        if customer is None:
            raise CrmError(f"no customer with id {cid}")
        return dict(customer)

    def list(self, plan: str | None = None) -> list[dict[str, str]]:
        """Copies of every customer (optionally only one plan), ordered by id."""
        if plan is not None:
            _check_plan(plan)
        return [dict(self.customers[c]) for c in sorted(self.customers)
                if plan is None or self.customers[c]["plan"] == plan]

    # -- writes ------------------------------------------------------------------------
    def update(self, cid: str, patch: dict[str, str | None]) -> dict[str, str]:
        """Patch ``cid`` field by field; None leaves a field as it is. Returns the new record.

        Raises CrmError for a missing customer, an unknown field, an invalid plan, a
        non-string value or an empty name. Nothing is written when it raises.
        """
        current = self.get(cid)
        changes = _clean_fields(patch)
        current.update(changes)
        self.customers[cid] = current
        self._save()
        return dict(current)

    def create(self, name: str, email: str, plan: str, notes: str) -> dict[str, str]:
        """Add a customer under the next never-used id ``c_NNN``. Returns it."""
        fields = _clean_fields({"name": name, "email": email, "plan": plan, "notes": notes})
        self.last_id += 1
        cid = f"c_{self.last_id:03d}"
        customer = {"id": cid, **fields}
        self.customers[cid] = customer
        self._save_ids()
        self._save()
        return dict(customer)

    def delete(self, cid: str) -> dict[str, str]:
        """Remove ``cid``; returns the record it removed. Raises CrmError when missing."""
        customer = self.get(cid)
        del self.customers[cid]
        self._save()
        return customer

    def restore(self, cid: str, name: str, email: str, plan: str, notes: str) -> dict[str, str]:
        """Re-create a customer under a given id (how a delete is undone). Returns it.

        Raises CrmError when ``cid`` is not of the form c_NNN or a customer already has it.
        Restoring an id above the sequence raises the sequence, so it is never issued again.
        """
        number = _id_number(cid)
        if number is None:
            raise CrmError(f"invalid customer id {cid!r}: ids look like c_001")
        if cid in self.customers:
            raise CrmError(f"customer {cid} already exists")
        fields = _clean_fields({"name": name, "email": email, "plan": plan, "notes": notes})
        customer = {"id": cid, **fields}
        self.customers[cid] = customer
        if number > self.last_id:
            self.last_id = number
            self._save_ids()
        self._save()
        return dict(customer)

    def send_email(self, to: str, subject: str, body: str) -> dict[str, str]:
        """Append a message to the outbox (it counts as sent). Returns the message."""
        if not to.strip():
            raise CrmError("send_email needs a recipient ('to')")
        message = {
            "id": f"m_{len(self.outbox) + 1:03d}",
            "to": to,
            "subject": subject,
            "body": body,
            "sent_at": self._now or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        self.outbox.append(message)
        self._save()
        return dict(message)


def _check_plan(plan: str) -> None:
    if plan not in PLANS:
        raise CrmError(f"invalid plan {plan!r}: must be one of {', '.join(PLANS)}")


def _clean_fields(patch: dict[str, Any]) -> dict[str, str]:
    """Validate customer fields; drop None (= keep). Raises CrmError on bad input."""
    out: dict[str, str] = {}
    for key, value in patch.items():
        if key not in FIELDS:
            raise CrmError(f"unknown field {key!r}: customers have {', '.join(FIELDS)}")
        if value is None:
            continue
        if not isinstance(value, str):
            raise CrmError(f"{key} must be a string")
        if key == "plan":
            _check_plan(value)
        if key == "name" and not value.strip():
            raise CrmError("name must not be empty")
        out[key] = value
    return out


# -- the MCP server --------------------------------------------------------------------------

def build_server(store: CrmStore) -> MCPServer:
    """An ``mcp.server.MCPServer`` named ``toy-crm`` serving ``store``'s seven tools.

    Returns the server. Tool errors come back as ``isError`` results, never as protocol
    errors. The handlers are coroutines that never await, so calls run one at a time on the
    event loop (the SDK would run plain functions in worker threads, racing on the store).
    """
    server = MCPServer(name=SERVER_NAME, instructions=INSTRUCTIONS, version=__version__,
                       log_level="WARNING")

    def answer(fn: Any, *args: Any) -> CallToolResult:
        try:
            store.refresh()
            payload = fn(*args)
        except CrmError as exc:
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=payload)

    read_only = ToolAnnotations(read_only_hint=True)
    idempotent_write = ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                       idempotent_hint=True)

    @server.tool(annotations=read_only)
    async def get_customer(id: str) -> CallToolResult:  # noqa: A002 - the wire name is "id"
        """Read one customer by id (c_001 style): {id, name, email, plan, notes}."""
        return answer(store.get, id)

    @server.tool(annotations=read_only)
    async def list_customers(plan: str | None = None) -> CallToolResult:
        """List every customer ordered by id, optionally only those on one plan: {customers: [...]}."""
        return answer(lambda p: {"customers": store.list(p)}, plan)

    @server.tool(annotations=idempotent_write)
    async def update_customer(id: str, name: str | None = None, email: str | None = None,  # noqa: A002
                        plan: str | None = None, notes: str | None = None) -> CallToolResult:
        """Change some fields of a customer; fields left out keep their value. plan is one of free, pro, enterprise. Returns the updated customer."""
        return answer(store.update, id, {"name": name, "email": email, "plan": plan, "notes": notes})

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    async def create_customer(name: str, email: str = "", plan: str = "free",
                        notes: str = "") -> CallToolResult:
        """Create a customer; the server assigns a new id (ids are never reused). Returns the customer with its id."""
        return answer(store.create, name, email, plan, notes)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def delete_customer(id: str) -> CallToolResult:  # noqa: A002
        """Delete a customer. Returns {id, deleted: true, customer: the removed record}."""
        return answer(lambda cid: {"id": cid, "deleted": True, "customer": store.delete(cid)}, id)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    async def restore_customer(id: str, name: str, email: str, plan: str,  # noqa: A002
                         notes: str) -> CallToolResult:
        """Re-create a deleted customer under its old id with the given fields. Fails if the id is in use."""
        return answer(store.restore, id, name, email, plan, notes)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                             open_world_hint=True))
    async def send_email(to: str, subject: str, body: str) -> CallToolResult:
        """Send an email (it is appended to the outbox and cannot be unsent). Returns the message."""
        return answer(store.send_email, to, subject, body)

    def read(fn: Any, *args: Any) -> str:
        try:
            store.refresh()
            return json.dumps(fn(*args), ensure_ascii=False, sort_keys=True)
        except CrmError as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    @server.resource("crm://customers", name="customers", mime_type="application/json")
    async def customers_resource() -> str:
        """Every customer, as JSON."""
        return read(lambda: {"customers": store.list()})

    @server.resource("crm://customers/{id}", name="customer", mime_type="application/json")
    async def customer_resource(id: str) -> str:  # noqa: A002
        """One customer, as JSON."""
        return read(store.get, id)

    return server


class _Owed:
    """Ids of requests read from stdin that have not been answered on stdout yet."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    @staticmethod
    def _key(line: str) -> tuple[str | None, dict[str, Any]]:
        """(the message's id as JSON text or None, the message or {})."""
        try:
            message = json.loads(line)
        except ValueError:
            return None, {}
        if not isinstance(message, dict):
            return None, {}
        return (json.dumps(message["id"]) if "id" in message else None), message


class _DrainingInput:
    """stdin lines for the SDK transport; at EOF it waits until every request read so far
    has been answered (up to ``grace`` seconds), so "stdin ended" never drops a reply."""

    def __init__(self, lines: Any, owed: _Owed, grace: float = 30.0) -> None:
        self._lines, self._owed, self._grace = lines, owed, grace

    async def __aiter__(self) -> Any:
        async for line in self._lines:
            key, message = self._owed._key(line)
            if key is not None and "method" in message:
                self._owed.ids.add(key)
            elif message.get("method") == "notifications/cancelled":
                # A cancelled request may never be answered; do not wait for it.
                params = message.get("params") or {}
                self._owed.ids.discard(json.dumps(params.get("requestId")))
            yield line
        with anyio.move_on_after(self._grace):
            while self._owed.ids:
                await anyio.sleep(0.01)


class _TrackingOutput:
    """The protocol wire for the SDK transport; marks each response's request as answered."""

    def __init__(self, wire: Any, owed: _Owed) -> None:
        self._wire, self._owed = wire, owed

    async def write(self, text: str) -> None:
        await self._wire.write(text)
        key, message = self._owed._key(text)
        if key is not None and ("result" in message or "error" in message):
            self._owed.ids.discard(key)

    async def flush(self) -> None:
        await self._wire.flush()


async def _serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` on fd 0/1 until stdin ends and every request read has been answered.

    Frames go out through a private duplicate of fd 1; fd 1 itself is pointed at stderr,
    so a stray ``print`` (ours, the SDK's, a library's) can never corrupt the wire.
    """
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    owed = _Owed()
    wire = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_fd, "wb"), encoding="utf-8"))
    lines = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(_DrainingInput(lines, owed), _TrackingOutput(wire, owed)) as (read, write):
        # MCPServer.run_stdio_async does exactly this with the default (non-draining) streams.
        lowlevel = server._lowlevel_server  # noqa: SLF001 - no public accessor in SDK 2.3
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


class _BearerCheck:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            import hmac
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error":"invalid_token","error_description":"a valid bearer token is required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer error="invalid_token"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _serve_http(server: MCPServer, host: str, port: int, token: str,
                tls: tuple[str, str] | None = None) -> None:
    """Serve ``server`` over Streamable HTTP at ``/mcp`` until SIGTERM/SIGINT (HTTPS with ``tls``:
    certificate and key files)."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    app = _BearerCheck(server.streamable_http_app(host=host), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2,
                            ssl_certfile=tls[0] if tls else None, ssl_keyfile=tls[1] if tls else None)
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"toy-crm: serving {'https' if tls else 'http'}://{shown}:{bound}/mcp\n")
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m synartesis.demo.crm_server",
        description="The toy CRM MCP server used by `synartesis demo` (stdio; --http for Streamable HTTP).")
    parser.add_argument("--state", type=Path, default=None,
                        help="JSON store to load on start and rewrite after every write "
                             "(created from the seed when missing); in memory if omitted")
    parser.add_argument("--now", default=None,
                        help="fixed timestamp for sent emails (for deterministic tests)")
    parser.add_argument("--http", action="store_true",
                        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on with --http (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port with --http (default 0: any free port)")
    parser.add_argument("--tls-cert", default=None, help="with --http: serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", default=None, help="with --http: the certificate's private key (PEM)")
    parser.add_argument("--token-env", default="CRM_TOKEN",
                        help="environment variable holding the bearer token --http requires (default CRM_TOKEN)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve the toy CRM on stdin/stdout until stdin ends (``--http``: over Streamable HTTP until
    SIGTERM). Returns the exit code (2: bad state file or no token for ``--http``; 1: cannot listen)."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        store = CrmStore(args.state.resolve() if args.state else None, now=args.now)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"toy-crm: {exc}\n")
        return 2
    token = os.environ.get(args.token_env, "") if args.http else ""
    if args.http and not token:
        sys.stderr.write(f"toy-crm: --http needs a bearer token in ${args.token_env}\n")
        return 2
    with contextlib.redirect_stdout(sys.stderr):
        server = build_server(store)
    if args.http:
        try:
            _serve_http(server, args.host, args.port, token,
                        (args.tls_cert, args.tls_key) if args.tls_cert and args.tls_key else None)
        except OSError as exc:
            sys.stderr.write(f"toy-crm: cannot listen on {args.host}:{args.port}: {exc}\n")
            return 1
        return 0
    anyio.run(_serve_stdio, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
