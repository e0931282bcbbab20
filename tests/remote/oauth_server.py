"""A local OAuth authorization server + protected MCP server, built from the mcp SDK's
server-side auth pieces (``MCPServer`` with ``AuthSettings`` and an
``OAuthAuthorizationServerProvider``), for the OAuth tests.

Run: ``python tests/remote/oauth_server.py [--access-ttl S] [--refresh-ttl S] [--state FILE]``.
It binds 127.0.0.1 on a free port and prints ``oauth-server: http://127.0.0.1:PORT/mcp`` on
stderr. The authorization endpoint redirects to a consent page (``/consent?request=…``);
a person's click is a POST to ``/consent`` (the tests do exactly that over HTTP), which
redirects to the client's ``redirect_uri`` with the code. Tokens are opaque random strings;
access tokens live ``--access-ttl`` seconds, refresh tokens ``--refresh-ttl`` (0: for ever)
and rotate on every refresh. ``--state FILE`` appends every issued token to FILE (one JSON
line each) so a test can grep for token values elsewhere.

Tools: ``add_note(text)``, ``list_notes()``, ``whoami()`` (the token's client id and scopes).
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import sys
import time
from typing import Any
from urllib.parse import urlencode

from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response


class Provider:
    """An in-memory authorization server (every consent is granted by the POST)."""

    def __init__(self, access_ttl: int, refresh_ttl: int, state: str | None) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access_ttl, self.refresh_ttl, self.state = access_ttl, refresh_ttl, state

    def _record(self, kind: str, token: str) -> None:
        if self.state:
            with open(self.state, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"kind": kind, "token": token}) + "\n")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self._record("client_secret", client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        request = secrets.token_urlsafe(16)
        self.pending[request] = (client.client_id, params)
        return f"{ISSUER}/consent?{urlencode({'request': request})}"

    def grant(self, request: str) -> str | None:
        got = self.pending.pop(request, None)
        if got is None:
            return None
        client_id, params = got
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300, client_id=client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str):
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at_" + secrets.token_hex(24), "rt_" + secrets.token_hex(24)
        now = int(time.time())
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=now + self.access_ttl, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             expires_at=now + self.refresh_ttl if self.refresh_ttl else None,
                                             resource=resource)
        self._record("access", access)
        self._record("refresh", refresh)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.access_ttl,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str):
        token = self.refresh.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            return None
        if token.expires_at is not None and token.expires_at < time.time():
            return None
        return token

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)  # rotate
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


ISSUER = ""


def main() -> int:
    global ISSUER
    parser = argparse.ArgumentParser()
    parser.add_argument("--access-ttl", type=int, default=3600)
    parser.add_argument("--refresh-ttl", type=int, default=0)
    parser.add_argument("--state", default=None)
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    ISSUER = f"http://127.0.0.1:{port}"
    provider = Provider(args.access_ttl, args.refresh_ttl, args.state)
    server = MCPServer(
        name="oauth-notes", auth_server_provider=provider, log_level="WARNING",
        auth=AuthSettings(issuer_url=ISSUER, resource_server_url=f"{ISSUER}/mcp", validate_token_resource=False,
                          required_scopes=["mcp"],
                          client_registration_options=ClientRegistrationOptions(
                              enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"])))
    notes: list[str] = []

    @server.tool()
    async def add_note(text: str) -> str:
        """Append a note."""
        notes.append(text)
        return json.dumps({"count": len(notes)})

    @server.tool()
    async def list_notes() -> str:
        """Every note."""
        return json.dumps({"notes": notes})

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the token says we are."""
        from mcp.server.auth.middleware.auth_context import get_access_token
        token = get_access_token()
        return json.dumps({"client_id": token.client_id if token else None,
                           "scopes": token.scopes if token else None})

    @server.custom_route("/consent", methods=["GET", "POST"])
    async def consent(request: Request) -> Response:
        if request.method == "GET":
            req = request.query_params.get("request", "")
            return HTMLResponse(f"<form method=post><input type=hidden name=request value='{req}'>"
                                "<button>Allow</button></form>")
        form = await request.form()
        target = provider.grant(str(form.get("request", "")))
        if target is None:
            return HTMLResponse("unknown request", status_code=400)
        return RedirectResponse(target, status_code=302)

    import uvicorn
    config = uvicorn.Config(server.streamable_http_app(host="127.0.0.1"), log_level="warning", lifespan="on")
    sys.stderr.write(f"oauth-server: {ISSUER}/mcp\n")
    sys.stderr.flush()
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
