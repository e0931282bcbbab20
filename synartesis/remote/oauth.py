"""OAuth for remote MCP servers: ``synartesis login`` (the whole MCP authorization flow) and
the proxy's use and refresh of the tokens it stored.

**Login** (:func:`login`) drives the mcp SDK's ``OAuthClientProvider`` (the reference client
of the MCP authorization spec): a request to the server gets 401 with ``WWW-Authenticate``;
protected resource metadata (RFC 9728) names the authorization server; its metadata
(RFC 8414) is read; the client registers dynamically (RFC 7591) unless the entry names a
client id; the person approves in a browser (authorization code with PKCE, RFC 7636), which
comes back to a loopback redirect ``http://127.0.0.1:PORT/callback`` (RFC 8252 §7.3) served
here; the code is exchanged for tokens (with the RFC 8707 ``resource``). The record goes to
the :class:`~synartesis.remote.tokens.TokenStore`, nowhere else.

**Use** (:class:`OAuthBearer`): the proxy sends ``Authorization: Bearer …`` only to the origin
the sign-in was made for, refreshes an expired access token with the refresh token
(RFC 6749 §6) before a request and after a 401, and stores the new tokens. The refresh is
written here against httpx2 rather than through the SDK's provider because importing the SDK
costs the proxy about 1.4 s on every client launch; login, which needs the SDK's discovery,
registration and PKCE, runs from a terminal. A refresh that the authorization server refuses
(an expired or revoked refresh token) leaves no usable token: the server's 401 then answers the
client's handshake with the sentence naming ``synartesis login NAME``.
"""

from __future__ import annotations

import asyncio
import base64
import http.server
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx2

from synartesis.errors import SynartesisError
from synartesis.log import log
from synartesis.remote.http import BearerAuth, safe_url
from synartesis.remote.tokens import TokenRecord, TokenStore

__all__ = ["LoginResult", "OAuthBearer", "login", "same_origin"]

_CALLBACK_PATH = "/callback"
_PAGE = ("<!doctype html><meta charset=utf-8><title>synartesis</title>"
         "<p style='font:16px system-ui;margin:3em'>{}</p>")


def same_origin(a: str, b: str) -> bool:
    """True when two URLs share scheme, host and port (default ports filled in)."""
    def origin(u: str) -> tuple[str, str, int | None]:
        p = urlsplit(u)
        port = p.port or {"https": 443, "http": 80}.get(p.scheme)
        return p.scheme.lower(), (p.hostname or "").lower(), port
    try:
        return origin(a) == origin(b)
    except ValueError:
        return False


class OAuthBearer(BearerAuth):
    """The stored sign-in of one server, as the upstream's ``Authorization`` source.

    Args:
        store: the token store.
        server: the server's name.
        url: the URL the proxy talks to; a sign-in made for another origin is not used.
    """

    def __init__(self, store: TokenStore, server: str, url: str) -> None:
        self.store, self.server, self.url = store, server, url
        self._record: TokenRecord | None = None
        self._loaded = False
        self.problem: str | None = None

    def _load(self) -> TokenRecord | None:
        try:
            record = self.store.get(self.server)
        except SynartesisError as exc:
            self.problem = exc.message
            log("warn", exc.message, server=self.server)
            return None
        if record is not None and not same_origin(record.url, self.url):
            self.problem = (f"the sign-in for {self.server} was made for {safe_url(record.url)}, not "
                            f"{safe_url(self.url)}; run `synartesis login {self.server}` again")
            log("warn", self.problem, server=self.server)
            return None
        return record

    @property
    def record(self) -> TokenRecord | None:
        """The sign-in in use (loaded on first use)."""
        if not self._loaded:
            self._record, self._loaded = self._load(), True
        return self._record

    async def authorization(self, client: httpx2.AsyncClient) -> str | None:
        record = self.record
        if record is None:
            return None
        if record.expired() and record.refresh_token:
            await self.refresh(client, None)
            record = self._record
        if record is None or not record.access_token or record.expired(skew=0):
            return None
        return f"Bearer {record.access_token}"

    async def refresh(self, client: httpx2.AsyncClient, www_authenticate: str | None) -> bool:
        """Refresh under the store's lock; another proxy may have refreshed first (then its
        tokens are adopted). True when a new access token is in hand."""
        current = self.record
        if current is None:
            return False
        loop = asyncio.get_running_loop()
        lock = await loop.run_in_executor(None, self.store.acquire, self.server)
        try:
            latest = await loop.run_in_executor(None, self._load)
            if latest is not None and latest.access_token != current.access_token and not latest.expired():
                self._record = latest  # another proxy refreshed meanwhile
                return True
            record = latest or current
            if not record.refresh_token or not record.token_endpoint:
                self.problem = f"the sign-in for {self.server} has expired and cannot be refreshed"
                self._record = None
                return False
            fresh = await _refresh_request(client, record)
            if fresh is None:
                self.problem = f"the sign-in for {self.server} has expired (the refresh was refused)"
                log("warn", self.problem, server=self.server)
                self._record = None
                return False
            self._record = fresh
            try:
                await loop.run_in_executor(None, self.store.put, fresh)
            except SynartesisError as exc:
                log("warn", "could not store the refreshed sign-in", server=self.server, error=exc.message)
            log("info", "refreshed the sign-in", server=self.server)
            return True
        finally:
            self.store.release(lock)


