"""Starting a server process (standard library only, no event loop).

Kept apart from the relay so ``synartesis proxy`` can start the server before it imports
asyncio, SQLite or YAML: the server's own start-up then overlaps ours (PROXY.md §2.9,
"early spawn").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

TYPE_CHECKING = False  # typing is not imported before the server is spawned (see proxy.main)
if TYPE_CHECKING:
    from typing import Any

from synartesis.errors import UpstreamError

__all__ = ["MARK_VAR", "SpawnedServer", "popen_server", "resolve_command", "spawn_server"]

#: The variable every server we start finds in its environment, with a value of its own (the
#: run's launch line records it): whatever it starts, in its process group or out of it
#: (``setsid``, a daemon), inherits it, so undo can tell the server or a child of it still runs
#: (:func:`synartesis.journal.liveness.marked_process`; adversarial review 18, F3).
MARK_VAR = "SYNARTESIS_SERVER_MARK"


def _marked(env: Mapping[str, str]) -> tuple[dict, str]:
    """(``env`` with :data:`MARK_VAR` set to a new random value, that value)."""
    mark = os.urandom(8).hex()
    out = dict(env)
    out[MARK_VAR] = mark
    return out, mark


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
    if os.name == "posix":  # shutil.which, without importing shutil on the proxy's start-up path
        for d in (path if path is not None else os.defpath).split(os.pathsep):
            candidate = os.path.join(d or ".", command)
            if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
                return candidate
        return command
    import shutil  # pragma: no cover - Windows
    return shutil.which(command, path=path) or command


def start_error(command: str, exe: str, exc: BaseException) -> Exception:
    """The error for a server ``command`` (resolved to ``exe``) that the OS would not start:
    a :class:`ServerCommandError` (exit 2) in plain words when the command names nothing that
    runs, else an :class:`UpstreamError` with the OS's words."""
    import errno
    from synartesis.errors import ServerCommandError
    code = getattr(exc, "errno", None)
    if code in (errno.ENOENT, errno.ENOTDIR) and (interp := _missing_interpreter(exe)):
        # the script is there, its interpreter is not: a moved or deleted venv (adversarial
        # review 31b: "there is no such file" named a file that exists)
        why = (f"its #! line names {interp}, which is not there (was the environment it was installed "
               "in moved or deleted? reinstall the server)")
    elif code in (errno.ENOENT, errno.ENOTDIR):
        why = ("there is no such file" if os.path.dirname(command) or exe != command
               else "not found on PATH") + " (the server's command, after `--` or in the client's config)"
    elif code == errno.EACCES:
        why = f"{exe} is not executable (or a folder on its path may not be entered)"
    elif code == errno.ENOEXEC:
        why = f"{exe} is not a program this system can run (no #! line?)"
    else:
        return UpstreamError(f"could not start {command}: {exc}")
    return ServerCommandError(f"could not start {command}: {why}")


def _missing_interpreter(exe: str) -> str | None:
    """The interpreter a script's ``#!`` line names when the script exists and that interpreter
    does not (the OS then says ENOENT of the script); else None."""
    try:
        with open(exe, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return None
    interp = os.fsdecode(words[0])
    return interp if not os.path.exists(interp) else None


class SpawnedServer:
    """A server started by :func:`spawn_server`: the part of :class:`subprocess.Popen` the proxy
    uses (``pid``, ``stdin``, ``stdout``, ``stderr``, ``poll``, ``wait``, ``kill``,
    ``returncode``), without importing :mod:`subprocess` on the start-up path."""

    stderr = None

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int, mark: str | None = None) -> None:
        self.pid = pid
        self.mark = mark  # its MARK_VAR value
        self.stdin = open(stdin_fd, "wb", buffering=0)  # noqa: SIM115 - owned by this object
        self.stdout = open(stdout_fd, "rb", buffering=0)  # noqa: SIM115
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if the server has exited (negative: killed by that signal), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the server to exit; its exit code.

        Raises:
            subprocess.TimeoutExpired: still running after ``timeout`` seconds.
        """
        import time
        end = None if timeout is None else time.monotonic() + timeout
        pause = 0.001
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                import subprocess
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        import signal
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def spawn_server(command: str, args: list[str]) -> Any:
    """Start a server for the proxy as early and as cheaply as possible: ``os.posix_spawn`` with
    pipes on stdin and stdout, our stderr, our whole environment (plus :data:`MARK_VAR`) and working
    directory, a session of its own, and SIGPIPE back to its default. Elsewhere (Windows), :func:`popen_server`.

    Raises:
        UpstreamError: the executable could not be started.
    """
    if os.name != "posix" or not hasattr(os, "posix_spawn"):  # pragma: no cover
        return popen_server(command, args, capture_stderr=False)
    import signal
    exe = resolve_command(command)
    env, mark = _marked(os.environ)
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    try:
        pid = os.posix_spawn(exe, [exe, *args], env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, r_in, 0), (os.POSIX_SPAWN_DUP2, w_out, 1)],
                             setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except (OSError, ValueError) as exc:
        for fd in (r_in, w_in, r_out, w_out):
            os.close(fd)
        raise start_error(command, exe, exc) from exc
    os.close(r_in)
    os.close(w_out)
    return SpawnedServer(pid, w_in, r_out, mark)


def popen_server(command: str, args: list[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, capture_stderr: bool = True,
                 die_with_parent: bool = False) -> Any:
    """Start a server process with pipes on stdin/stdout (synchronous; no event loop needed);
    its environment is ``env`` (default ours) plus :data:`MARK_VAR`, whose value the returned
    Popen carries as ``mark``.

    The proxy calls this before it imports or loads anything else, so the server's own start-up
    (hundreds of milliseconds for ``node``/``npx``) overlaps ours.
    ``die_with_parent`` (Linux): the server is killed when we die. Undo uses it: a server left
    running by a killed undo would go on applying the inverse it was given while the next undo
    sends it again.
    Raises:
        UpstreamError: the executable could not be started.
    """
    import subprocess
    full_env, mark = _marked(os.environ if env is None else env)
    exe = resolve_command(command, full_env)
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
        if die_with_parent and sys.platform.startswith("linux"):
            kwargs["preexec_fn"] = _die_with_parent
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = 0x08000000 | 0x00000200  # CREATE_NO_WINDOW | NEW_PROCESS_GROUP
    try:
        popen = subprocess.Popen([exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE if capture_stderr else None, env=full_env, cwd=cwd,
                                 bufsize=0, **kwargs)
    except (OSError, ValueError) as exc:
        raise start_error(command, exe, exc) from exc
    popen.mark = mark  # type: ignore[attr-defined]  # its MARK_VAR value, as SpawnedServer.mark
    return popen


