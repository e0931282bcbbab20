"""A real PostgreSQL server for the tests (issue 14): started on a free loopback port in a
temporary data directory, as an unprivileged user when the tests run as root (initdb refuses
root), and stopped by the session fixture's finaliser.

The server asks for a password over TCP (scram-sha-256), so the tests go through the same
``PGPASSWORD`` path a user's does; each test gets a database of its own.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SUPERUSER = "synartesis"
PASSWORD = "s3cret-test-pw"  # the test server's own; tests assert it never reaches output
_names = itertools.count(1)


def find_bindir() -> Path | None:
    """The folder holding initdb/pg_ctl/postgres: ``$SYNARTESIS_PG_BINDIR``, Debian's
    ``/usr/lib/postgresql/N/bin`` (newest), or PATH. None when there is none."""
    given = os.environ.get("SYNARTESIS_PG_BINDIR")
    candidates = [given] if given else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(str(Path(found).parent))
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "postgres").exists():
            return Path(c)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One running PostgreSQL cluster."""

    def __init__(self, bindir: Path, root: Path, port: int, proc: subprocess.Popen) -> None:
        self.bindir, self.root, self.port, self.proc = bindir, root, port, proc

    @classmethod
    def start(cls, bindir: Path, *, settings: dict[str, str] | None = None) -> "PgServer":
        """initdb + postgres on a free port; waits until it accepts connections (30 s)."""
        root = Path(tempfile.mkdtemp(prefix="synartesis-pg-"))
        user = _unprivileged()
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if user:
            os.chmod(root, 0o755)
            shutil.chown(root, user[0], user[1])
            shutil.chown(pwfile, user[0], user[1])
        kw = {"user": user[0], "group": user[1]} if user else {}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        subprocess.run([str(bindir / "initdb"), "-D", str(root / "data"), "-U", SUPERUSER, f"--pwfile={pwfile}",
                        "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync",
                        "--no-instructions"], check=True, capture_output=True, env=env, cwd=root, timeout=120, **kw)
        port = free_port()
        conf = {"listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(root),
                "max_connections": "200", "shared_buffers": "32MB", "fsync": "off", "full_page_writes": "off",
                "log_min_messages": "fatal", "logging_collector": "off"}
        conf.update(settings or {})
        args = [str(bindir / "postgres"), "-D", str(root / "data")]
        for k, v in conf.items():
            args += ["-c", f"{k}={v}"]
        log = open(root / "server.log", "wb")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
                                start_new_session=True, **kw)
        log.close()
        server = cls(bindir, root, port, proc)
        server._wait_ready()
        return server

    def url(self, dbname: str = "postgres", user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, dbname: str = "postgres"):
        import psycopg
        return psycopg.connect(self.url(dbname), password=PASSWORD, autocommit=True)

    def _wait_ready(self) -> None:
        import psycopg
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("postgres exited: " + (self.root / "server.log").read_text(errors="replace")[-2000:])
            try:
                psycopg.connect(self.url(), password=PASSWORD, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; returns its name."""
        name = f"{prefix}{os.getpid()}_{next(_names)}"
        with self.admin() as c:
            c.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then SIGKILL after 15 s; removes the data directory."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


def _unprivileged() -> tuple[str, str] | None:
    """(user, group) to run the server as when we are root; None otherwise."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import grp
    import pwd
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return name, grp.getgrgid(pw.pw_gid).gr_name
    raise RuntimeError("running as root and there is no unprivileged user (postgres, nobody) to run PostgreSQL")


def agent_calls(argv: list[str], calls: list[tuple[str, dict]], env: dict | None = None) -> list[tuple[bool, str]]:
    """Make ``calls`` through the proxy at ``argv`` with the mcp SDK's stdio client, one
    session; returns (isError, text) per call."""
    import asyncio

    from helpers import sdk_session, text_of

    async def go() -> list[tuple[bool, str]]:
        out = []
        async with sdk_session(argv, env=env) as s:
            for name, args in calls:
                r = await s.call_tool(name, args)
                out.append((bool(r.is_error), text_of(r)))
        return out

    return asyncio.run(go())
