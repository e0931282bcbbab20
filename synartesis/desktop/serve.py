"""Running the window: bind a loopback socket, build the app, serve it with uvicorn.

uvicorn's access log is off (the first request's URL carries the token) and its own logging
is left unconfigured; SIGINT/SIGTERM shut down gracefully: turns stop, every MCP connection
closes, and each proxy ends its run.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from synartesis.desktop.guard import Guard, check_loopback
from synartesis.errors import UsageError

__all__ = ["Launch", "serve", "bind"]


@dataclass(frozen=True)
class Launch:
    """Where the window works: the policy and journal (as the CLI finds them), who acts, and
    the settings file (None: keep settings in memory)."""

    policy: Path
    journal: Path
    by: str
    settings: Path | None


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on loopback ``host``:``port`` (0 = any free port).

    Raises:
        UsageError: ``host`` is not loopback, or the port cannot be had.
    """
    try:
        host = check_loopback(host)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve(launch: Launch, sock: socket.socket, on_ready: Callable[[str], None], native: bool = False,
          on_native_failed: Callable[[str, str], None] | None = None) -> int:
    """Serve until interrupted; ``on_ready(url)`` once the page can be loaded. Returns 0.

    ``native``: show the page in a pywebview window (the ``desktop`` extra) and stop when it
    closes; pywebview needs the main thread, so the server then runs on another one. When the
    window cannot be opened (no GUI toolkit), ``on_native_failed(url, why)`` is called and the
    server goes on until Ctrl+C.
    """
    from synartesis.desktop.keys import KeyStore
    keys = KeyStore()  # finds the keychain on a thread while the server's modules load

    import uvicorn

    from synartesis.desktop.app import build_app
    from synartesis.desktop.settings import Settings
    from synartesis.desktop.window import Window

    host, port = sock.getsockname()[:2]
    guard = Guard.new(host, port)
    holder: dict = {}

    def ready() -> None:
        on_ready(guard.url)
        if "native" in holder:
            holder["native"].set()

    class _App:
        """Builds the window inside uvicorn's event loop (asyncio objects bind to it)."""

        async def __call__(self, scope, receive, send):
            if "app" not in holder:
                window = Window(launch.policy, launch.journal, launch.by, keys, Settings(launch.settings))
                holder["window"] = window
                holder["app"] = build_app(window, guard, ready)
            await holder["app"](scope, receive, send)

    # plain asyncio + h11 and no websocket support: nothing optional to probe for at start-up
    config = uvicorn.Config(_App(), log_config=None, access_log=False, log_level="warning", lifespan="on",
                            loop="asyncio", http="h11", ws="none", timeout_graceful_shutdown=5)

    class _Server(uvicorn.Server):
        async def shutdown(self, sockets=None):
            # end the live-event streams first, or uvicorn waits for them to time out
            if "window" in holder:
                holder["window"].hub.close()
            await super().shutdown(sockets)

    server = _Server(config)
    if not native:
        server.run(sockets=[sock])
        return 0
    import threading

    import webview  # the optional `desktop` extra

    opened = threading.Event()
    holder["native"] = opened
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn", daemon=True)
    thread.start()
    while not opened.wait(0.1):
        if not thread.is_alive():
            return 1
    import logging
    logging.getLogger("pywebview").setLevel(logging.CRITICAL)  # its toolkit probing logs tracebacks; we say why
    try:
        webview.create_window("synartesis", guard.url, width=1280, height=800, min_size=(420, 560))
        webview.start()
    except Exception as exc:  # no GUI toolkit for pywebview here: keep serving for a browser
        if on_native_failed is not None:
            on_native_failed(guard.url, f"{type(exc).__name__}: {exc}")
        try:
            while thread.is_alive():
                thread.join(0.5)
        except KeyboardInterrupt:
            pass
    server.should_exit = True
    thread.join(20)
    return 0
