"""Who may talk to the window's server: loopback only, a per-launch token, Host and Origin checks.

The server listens on a loopback address only (anything else is refused before binding). A
random token is printed in the URL; the first request that carries it gets it back as an
``HttpOnly; SameSite=Strict`` cookie and is redirected to a URL without it. Every request must
carry the cookie (or the token), name this server in ``Host`` (so a DNS-rebinding page cannot
reach it under another name) and, when it has an ``Origin``, come from this server's own origin
(so another site open in the same browser cannot drive it). Standard library only.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Guard", "check_loopback", "LOOPBACK_NAMES"]

LOOPBACK_NAMES = ("localhost",)


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address (127.0.0.0/8, ::1) or ``localhost``.

    Raises:
        ValueError: anything else (``0.0.0.0``, ``::``, a LAN address, a hostname), with why.
    """
    h = host.strip().strip("[]")
    if h.lower() in LOOPBACK_NAMES:
        return "127.0.0.1"
    try:
        addr = ipaddress.ip_address(h)
    except ValueError:
        raise ValueError(f"--host {host}: give a loopback address (127.0.0.1 or ::1); the window "
                         "must not be reachable from other machines") from None
    if not addr.is_loopback:
        raise ValueError(f"--host {host} is not a loopback address; the window serves only this machine "
                         "(127.0.0.1 or ::1), since it can read your journal and run your tools")
    return str(addr)


@dataclass
class Guard:
    """The checks for one launch.

    Attributes:
        host: the bound loopback address; port: the bound port; token: the secret.
    """

    host: str
    port: int
    token: str

    @classmethod
    def new(cls, host: str, port: int) -> "Guard":
        return cls(host, port, secrets.token_urlsafe(32))

    @property
    def cookie_name(self) -> str:
        # cookies are not per port: two windows on one machine must not overwrite each other's
        return f"synartesis-desktop-{self.port}"

    @property
    def hosts(self) -> set[str]:
        """``Host`` header values that name this server."""
        names = {self.host, "localhost"} if self.host.startswith("127.") else {f"[{self.host}]", "localhost"}
        return {f"{n}:{self.port}" for n in names}

    @property
    def url(self) -> str:
        """The URL to open (it carries the token once)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?token={self.token}"

    def token_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())  # type: ignore[union-attr]

    def host_ok(self, host: str | None) -> bool:
        return (host or "").lower() in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        """No ``Origin`` (a top-level navigation, curl) is fine; otherwise it must be ours."""
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme == "http" and parts.netloc.lower() in self.hosts

    def refusal(self, headers: dict[str, str], cookie: str | None, query_token: str | None) -> str | None:
        """Why a request is refused (None: allowed). ``headers`` lower-cased names."""
        if not self.host_ok(headers.get("host")):
            return "this server answers only to its own loopback address"
        if not self.origin_ok(headers.get("origin")):
            return "requests from other sites are refused"
        if not (self.token_ok(cookie) or self.token_ok(query_token)):
            return "open the address synartesis desktop printed (it carries this window's token)"
        return None
