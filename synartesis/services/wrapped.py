"""Starting a policy's server the way an installed client does: through the proxy.

The window (``synartesis desktop``) is an MCP client of each server in the user's policy. It
starts every one of them as ``synartesis proxy --server NAME --manifest P --journal J -- CMD
ARGS…``, the same wrapped command line ``install`` writes into client configs, so the real proxy
classifies, journals and gates every call; nothing here decides anything about a call.

The server's command line comes from the policy (``servers.NAME.command/args``) or, when the
policy's copy hides a secret, from the client entry it was installed from (read now, never
stored: :func:`synartesis.services.launch_env.entry_launch`); its environment is built the way
undo builds it (:func:`synartesis.undo.launch.launch_specs`: this process's environment, the
client entry's ``env``, the policy's ``env`` references).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from synartesis.policy.model import Policy
from synartesis.redact import SECRET_MARK, redact_argv

__all__ = ["ProxyLaunch", "proxy_launch", "proxy_command"]


@dataclass(frozen=True)
class ProxyLaunch:
    """How to start one policy server behind the proxy.

    Attributes:
        server: the policy's name for it (the proxy's ``--server``).
        argv: the whole command line (the real server arguments after ``--``: may hold a
            secret, so never show, log or store it; :attr:`shown` is the displayable form).
        env: the environment for the proxy (which hands it to the server).
        cwd: working directory (None = inherit).
        warnings: things worth telling the user (none of them stop the launch).
    """

    server: str
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    warnings: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The command line with secret-looking arguments hidden."""
        return " ".join(redact_argv(self.argv)[0])


def proxy_command() -> list[str]:
    """The proxy's own executable part: this interpreter running this synartesis, so the window
    and the proxies it starts are always the same version."""
    return [sys.executable, "-m", "synartesis", "proxy"]


def proxy_launch(policy: Policy, name: str, *, manifest: Path, journal: Path,
                 environ: Mapping[str, str] | None = None,
                 entry_env: Callable[[Mapping[str, Any]], dict[str, str] | None] | None = None,
                 entry_launch: Callable[[Mapping[str, Any]], tuple[str, list[str]] | None] | None = None,
                 extra_env: Mapping[str, str] | None = None) -> ProxyLaunch:
    """The wrapped launch of server ``name`` of ``policy``.

    Args:
        manifest, journal: passed to the proxy explicitly, so it journals where the window reads.
        environ: the base environment (default: this process's).
        entry_env, entry_launch: read a client entry's env and original command line from
            ``servers.NAME.origin`` (default: :mod:`synartesis.services.launch_env`).
        extra_env: set on top (the window's ``SYNARTESIS_SESSION``).
    Raises:
        UsageError: the server is not in the policy, has no command, or its command line holds
            a secret that cannot be read from the client entry it came from.
    """
    from synartesis.errors import UsageError
    from synartesis.undo.launch import launch_specs  # (importing synartesis.undo loads the engine)

    if entry_env is None or entry_launch is None:
        from synartesis.services import launch_env
        entry_env = entry_env or launch_env.entry_env
        entry_launch = entry_launch or launch_env.entry_launch
    spec = policy.servers.get(name)
    if spec is None:
        raise UsageError(f"{name} is not a server of the policy {policy.path}")
    if not spec.command:
        raise UsageError(f"{name} has no command in the policy {policy.path}, so it cannot be started here "
                         "(it is started by the client that runs it)")
    specs, problems = launch_specs({name}, {}, policy, environ, entry_env=entry_env)
    if name not in specs:
        raise UsageError("; ".join(problems) or f"{name} cannot be started")
    launch = specs[name]
    command, args = launch.command, list(launch.args)
    if spec.origin:
        try:
            original = entry_launch(spec.origin)
        except Exception:  # a client config that no longer parses: fall back to the policy's copy
            original = None
        if original is not None:
            command, args = original
    if SECRET_MARK in command or any(SECRET_MARK in a for a in args):
        raise UsageError(f"{name}'s command line holds a secret the policy does not keep, and the client "
                         "entry it was installed from cannot be read; start it from that client instead")
    env = dict(launch.env)
    env.update(extra_env or {})
    argv = [*proxy_command(), "--server", name, "--manifest", str(manifest), "--journal", str(journal),
            "--", command, *args]
    # the only warning launch_specs gives without a recorded run is "using the policy's": expected here
    return ProxyLaunch(name, argv, env, launch.cwd, [])


del os
