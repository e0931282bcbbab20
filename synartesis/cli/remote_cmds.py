"""`synartesis login NAME`, `synartesis logout NAME` (OAuth sign-in for remote servers) and
`synartesis serve` (the policy's servers over Streamable HTTP).

Exit codes: 0 signed in / out; 1 the flow failed or there was nothing to sign out of;
2 usage (no such remote server, a header reference unset).
"""

from __future__ import annotations

import sys
import time
import webbrowser
from typing import Optional

import typer
from rich.text import Text

from synartesis.cli.app import app
from synartesis.cli.common import JournalOpt, ManifestOpt, console, err_console
from synartesis.paths import Env

__all__ = ["login", "logout", "serve"]


@app.command()
def login(
    name: str = typer.Argument(..., help="The server's name, as the client config names it."),
    url: Optional[str] = typer.Option(None, "--url", help="The server's URL (default: from the client config that names it).",
                                      metavar="URL"),
    no_browser: bool = typer.Option(False, "--no-browser", help="Print the sign-in URL instead of opening a browser."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds to wait for the sign-in in the browser.",
                                  min=1.0, metavar="S"),
) -> None:
    """Sign in to an OAuth-protected remote MCP server.

    The browser opens on the server's sign-in page; once you approve, the tokens are kept in the
    OS keychain (or a 0600 file under $SYNARTESIS_HOME/oauth/), never in a client config, a
    policy or a log. The proxy refreshes them; run this again when it says the sign-in expired.
    """
    from synartesis.services.remote import find_remote, placeholder_launch, sign_in

    env = Env.current()
    target = find_remote(env, name, url)
    out = err_console()

    def show(auth_url: str) -> None:
        if no_browser or not _open(auth_url):
            out.print(Text(f"Open this URL to sign in to {name}:"))
            sys.stdout.write(auth_url + "\n")
            sys.stdout.flush()
        else:
            out.print(Text(f"A browser opened to sign in to {name}. Waiting for you to approve…"))

    out.print(Text(f"Signing in to {name} at {_safe(target.url)} ({target.source})"))
    result = sign_in(env, target, show, timeout=timeout)
    expiry = (f", the access token expires {time.strftime('%Y-%m-%d %H:%M', time.localtime(result.expires_at))}"
              if result.expires_at else "")
    console().print(Text(f"Signed in to {name}{expiry}. The sign-in is kept in {result.stored_at}."))
    launch = placeholder_launch(env, name)
    if launch:
        import shlex
        console().print(Text(f"Its policy was drafted before this sign-in and holds every call; draft rules "
                             f"from its tools now with:\n  synartesis init {name} -- {shlex.join(launch)}"))


