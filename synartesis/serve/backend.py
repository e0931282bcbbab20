"""``serve``'s backend: each MCP session gets its own upstream (the policy's server, started as
the stdio proxy would start it) behind its own :class:`~synartesis.proxy.engine.Engine`, so
every ``tools/call`` goes through the same pipeline, gates and journal as through the stdio
proxy. A session is one run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from synartesis.errors import UpstreamError

__all__ = ["EngineBackend", "served_servers"]


def served_servers(policy: Any, wanted: list[str] | None) -> tuple[list[str], list[str]]:
    """(names ``serve`` can start, problems): every policy server with a ``command``, or only
    ``wanted`` (each must exist and have one)."""
    names = list(wanted) if wanted else [n for n, s in policy.servers.items() if s.command]
    problems = []
    for name in names:
        spec = policy.servers.get(name)
        if spec is None:
            problems.append(f"{name} is not a server of the policy {policy.path}")
        elif not spec.command:
            problems.append(f"{name} has no command in the policy {policy.path}, so serve cannot start it")
    return [n for n in names if n in policy.servers and policy.servers[n].command], problems


class _Watched:
    """The upstream, telling ``serve`` when the server went away (the session then ends)."""

    def __init__(self, inner: Any, ended: Callable[[], None]) -> None:
        self._inner, self._ended = inner, ended

    def start(self, on_message: Callable, on_close: Callable[[], None]) -> None:
        def closed() -> None:
            on_close()
            self._ended()
        self._inner.start(on_message, closed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _EngineSession:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._closed = threading.Event()

    def feed(self, frame: bytes) -> None:
        self.engine.on_client_line(frame)

    def close(self, drain: float) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self.engine.on_client_eof()
        self.engine.drain(drain)  # answer what was received (bounded), as at a client's EOF
        self.engine.shutdown()


class EngineBackend:
    """Opens a session: start the server, wrap it in an engine, start the engine.

    Args:
        policy: the loaded policy; its ``servers.NAME.command/args/env/cwd`` say how to start.
        journal_path: the journal every session's run goes to.
        options: the engine's options (timeouts, snapshot cap).
        protected: files no guarded call may write without approval (the policy cache).
        environ: the environment servers get (``env`` references expanded against it).
        saga_hook: what rolls a run back in saga mode (``servers.NAME.saga`` or
            ``serve --saga``): the CLI gives ``services.saga.rollback``, as the proxy's entry
            point does; without one saga mode is off.
        launch: ``launch(name) -> (command, args, env, cwd)``: how a session's server is
            started (the CLI gives :func:`synartesis.services.serving.server_launcher`, which
            adds the client entry's env as undo does); default: the policy's line, with its
            ``env`` expanded against ``environ``.
    """

    def __init__(self, policy: Any, journal_path: Path, options: Any, protected: list[str] | None = None,
                 environ: Mapping[str, str] | None = None, saga_hook: Callable[..., str] | None = None,
                 launch: Callable[[str], tuple[str, list[str], dict[str, str], str | None]] | None = None) -> None:
        self.policy, self.journal_path, self.options = policy, journal_path, options
        self.protected = list(protected or [])
        self.environ = dict(os.environ if environ is None else environ)
        self.saga_hook = saga_hook
        self.launch = launch or self._policy_launch

    def _policy_launch(self, server: str) -> tuple[str, list[str], dict[str, str], str | None]:
        from synartesis.expand import expand_env

        spec = self.policy.servers[server]
        env = dict(self.environ)
        env.update({k: expand_env(v, self.environ) for k, v in spec.env.items()})
        return spec.command, list(spec.args), env, spec.cwd

    def open(self, server: str, send: Callable[[bytes], None], ended: Callable[[], None]) -> _EngineSession:
        """Raises UpstreamError: the server's command cannot be started."""
        from synartesis.proxy.engine import Engine
        from synartesis.proxy.stdio import StdioUpstream

        spec = self.policy.servers.get(server)
        if spec is None or not spec.command:
            raise UpstreamError(f"{server} has no command in the policy")
        command, args, env, cwd = self.launch(server)
        upstream = StdioUpstream.spawn(command, args, env=env, cwd=cwd, capture_stderr=False,
                                       die_with_parent=True, label=server)
        engine = Engine(server, _Watched(upstream, ended), send, policy=self.policy, journal_path=self.journal_path,
                        options=self.options, launch={"command": spec.command, "args": list(spec.args),
                                                      "cwd": spec.cwd or os.getcwd()},
                        protected=self.protected, saga_hook=self.saga_hook)
        engine.start()
        return _EngineSession(engine)
