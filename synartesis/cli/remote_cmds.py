"""`synartesis login NAME`, `synartesis logout NAME`: OAuth sign-in for remote servers.

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
from synartesis.cli.common import console, err_console
from synartesis.paths import Env

__all__ = ["login", "logout"]


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
    from synartesis.services.remote import find_remote, sign_in

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


@app.command()
def logout(name: str = typer.Argument(..., help="The server's name.")) -> None:
    """Remove the stored sign-in of a remote server (keychain and file)."""
    from synartesis.services.remote import sign_out

    if sign_out(Env.current(), name):
        console().print(Text(f"Signed out of {name}: its tokens are removed."))
        return
    err_console().print(Text(f"There was no sign-in for {name}."))
    raise typer.Exit(1)


def _open(url: str) -> bool:
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


def _safe(url: str) -> str:
    from synartesis.remote.http import safe_url
    return safe_url(url)
