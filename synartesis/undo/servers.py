"""The servers undo, redo and the held-call preview talk to: the one place they reach an upstream.

Two pools with one interface:
- :class:`SpawnedServers` (the CLI): starts, on first use, each server a run touched, from the
  launch line that run's proxy recorded (:mod:`synartesis.undo.launch`). Runs of one session
  that started the same server the same way share one process; the same server name with
  another launch line (another root folder, say) is another process, so every inverse goes
  where its write went. The servers of one attempt start in parallel: every ``initialize`` is
  sent before any answer is awaited.
- :class:`HeldServers` (saga mode, in the proxy): the connections the caller already holds.

Every request goes through :meth:`ServerPool.read` and :meth:`ServerPool.call`, blocking the
calling thread on the synchronous upstream (:mod:`synartesis.proxy.client`); no event loop.
A :class:`Stop` set from another thread (the console's esc) kills what a pool started at once:
requests in flight fail as ``closed`` (outcome unknown), which the engines record honestly.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

from synartesis.canonical import canonical
from synartesis.errors import UpstreamError
from synartesis.journal import RunRow
from synartesis.policy.model import Policy
from synartesis.proxy.client import McpClient
from synartesis.proxy.pipeline import ReadOutcome, run_read_sync, start_read
from synartesis.proxy.transport import RequestFailed
from synartesis.undo.launch import launch_specs

__all__ = ["ServerPool", "SpawnedServers", "HeldServers", "ReadOutcome", "RequestFailed", "Request", "Stop"]

# (method, params, *, timeout, meta) -> result, blocking: what an upstream connection offers.
Request = Callable[..., Any]


class Stop:
    """A stop signal for a running undo, redo or check, set from another thread.

    :meth:`set` runs every hook registered with :meth:`on_set` (a pool kills its servers), once.
    The engines check :meth:`is_set` between steps and take no further step once it is set.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._hooks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Stop: run the hooks now (on this thread)."""
        with self._lock:
            if self._set:
                return
            self._set = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_set(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when :meth:`set` is called (at once if it already was)."""
        with self._lock:
            if not self._set:
                self._hooks.append(hook)
                return
        hook()


class ServerPool:
    """What the engines need from servers. ``run_id`` says whose launch line a server is."""

    warnings: list[str]

    def start(self, needed: set[tuple[str, str]]) -> None:
        """Make ``{(run id, server)}`` reachable (failures are kept for :meth:`why_not`)."""

    def request(self, run_id: str, server: str) -> Request | None:
        raise NotImplementedError

    def why_not(self, run_id: str, server: str) -> str:
        return f"server {server} is not running"

    def launch_note(self, run_id: str, server: str) -> tuple[str, str] | None:
        """Why ``server`` (as ``run_id`` launched it) may not reach the data the run changed:
        ``("refused", problem)`` when it was not started (a launch refusal: a variable the run
        had is not set, entries in dispute, a hidden argument), ``("doubt", warning)`` when it
        was started with a variable taken from this shell that the client entry gave the run;
        None otherwise. A halt on that server says it (a new user's round 7)."""
        return None

    def read(self, run_id: str, read: dict, *, timeout: float, max_bytes: int) -> ReadOutcome:
        """Run a resolved read on the server it names (see ``pipeline.run_read_sync``)."""
        req = self.request(run_id, read["server"])
        if req is None:
            return ReadOutcome("failed", reason=self.why_not(run_id, read["server"]))
        return run_read_sync(req, read, timeout=timeout, max_bytes=max_bytes)

    def begin_read(self, run_id: str, read: dict, *, timeout: float, max_bytes: int) -> Callable[[], ReadOutcome]:
        """Send a resolved read now; return what waits for its outcome (a pool that cannot
        send without waiting runs it at once)."""
        done = self.read(run_id, read, timeout=timeout, max_bytes=max_bytes)
        return lambda: done

    def call(self, run_id: str, server: str, tool: str, args: Any, *, timeout: float,
             meta: dict | None = None) -> Any:
        """Send one ``tools/call``; its result.

        Raises:
            RequestFailed: not sent (``maybe_applied`` False: the server is not running or the
                write failed), or sent without an answer (``maybe_applied`` True).
        """
        req = self.request(run_id, server)
        if req is None:
            raise RequestFailed(self.why_not(run_id, server), "unsent")  # never reached a server
        return req("tools/call", {"name": tool, "arguments": args}, timeout=timeout, meta=meta)

    def close(self) -> None:
        """Stop what this pool started."""


