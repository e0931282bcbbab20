"""Starting a server process (standard library only, no event loop).

Kept apart from the relay so ``synartesis proxy`` can start the server before it imports
asyncio, SQLite or YAML: the server's own start-up then overlaps ours (PROXY.md §2.9,
"early spawn").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Mapping

from synartesis.errors import UpstreamError

__all__ = ["resolve_command", "popen_server"]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass


def resolve_command(command: str, env: Mapping[str, str] | None = None) -> str:
    """Resolve ``command`` on PATH (with PATHEXT on Windows, so ``npx`` finds ``npx.cmd``)."""
    if os.path.dirname(command):
        return command
    path = (env or os.environ).get("PATH")
    found = shutil.which(command, path=path)
    return found or command


def popen_server(command: str, args: list[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, capture_stderr: bool = True,
                 die_with_parent: bool = False) -> subprocess.Popen:
    """Start a server process with pipes on stdin/stdout (synchronous; no event loop needed).

    The proxy calls this before it imports or loads anything else, so the server's own start-up
    (hundreds of milliseconds for ``node``/``npx``) overlaps ours.
    ``die_with_parent`` (Linux): the server is killed when we die. Undo uses it: a server left
    running by a killed undo would go on applying the inverse it was given while the next undo
    sends it again.
    Raises:
        UpstreamError: the executable could not be started.
    """
    full_env = dict(os.environ if env is None else env)
    exe = resolve_command(command, full_env)
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
        if die_with_parent and sys.platform.startswith("linux"):
            kwargs["preexec_fn"] = _die_with_parent
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = 0x08000000 | 0x00000200  # CREATE_NO_WINDOW | NEW_PROCESS_GROUP
    try:
        return subprocess.Popen([exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE if capture_stderr else None, env=full_env, cwd=cwd,
                                bufsize=0, **kwargs)
    except (OSError, ValueError) as exc:
        raise UpstreamError(f"could not start {command}: {exc}") from exc


