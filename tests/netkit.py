"""Network test helpers for remote servers and ``serve``: processes that serve HTTP on a
loopback port, a TCP relay that can cut connections on cue, a CONNECT proxy, and TLS
certificates. Everything binds 127.0.0.1 and is reaped by the tests' finalisers.

The relay and the proxy are the only stand-ins: no real part can drop a connection halfway
through an answer on cue, and the CONNECT proxy is what ``HTTPS_PROXY`` points at. Processes
are started through :func:`helpers.spawn`, so each test's reaper ends them (they are
per-test: nothing outlives its test).
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
OAUTH_SERVER = REPO / "tests" / "remote" / "oauth_server.py"


def plain(msg):
    """A frame's value as a test reads it: the upstream hands answers over as the engine's
    :class:`~synartesis.proxy.framing.LazyFrame` (its envelope read, its result not built)."""
    from synartesis.proxy.framing import LazyFrame
    return msg.parse() if isinstance(msg, LazyFrame) else msg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout:g} s")


class ServerProcess:
    """A server started in its own process group; :meth:`stop` (idempotent) reaps it.

    Args:
        argv, env: how to start it.
        url_pattern: a regex whose first match on stderr is the URL (the server picks a port);
            else ``port`` is waited for.
    """

    def __init__(self, argv: list[str], env: dict | None = None, *, url_pattern: str | None = None,
                 port: int | None = None, timeout: float = 30.0, cwd: str | None = None) -> None:
        from helpers import spawn  # registered with the test's reaper (tests/conftest.py procs)
        self.proc = spawn(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.stderr_lines: list[str] = []
        self.url = ""
        self.port = port
        if url_pattern:
            self.url = self._await_line(url_pattern, timeout)
            m = re.search(r":(\d+)/", self.url)
            self.port = int(m.group(1)) if m else None
        elif port is not None:
            wait_port(port, timeout, self.proc)
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def _await_line(self, pattern: str, timeout: float) -> str:
        assert self.proc.stderr is not None
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        buf = b""
        while time.monotonic() < end:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.2)
            if r:
                chunk = os.read(self.proc.stderr.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, rest = buf.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace")
                    self.stderr_lines.append(text)
                    m = rx.search(text)
                    if m:
                        if rest:
                            self.stderr_lines.append(rest.decode("utf-8", "replace"))
                        return m.group(1) if m.groups() else m.group(0)
                buf = rest
            elif self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("the server did not say where it listens:\n" + "\n".join(self.stderr_lines[-20:]))

    def _read_rest(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
        except (OSError, ValueError):
            pass

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                self.proc.wait(5)
        return self.proc.returncode

    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)


def everything(mode: str, port: int | None = None) -> ServerProcess:
    """@modelcontextprotocol/server-everything in ``streamableHttp`` or ``sse`` mode."""
    if not EVERYTHING.exists():
        raise RuntimeError(f"{EVERYTHING} is missing: run .ci/run (or npm ci --prefix .servers) first")
    for _ in range(3):
        p = port or free_port()
        env = dict(os.environ, PORT=str(p))
        try:
            return ServerProcess(["node", str(EVERYTHING), mode], env, port=p)
        except RuntimeError:
            if port:
                raise
    raise RuntimeError("server-everything would not start")


def crm_http(state: Path, token: str, *, port: int = 0, extra: list[str] | None = None,
             env: dict | None = None) -> ServerProcess:
    """The demo CRM over Streamable HTTP (``--http``), bearer token in ``CRM_TOKEN``."""
    e = dict(env or os.environ, CRM_TOKEN=token)
    return ServerProcess([sys.executable, "-m", "synartesis.demo.crm_server", "--http", "--port", str(port),
                          "--state", str(state), *(extra or [])], e, url_pattern=r"serving (\S+)")


def oauth_server(*args: str, env: dict | None = None) -> ServerProcess:
    """tests/remote/oauth_server.py (authorization server + protected MCP server)."""
    return ServerProcess([sys.executable, str(OAUTH_SERVER), *args], env, url_pattern=r"oauth-server: (\S+)")


class Relay:
    """A TCP relay 127.0.0.1:port → target, with faults on cue.

    Attributes:
        mode: ``"pass"``; ``"swallow"`` (client bytes reach the server, nothing comes back,
            then the connection is cut once the server has answered; with ``swallow_if`` set,
            only on a connection whose request bytes contained it); ``"refuse"`` (new
            connections are closed at once).
        up, down: every byte seen client→server and server→client.
    """

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.swallow_if: bytes | None = None
        self.up = bytearray()
        self.down = bytearray()
        self._lock = threading.Lock()
        self._conns: list[tuple[socket.socket, socket.socket]] = []
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = self._server.getsockname()[1]
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.mode == "refuse":
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.append((client, upstream))
            seen = bytearray()  # this connection's request bytes
            threading.Thread(target=self._pump, args=(client, upstream, self.up, False, seen), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, self.down, True, seen), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, log: bytearray, downstream: bool,
              seen: bytearray) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self._lock:
                    log += data
                    if not downstream:
                        seen += data
                if downstream and self.mode == "swallow" and (self.swallow_if is None or self.swallow_if in seen):
                    break  # the server answered; the client never sees it
                dst.sendall(data)
        except OSError:
            pass
        _shut(src, dst, close=True)

    def cut(self) -> None:
        """Drop every open connection (both sides)."""
        with self._lock:
            conns, self._conns = self._conns, []
        for pair in conns:
            _shut(*pair, close=True)

    def close(self) -> None:
        self._stopped = True
        self.cut()
        self._server.close()


class ConnectProxy:
    """A minimal HTTP ``CONNECT`` proxy (what ``HTTPS_PROXY`` names); records each target."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data:
                client.close()
                return
            head += data
        line = head.split(b"\r\n", 1)[0].decode()
        method, target, _ = line.split(" ", 2)
        self.targets.append(f"{method} {target}")
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            client.close()
            return
        host, port = target.rsplit(":", 1)
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            client.close()
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_splice, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self._server.close()


def _splice(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    _shut(a, b, close=False)


def _shut(*socks: socket.socket, close: bool) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if close:
            s.close()


@dataclass
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(folder: Path) -> Certs:
    """A private CA and a certificate for 127.0.0.1 / localhost signed by it (PEM files)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "synartesis test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    out = Certs(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return out
