"""The servers undo, redo and the held-call preview talk to: the one place they reach an upstream.

Two pools with one interface:
- :class:`SpawnedServers` (the CLI): starts, on first use, each server a run touched, from the
  launch line that run's proxy recorded (:mod:`synartesis.undo.launch`). Runs of one session
  that started the same server the same way share one process; the same server name with
  another launch line (another root folder, say) is another process, so every inverse goes
  where its write went.
- :class:`HeldServers` (saga mode, in the proxy): the connections the caller already holds.

Every request goes through :meth:`read` and :meth:`call`, so moving the CLI to a synchronous
upstream changes this module only.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping

from synartesis.canonical import canonical
from synartesis.errors import UpstreamError
from synartesis.journal import RunRow
from synartesis.policy.model import Policy
from synartesis.proxy.pipeline import ReadOutcome, run_read
from synartesis.proxy.upstream import RequestFailed, Upstream
from synartesis.undo.launch import launch_specs

__all__ = ["ServerPool", "SpawnedServers", "HeldServers", "ReadOutcome", "RequestFailed", "Request"]

# (method, params, *, timeout, meta) -> result: what an upstream connection offers.
Request = Callable[..., Awaitable[Any]]


class ServerPool:
    """What the engines need from servers. ``run_id`` says whose launch line a server is."""

    warnings: list[str]

    async def start(self, needed: set[tuple[str, str]]) -> None:
        """Make ``{(run id, server)}`` reachable (failures are kept for :meth:`why_not`)."""

    def request(self, run_id: str, server: str) -> Request | None:
        raise NotImplementedError

    def why_not(self, run_id: str, server: str) -> str:
        return f"server {server} is not running"

    async def read(self, run_id: str, read: dict, *, timeout: float, max_bytes: int) -> ReadOutcome:
        """Run a resolved read on the server it names (see ``pipeline.run_read``)."""
        req = self.request(run_id, read["server"])
        if req is None:
            return ReadOutcome("failed", reason=self.why_not(run_id, read["server"]))
        return await run_read(req, read, timeout=timeout, max_bytes=max_bytes)

    async def call(self, run_id: str, server: str, tool: str, args: Any, *, timeout: float,
                   meta: dict | None = None) -> Any:
        """Send one ``tools/call``; its result.

        Raises:
            RequestFailed: not sent (``maybe_applied`` False: the server is not running or the
                write failed), or sent without an answer (``maybe_applied`` True).
        """
        req = self.request(run_id, server)
        if req is None:
            raise RequestFailed(self.why_not(run_id, server), "unsent")  # never reached a server
        return await req("tools/call", {"name": tool, "arguments": args}, timeout=timeout, meta=meta)

    async def close(self) -> None:
        """Stop what this pool started."""


class SpawnedServers(ServerPool):
    """Servers started from the recorded launch lines of ``runs`` (see module docstring)."""

    def __init__(self, runs: Mapping[str, RunRow], policy: Policy | None, entry_env: Any = None) -> None:
        self.runs = dict(runs)
        self.policy = policy
        self.entry_env = entry_env
        self.ups: dict[str, Upstream] = {}      # process key → upstream
        self._started: list[Upstream] = []      # every server started, initialized or not
        self.keys: dict[tuple[str, str], str] = {}  # (run, server) → process key
        self.errors: dict[str, str] = {}        # process key or "run\0server" → why it is not there
        self.warnings: list[str] = []

    async def start(self, needed: set[tuple[str, str]]) -> None:
        specs: dict[str, Any] = {}
        by_run: dict[str, set[str]] = {}
        for run_id, server in needed:
            by_run.setdefault(run_id, set()).add(server)
        for run_id, names in sorted(by_run.items()):
            run = self.runs.get(run_id)
            found, problems = launch_specs(names, run.servers if run else {}, self.policy, entry_env=self.entry_env)
            for p in problems:
                self.errors[f"{run_id}\0{p.split(':', 1)[0]}"] = p
            for name, spec in found.items():
                key = canonical([name, spec.command, spec.args, spec.cwd])
                self.keys[(run_id, name)] = key
                if key not in specs:
                    specs[key] = spec
                    self.warnings.extend(w for w in spec.warnings if w not in self.warnings)

        async def one(key: str, spec: Any) -> None:
            ctx = Upstream.spawn(spec.command, spec.args, env=spec.env, cwd=spec.cwd, label=spec.server)
            up = await ctx.__aenter__()
            self._started.append(up)  # closed by close() even if initialize is cancelled (esc in the console)
            try:
                await up.initialize()
            except UpstreamError as exc:
                self._started.remove(up)
                await up.close()
                self.errors[key] = str(exc)
                return
            self.ups[key] = up

        pending = [(k, s) for k, s in specs.items() if k not in self.ups]
        results = await asyncio.gather(*(one(k, s) for k, s in pending), return_exceptions=True)
        for (key, _), res in zip(pending, results):
            if isinstance(res, BaseException):
                self.errors[key] = str(res)

    def request(self, run_id: str, server: str) -> Request | None:
        up = self.ups.get(self.keys.get((run_id, server), ""))
        return up.child.request if up is not None else None

    def why_not(self, run_id: str, server: str) -> str:
        key = self.keys.get((run_id, server))
        return self.errors.get(key or "", self.errors.get(f"{run_id}\0{server}", f"server {server} is not running"))

    async def close(self) -> None:
        try:
            await asyncio.gather(*(u.close() for u in self._started), return_exceptions=True)
        except BaseException:  # cancelled again while closing (the console's esc): stop them now
            for u in self._started:
                u.child.kill()
            raise


class HeldServers(ServerPool):
    """Connections the caller holds, by server name (saga mode: the proxy's own upstream)."""

    def __init__(self, requests: Mapping[str, Request]) -> None:
        self.requests = dict(requests)
        self.warnings = []

    def request(self, run_id: str, server: str) -> Request | None:
        return self.requests.get(server)

    def why_not(self, run_id: str, server: str) -> str:
        return f"server {server} is not connected to this proxy"
