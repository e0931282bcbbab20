"""Running ``synartesis serve``: bind, TLS, the Host/Origin allowlists, and a SIGTERM that drains.

uvicorn serves :class:`~synartesis.serve.app.ServeApp`. The first SIGTERM (or Ctrl+C) starts a
drain: new requests get 503, the calls in flight are answered (up to ``drain`` seconds), then
every session is closed (what is still owed is answered "outcome unknown", the runs are closed)
and the server exits 0. A second signal exits at once.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass

from synartesis.serve.app import Backend, ServeApp, ServeConfig

__all__ = ["Listen", "allowed_hosts", "allowed_origins", "is_loopback", "run"]


@dataclass(frozen=True)
class Listen:
    """Where to listen: host, port (0: any free one), and TLS files (certificate, key) or None."""

    host: str = "127.0.0.1"
    port: int = 8420
    tls: tuple[str, str] | None = None


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def allowed_hosts(host: str, port: int, extra: list[str]) -> set[str]:
    """``Host`` values accepted: the loopback names on a loopback bind, the bound address
    otherwise (not a wildcard), and every ``--allow-host`` (with and without the port)."""
    out: set[str] = set()
    if is_loopback(host) or host in ("0.0.0.0", "::"):
        out |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    if host not in ("0.0.0.0", "::"):
        out.add(_netloc(host, port).lower())
    for h in extra:
        h = h.strip().lower()
        if not h:
            continue
        out.add(h if h.rsplit(":", 1)[-1].isdigit() and not h.endswith("]") else _netloc(h, port))
        out.add(h)
    return out


def allowed_origins(hosts: set[str], tls: bool, extra: list[str]) -> set[str]:
    """``Origin`` values accepted: each allowed host over the scheme served, plus ``--allow-origin``."""
    scheme = "https" if tls else "http"
    return {f"{scheme}://{h}" for h in hosts if ":" in h} | {o.strip().lower().rstrip("/") for o in extra if o.strip()}


class _Server:
    """uvicorn's Server with a draining first signal (built lazily: uvicorn is imported here only)."""

    @staticmethod
    def make(config, app: ServeApp, drain: float):
        import uvicorn

        class Draining(uvicorn.Server):
            def __init__(self) -> None:
                super().__init__(config)
                self._draining = False

            def handle_exit(self, sig: int, frame) -> None:
                if self._draining:
                    self.force_exit = True
                    super().handle_exit(sig, frame)
                    return
                self._draining = True
                loop = asyncio.get_event_loop()

                async def drain_then_exit() -> None:
                    await app.drain(drain)
                    self.should_exit = True
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(drain_then_exit()))

        return Draining()


def run(config: ServeConfig, backend: Backend, listen: Listen, on_ready: Callable[[str], None], *,
        allow_hosts: list[str] | None = None, allow_origins: list[str] | None = None) -> int:
    """Serve until a signal; returns the exit code (0).

    The allowlists are completed once the port is known (``--port 0``): see
    :func:`allowed_hosts` and :func:`allowed_origins`. ``on_ready(base_url)`` is called once the
    socket listens.
    Raises:
        OSError: the address cannot be bound.
    """
    import uvicorn

    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((listen.host.strip("[]"), listen.port))
    sock.listen(256)
    port = sock.getsockname()[1]
    config.allowed_hosts = allowed_hosts(listen.host, port, allow_hosts or [])
    config.allowed_origins = allowed_origins(config.allowed_hosts, listen.tls is not None, allow_origins or [])
    app = ServeApp(config, backend)
    uconfig = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5,
                             ssl_certfile=listen.tls[0] if listen.tls else None,
                             ssl_keyfile=listen.tls[1] if listen.tls else None, access_log=False)
    server = _Server.make(uconfig, app, config.drain)
    scheme = "https" if listen.tls else "http"
    on_ready(f"{scheme}://{_netloc(listen.host, port)}")
    server.run(sockets=[sock])
    return 0