async def _refresh_request(client: httpx2.AsyncClient, record: TokenRecord) -> TokenRecord | None:
    """POST ``grant_type=refresh_token`` (RFC 6749 §6) with the registration's client
    authentication; the refreshed record, or None when the server refused."""
    data = {"grant_type": "refresh_token", "refresh_token": record.refresh_token or "",
            "client_id": str(record.client.get("client_id", ""))}
    if record.resource:
        data["resource"] = record.resource
    headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
    method = record.client.get("token_endpoint_auth_method")
    secret = record.client.get("client_secret")
    if secret and method == "client_secret_basic":
        pair = f"{quote(data['client_id'], safe='')}:{quote(str(secret), safe='')}"
        headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif secret:
        data["client_secret"] = str(secret)
    try:
        response = await client.post(str(record.token_endpoint), data=data, headers=headers)
    except httpx2.HTTPError as exc:
        log("warn", "the token endpoint could not be reached", error=str(exc))
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        return None
    expires_in = body.get("expires_in")
    now = time.time()
    return TokenRecord(
        server=record.server, url=record.url, resource=record.resource, issuer=record.issuer,
        token_endpoint=record.token_endpoint, client=dict(record.client), access_token=token,
        refresh_token=body.get("refresh_token") or record.refresh_token,  # RFC 6749 §6: may not rotate
        token_type=str(body.get("token_type") or "Bearer"), scope=body.get("scope") or record.scope,
        expires_at=now + float(expires_in) if isinstance(expires_in, (int, float)) else None, obtained_at=now)


@dataclass(frozen=True)
class LoginResult:
    """What ``synartesis login`` did: where the sign-in is stored and what it grants."""

    server: str
    stored_at: str
    issuer: str | None
    scope: str | None
    expires_at: float | None
    registered: bool