@app.command()
def logout(name: str = typer.Argument(..., help="The server's name.")) -> None:
    """Remove the stored sign-in of a remote server (keychain and file)."""
    from synartesis.services.remote import sign_out

    if sign_out(Env.current(), name):
        console().print(Text(f"Signed out of {name}: its tokens are removed."))
        return
    err_console().print(Text(f"There was no sign-in for {name}."))
    raise typer.Exit(1)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (default: loopback only)."),
    port: int = typer.Option(8420, "--port", help="Port (0: any free one).", min=0, max=65535),
    server: Optional[list[str]] = typer.Option(None, "--server", help="Serve only this server of the policy (repeatable).",
                                               metavar="NAME"),
    manifest: Optional[str] = ManifestOpt,
    journal: Optional[str] = JournalOpt,
    show_token: bool = typer.Option(False, "--show-token", help="Print the bearer token (made on first use) and exit."),
    tls_cert: Optional[str] = typer.Option(None, "--tls-cert", help="Serve HTTPS with this certificate (PEM).", metavar="F"),
    tls_key: Optional[str] = typer.Option(None, "--tls-key", help="The certificate's private key (PEM).", metavar="F"),
    allow_host: Optional[list[str]] = typer.Option(None, "--allow-host", help="Another Host name clients use (repeatable).",
                                                   metavar="H"),
    allow_origin: Optional[list[str]] = typer.Option(None, "--allow-origin", help="A browser Origin to accept (repeatable).",
                                                     metavar="O"),
    max_body: int = typer.Option(16 * 1024 * 1024, "--max-body", help="Largest request body in bytes (413 above).", min=1024,
                                 metavar="BYTES"),
    idle_timeout: float = typer.Option(1800.0, "--idle-timeout", help="Close a session unused for this many seconds.",
                                       min=1.0, metavar="S"),
    max_sessions: int = typer.Option(32, "--max-sessions", help="Sessions open at once, each with its own server "
                                     "process (503 for the next initialize).", min=1, metavar="N"),
    drain: float = typer.Option(30.0, "--drain", help="On SIGTERM, seconds to let calls in flight finish.", min=0.0,
                                metavar="S"),
    saga: bool = typer.Option(False, "--saga", help="Saga mode for every server: a failed call first rolls back "
                              "its session's earlier changes (per server: servers.NAME.saga: true)."),
) -> None:
    """Serve the policy's servers over Streamable HTTP, for clients that cannot start a process.

    Each server is at /servers/NAME/mcp; every MCP session gets its own server process and run,
    and every tools/call goes through the same pipeline, gates and journal as the stdio proxy.
    Requests need `Authorization: Bearer TOKEN` (see --show-token). GET /health says ok.
    """
    from synartesis.errors import UsageError
    from synartesis.serve.token import load_or_create_token, token_path

    env = Env.current()
    token, created = load_or_create_token(env)
    if show_token:
        sys.stdout.write(token + "\n")
        return
    if bool(tls_cert) != bool(tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    from synartesis.paths import locate_journal, locate_policy
    from synartesis.policy import load_policy
    from synartesis.proxy.engine import EngineOptions
    from synartesis.serve.app import ServeConfig
    from synartesis.serve.backend import EngineBackend, served_servers
    from synartesis.serve.runner import Listen, is_loopback, run

    policy_path = locate_policy(env, manifest)
    if not policy_path.exists():
        raise UsageError(f"there is no policy at {policy_path}; serve starts the servers a policy names")
    policy = load_policy(policy_path)
    names, problems = served_servers(policy, server)
    if problems:
        raise UsageError("; ".join(problems))
    if not names:
        raise UsageError(f"the policy {policy_path} has no server with a command to serve")
    out, err = console(), err_console()
    if not is_loopback(host) and not tls_cert:
        err.print(Text(f"warning: serving on {host} without TLS: the bearer token and every call cross the "
                       "network in clear; give --tls-cert and --tls-key", style="bold yellow"))
    journal_path = locate_journal(env, policy_path, journal)
    # the proxy's own saga hook (the undo engine loads only when a call fails in saga mode)
    from synartesis.cli import _saga
    from synartesis.policy.cache import cache_path
    from synartesis.services.serving import server_launcher
    backend = EngineBackend(policy, journal_path, EngineOptions(saga=saga),
                            protected=[str(cache_path(policy_path, journal_path.parent))], saga_hook=_saga,
                            launch=server_launcher(policy))
    config = ServeConfig(token=token, servers=names, max_body=max_body, idle_timeout=idle_timeout, drain=drain,
                         max_sessions=max_sessions)

    def ready(base: str) -> None:
        out.print(Text(f"synartesis serve: {len(names)} server(s), policy {policy_path}, journal {journal_path}"))
        for name in names:
            out.print(Text(f"  {name:<20} {base}/servers/{name}/mcp"))
        made = "a new token was made and is" if created else "the token is"
        out.print(Text(f"Requests need Authorization: Bearer TOKEN; {made} in {token_path(env)} "
                       "(synartesis serve --show-token). Ctrl+C or SIGTERM stops, after calls in flight finish."))
        sys.stdout.flush()

    try:
        run(config, backend, Listen(host, port, (tls_cert, tls_key) if tls_cert and tls_key else None), ready,
            allow_hosts=list(allow_host or []), allow_origins=list(allow_origin or []))
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _open(url: str) -> bool:
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def _safe(url: str) -> str:
    from synartesis.remote.http import safe_url
    return safe_url(url)
