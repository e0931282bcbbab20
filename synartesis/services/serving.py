"""How ``synartesis serve`` starts a server of the policy for a session: the same launch undo,
``check`` and the window make (:func:`synartesis.undo.launch.launch_specs`), so a server
installed from a client entry gets that entry's ``env`` (an API key, a wrapped remote entry's
``SYNARTESIS_HEADER_<n>`` references, expanded as that client expands them) and its real
command line where the policy keeps a secret argument redacted. Read at each session's start,
like undo reads it at each undo; nothing of it is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from synartesis.errors import UpstreamError

__all__ = ["ServerLaunch", "server_launcher"]

#: ``(command, args, env, cwd)`` a session's server is started with.
ServerLaunch = tuple[str, list[str], dict[str, str], "str | None"]


def server_launcher(policy: Any, environ: Mapping[str, str] | None = None,
                    entry_env: Any = None) -> Callable[[str], ServerLaunch]:
    """A function ``launch(name) -> (command, args, env, cwd)`` for the servers of ``policy``.

    Args:
        environ: the base environment (default: this process's, read at each launch).
        entry_env: reads the client entry a server was installed from (default:
            :data:`synartesis.services.launch_env.entry_env`).
    The returned function raises UpstreamError when the server cannot be started (no command,
    a hidden secret whose client entry cannot be read).
    """
    if entry_env is None:
        from synartesis.services.launch_env import entry_env

    def launch(name: str) -> ServerLaunch:
        from synartesis.undo.launch import launch_specs

        specs, problems = launch_specs({name}, {}, policy, environ, entry_env=entry_env)
        if name not in specs:
            raise UpstreamError("; ".join(problems) or f"{name} cannot be started")
        spec = specs[name]  # its one warning without a recorded run ("using the policy's") is expected
        return spec.command, list(spec.args), dict(spec.env), spec.cwd

    return launch