class _Callback:
    """The loopback redirect target: one GET ``/callback?code=…&state=…`` is awaited."""

    def __init__(self, port: int) -> None:
        self.result: dict[str, str] | None = None
        self.done = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != _CALLBACK_PATH:
                    self.send_error(404)
                    return
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                ok = "code" in query
                text = ("Signed in. You can close this tab and go back to the terminal." if ok else
                        "The sign-in did not complete: " + query.get("error", "no code came back"))
                body = _PAGE.format(text.replace("&", "&amp;").replace("<", "&lt;")).encode()
                self.send_response(200 if ok else 400)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if outer.result is None:
                    outer.result = query
                    outer.done.set()

            def log_message(self, *args: Any) -> None:  # the query holds the code: never logged
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="oauth-callback", daemon=True)
        self.thread.start()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{_CALLBACK_PATH}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def login(server: str, url: str, store: TokenStore, *, open_url: Callable[[str], None],
                headers: Mapping[str, str] | None = None, client_id: str | None = None,
                client_secret: str | None = None, scopes: str | None = None, callback_port: int = 0,
                timeout: float = 300.0) -> LoginResult:
    """Sign in to ``server`` at ``url`` and store the tokens.

    Args:
        open_url: shows the authorization URL to the person (opens a browser, or prints it).
        headers: other headers the server needs (from the entry, already resolved).
        client_id, client_secret: a pre-registered client (Claude Code ``oauth.clientId``,
            Cursor ``auth.CLIENT_ID``); None registers dynamically.
        scopes: space-separated scopes to ask for (default: what the server advertises).
        callback_port: the loopback port for the redirect (0: any free one; some servers
            only accept a registered one).
        timeout: seconds to wait for the person.
    Raises:
        SynartesisError: the server does not use OAuth, or the flow failed (the message says
            which step; never a token).
    """
    logging.getLogger("mcp").addHandler(logging.NullHandler())  # the SDK logs tracebacks; we say it in words
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.exceptions import (
        OAuthFlowError,
        OAuthRegistrationError,
        OAuthTokenError,
    )
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
    )

    callback = _Callback(callback_port)
    try:
        metadata = OAuthClientMetadata(
            client_name="synartesis", redirect_uris=[callback.redirect_uri],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=scopes)

        class Memory:
            """The SDK's TokenStorage, kept in memory until the flow succeeded."""

            def __init__(self) -> None:
                self.tokens: Any = None
                self.client: Any = None
                if client_id:
                    self.client = OAuthClientInformationFull(
                        client_id=client_id, client_secret=client_secret, redirect_uris=[callback.redirect_uri],
                        token_endpoint_auth_method="client_secret_post" if client_secret else "none")

            async def get_tokens(self) -> Any:
                return self.tokens

            async def set_tokens(self, tokens: Any) -> None:
                self.tokens = tokens

            async def get_client_info(self) -> Any:
                return self.client

            async def set_client_info(self, info: Any) -> None:
                self.client = info

        memory = Memory()
        preregistered = memory.client is not None

        async def redirect(authorization_url: str) -> None:
            open_url(authorization_url)

        async def wait_for_code() -> Any:
            got = await asyncio.get_running_loop().run_in_executor(None, callback.done.wait, timeout)
            if not got or callback.result is None:
                raise SynartesisError(f"no sign-in came back within {timeout:g} s")
            query = callback.result
            if "code" not in query:
                raise SynartesisError(f"the authorization server refused the sign-in: "
                                      f"{query.get('error', 'no code')} {query.get('error_description', '')}".strip())
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        provider = OAuthClientProvider(url, metadata, memory, redirect_handler=redirect,
                                       callback_handler=wait_for_code)
        probe = {"jsonrpc": "2.0", "id": "syn-login-1", "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "synartesis-login", "version": "1"}}}
        base_headers = {**{k.lower(): v for k, v in (headers or {}).items()},
                        "accept": "application/json, text/event-stream", "content-type": "application/json",
                        "mcp-protocol-version": "2025-06-18"}
        base_headers.pop("authorization", None)
        try:
            async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=60.0),
                                          follow_redirects=False) as client:
                async with client.stream("POST", url, json=probe, headers=base_headers) as response:
                    status = response.status_code
                    session = response.headers.get("mcp-session-id")
                if session:
                    try:
                        await client.delete(url, headers={**base_headers, "mcp-session-id": session})
                    except httpx2.HTTPError:
                        pass
        except (OAuthFlowError, OAuthRegistrationError, OAuthTokenError) as exc:
            ctx = provider.context
            hint = ("; the server publishes no OAuth metadata, so its credentials probably come from headers "
                    "(an API key in the client entry)"
                    if ctx.protected_resource_metadata is None and ctx.oauth_metadata is None else "")
            raise SynartesisError(f"signing in to {server} failed: {exc}{hint}") from None
        except httpx2.HTTPError as exc:
            raise SynartesisError(f"signing in to {server} failed: cannot reach {safe_url(url)}: {exc}") from None
        ctx = provider.context
        tokens = memory.tokens
        if tokens is None:
            if status < 400:
                raise SynartesisError(f"{server} at {safe_url(url)} did not ask for a sign-in (HTTP {status}); "
                                      "it needs none, or its credentials come from headers")
            raise SynartesisError(f"signing in to {server} failed: the server answered HTTP {status}")
        if status in (401, 403):
            raise SynartesisError(f"{server} refused the new sign-in (HTTP {status})")
        client_info = memory.client
        record = TokenRecord(
            server=server, url=url, resource=ctx.get_resource_url(),
            issuer=str(ctx.oauth_metadata.issuer) if ctx.oauth_metadata else ctx.auth_server_url,
            token_endpoint=provider._get_token_endpoint(),
            client={k: v for k, v in {
                "client_id": client_info.client_id if client_info else None,
                "client_secret": client_info.client_secret if client_info else None,
                "token_endpoint_auth_method": client_info.token_endpoint_auth_method if client_info else None,
            }.items() if v is not None},
            access_token=tokens.access_token, refresh_token=tokens.refresh_token,
            token_type=tokens.token_type, scope=tokens.scope, expires_at=ctx.token_expiry_time)
        where = store.put(record)
        return LoginResult(server, where, record.issuer, record.scope, record.expires_at, not preregistered)
    finally:
        callback.close()
