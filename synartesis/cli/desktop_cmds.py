"""`synartesis desktop`: the window (a loopback web app) where you talk to a model and every
tool call goes through the proxy, so it can be undone."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from synartesis.cli.app import app
from synartesis.cli.common import JournalOpt, ManifestOpt


@app.command("desktop")
def desktop_cmd(port: int = typer.Option(0, "--port", help="Port to listen on (default: any free port).", metavar="PORT"),
                host: str = typer.Option("127.0.0.1", "--host", help="Loopback address to listen on (127.0.0.1 or ::1; nothing else is accepted)."),
                no_browser: bool = typer.Option(False, "--no-browser", help="Print the address instead of opening a window."),
                by: Optional[str] = typer.Option(None, "--by", help="Who approves, denies and undoes (default: the OS user)."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt) -> None:
    """Open the window: talk to a model; every tool call is journalled, held calls wait for you, and Undo puts things back."""
    from synartesis.desktop.serve import Launch, bind, serve
    from synartesis.paths import Env, synartesis_home
    from synartesis.services.context import default_actor, given_actor, where

    if not 0 <= port <= 65535:
        raise typer.BadParameter("a port is 0 to 65535", param_hint="--port")
    sock = bind(host, port)  # refuses anything but loopback (exit 2)
    w = where(manifest, journal)
    launch = Launch(w.policy, w.journal, given_actor(by) or default_actor(), synartesis_home(Env.current()) / "desktop.json")

    def ready(url: str) -> None:
        sys.stdout.write(f"synartesis desktop: {url}\n"
                         f"  policy {w.policy}\n  journal {w.journal}\n"
                         "  the address carries this window's token: do not share it · Ctrl+C to stop\n")
        sys.stdout.flush()
        if not no_browser and not native:
            _open(url)

    def no_window(url: str, why: str) -> None:
        sys.stderr.write(f"synartesis: the native window could not open ({why}); using the browser\n")
        _open(url)

    native = not no_browser and _has_webview()
    raise typer.Exit(serve(launch, sock, ready, native=native, on_native_failed=no_window))


def _has_webview() -> bool:
    """pywebview (the ``desktop`` extra) is installed: a native window instead of a browser tab."""
    import importlib.util
    return importlib.util.find_spec("webview") is not None


def _open(url: str) -> None:
    """The default browser; with none (a server, CI) the printed address is enough."""
    import webbrowser
    try:
        webbrowser.open(url, new=1)
    except Exception:
        pass