class SpawnedServers(ServerPool):
    """Servers started from the recorded launch lines of ``runs`` (see module docstring).

    ``stop``: when set (from any thread), every server started is killed at once and no more
    are started.
    """

    def __init__(self, runs: Mapping[str, RunRow], policy: Policy | None, entry_env: Any = None,
                 stop: Stop | None = None) -> None:
        self.runs = dict(runs)
        self.policy = policy
        self.entry_env = entry_env
        self.stop = stop
        self.ups: dict[str, McpClient] = {}     # process key → initialized client
        self._started: list[McpClient] = []     # every server started, initialized or not
        self._lock = threading.Lock()
        self.keys: dict[tuple[str, str], str] = {}  # (run, server) → process key
        self.errors: dict[str, str] = {}        # process key or "run\0server" → why it is not there
        self.warnings: list[str] = []
        self.notes: dict[tuple[str, str], tuple[str, str]] = {}  # (run, server) → launch_note
        if stop is not None:
            stop.on_set(self.kill)

    def start(self, needed: set[tuple[str, str]], timeout: float = 30.0) -> None:
        """Start and initialize what ``needed`` names and is not running yet, in parallel.

        Servers are spawned on this thread (a server dies with the thread that started it,
        see :func:`synartesis.proxy.spawn.popen_server`), then every ``initialize`` is sent
        before any answer is awaited.
        """
        specs: dict[str, Any] = {}
        by_run: dict[str, set[str]] = {}
        for run_id, server in needed:
            by_run.setdefault(run_id, set()).add(server)
        for run_id, names in sorted(by_run.items()):
            run = self.runs.get(run_id)
            found, problems = launch_specs(names, run.servers if run else {}, self.policy, entry_env=self.entry_env)
            for p in problems:
                self.errors[f"{run_id}\0{p.split(':', 1)[0]}"] = p
                self.notes[(run_id, p.split(':', 1)[0])] = ("refused", p)
            for name, spec in found.items():
                key = canonical([name, spec.command, spec.args, spec.cwd])
                self.keys[(run_id, name)] = key
                if spec.doubts:
                    self.notes[(run_id, name)] = ("doubt", "; ".join(spec.doubts))
                if key not in specs:
                    specs[key] = spec
                    self.warnings.extend(w for w in spec.warnings if w not in self.warnings)

        begun: list[tuple[str, McpClient, Callable[[float | None], dict]]] = []
        for key, spec in specs.items():
            if key in self.ups:
                continue
            if self.stop is not None and self.stop.is_set():
                self.errors[key] = f"{spec.server} was not started: stopped"
                continue
            try:
                client = McpClient.spawn(spec.command, spec.args, env=spec.env, cwd=spec.cwd, label=spec.server)
            except UpstreamError as exc:
                self.errors[key] = str(exc)
                continue
            with self._lock:
                self._started.append(client)  # closed by close(), killed by stop, initialized or not
                stopped = self.stop is not None and self.stop.is_set()
            if stopped:
                client.kill()
            try:
                begun.append((key, client, client.begin_initialize()))
            except UpstreamError as exc:
                self.errors[key] = str(exc)
        for key, client, finish in begun:
            try:
                finish(timeout)
            except UpstreamError as exc:
                self.errors[key] = str(exc)
                continue
            self.ups[key] = client

    def launch_note(self, run_id: str, server: str) -> tuple[str, str] | None:
        return self.notes.get((run_id, server))

    def request(self, run_id: str, server: str) -> Request | None:
        up = self.ups.get(self.keys.get((run_id, server), ""))
        return up.request if up is not None else None

    def begin_read(self, run_id: str, read: dict, *, timeout: float, max_bytes: int) -> Callable[[], ReadOutcome]:
        up = self.ups.get(self.keys.get((run_id, read["server"]), ""))
        if up is None:
            failed = ReadOutcome("failed", reason=self.why_not(run_id, read["server"]))
            return lambda: failed
        return start_read(up.upstream, read, timeout=timeout, max_bytes=max_bytes)

    def why_not(self, run_id: str, server: str) -> str:
        key = self.keys.get((run_id, server))
        return self.errors.get(key or "", self.errors.get(f"{run_id}\0{server}", f"server {server} is not running"))

    def kill(self) -> None:
        """SIGKILL every server this pool started, now (any thread): what is waiting on one
        fails as ``closed``."""
        with self._lock:
            started = list(self._started)
        for client in started:
            client.kill()

    def close(self) -> None:
        """Shut every started server down in order, all at once (each in its own grace)."""
        with self._lock:
            started = list(self._started)  # kept until they are down: a stop meanwhile kills them
        for client in started:
            client.upstream.close_stdin()  # the polite request to all first: they exit together
        for client in started:
            client.close()
        with self._lock:
            self._started = [c for c in self._started if c not in started]


class HeldServers(ServerPool):
    """Connections the caller holds, by server name (saga mode: the proxy's own upstream)."""

    def __init__(self, requests: Mapping[str, Request]) -> None:
        self.requests = dict(requests)
        self.warnings = []

    def request(self, run_id: str, server: str) -> Request | None:
        return self.requests.get(server)

    def why_not(self, run_id: str, server: str) -> str:
        return f"server {server} is not connected to this proxy"
