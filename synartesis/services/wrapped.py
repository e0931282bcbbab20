"""Starting a policy's server the way an installed client does: through the proxy.

The window (``synartesis desktop``) is an MCP client of each server in the user's policy. It
starts every one of them as ``synartesis proxy --server NAME --manifest P --journal J -- CMD
ARGS…``, the same wrapped command line ``install`` writes into client configs, so the real proxy
classifies, journals and gates every call; nothing here decides anything about a call.

The server is started exactly as undo starts it (:func:`synartesis.undo.launch.launch_specs`):
the policy's ``servers.NAME.command/args``, with arguments the policy keeps hidden as secrets
completed from the client entry it was installed from (read now, never stored); this process's
environment, the client entry's ``env``, the policy's ``env`` references.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from synartesis.policy.model import Policy
from synartesis.redact import redact_argv

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
                 environ: Mapping[str, str] | None = None, entry_env: Any = None,
                 extra_env: Mapping[str, str] | None = None) -> ProxyLaunch:
    """The wrapped launch of server ``name`` of ``policy``.

    Args:
        manifest, journal: passed to the proxy explicitly, so it journals where the window reads.
        environ: the base environment (default: this process's).
        entry_env: reads the client entry a server was installed from: its env, and with
            ``.launch`` its real command line where the policy hides a secret (default:
            :data:`synartesis.services.launch_env.entry_env`, what undo uses).
        extra_env: set on top (the window's ``SYNARTESIS_SESSION``).
    Raises:
        UsageError: the server is not in the policy, has no command, or its command line holds
            a secret that cannot be read from the client entry it came from.
    """
    from synartesis.errors import UsageError
    from synartesis.undo.launch import launch_specs  # (importing synartesis.undo loads the engine)

    if entry_env is None:
        from synartesis.services.launch_env import entry_env
    spec = policy.servers.get(name)
    if spec is None:
        raise UsageError(f"{name} is not a server of the policy {policy.path}")
    if not spec.command:
        raise UsageError(f"{name} has no command in the policy {policy.path}, so it cannot be started here "
                         "(it is started by the client that runs it)")
    # the same launch undo makes: the policy's line, secrets completed from the client entry
    specs, problems = launch_specs({name}, {}, policy, environ, entry_env=entry_env)
    if name not in specs:
        raise UsageError("; ".join(problems) or f"{name} cannot be started")
    launch = specs[name]
    env = dict(launch.env)
    env.update(extra_env or {})
    argv = [*proxy_command(), "--server", name, "--manifest", str(manifest), "--journal", str(journal),
            "--", launch.command, *launch.args]
    # the only warning launch_specs gives without a recorded run is "using the policy's": expected here
    return ProxyLaunch(name, argv, env, launch.cwd, [])


del os
