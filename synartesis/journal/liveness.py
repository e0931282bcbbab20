"""Which process started a run, and whether it is still the same process (no SQL here).

A pid alone cannot say a proxy is alive: pids are reused. A process is identified by its pid
*and* its start time (a *start token*):
- Linux: ``linux:<boot id>:<start ticks>:<pid namespace>`` from ``/proc/sys/kernel/random/boot_id``,
  field 22 of ``/proc/<pid>/stat`` (clock ticks after boot; a reboot changes the boot id) and
  the inode of ``/proc/self/ns/pid``: the namespace the pid was read in, which is the only one
  where it names that process (Flatpak, bubblewrap, ``unshare -p``, containers). Tokens written
  before the namespace was recorded have three fields.
- Elsewhere: ``ct:<creation time>`` from psutil (a runtime dependency off Linux), imported only
  when a token is asked for, never on the proxy's start-up path. Without it there is no token
  and only the pid is checked.

The rule (issue 10 item 3): a run is *stale* when its proxy's pid is not alive, or is alive
with another start token. When nothing can be told (another host, another pid namespace, no
token, a process we may not inspect) it is *live*: a live proxy is never taken for dead.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

__all__ = ["start_token", "pid_alive", "process_state", "ClientProcess", "client_process", "host_name",
           "env_given_by_client", "group_alive", "marked_process"]

# Launchers between a client and the proxy that say nothing about which agent it is: the
# session is the process above them.
_WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "env", "uv", "uvx", "pipx",
                       "cmd.exe", "powershell.exe", "pwsh", "pwsh.exe"})
_boot_id: str | None = None
_pid_ns: str | None = None


def host_name() -> str:
    """This machine's host name (runs record it: a pid means nothing on another machine).
    ``$SYNARTESIS_HOST`` overrides it (a container or CI runner whose node name says nothing;
    tests simulating several machines)."""
    named = os.environ.get("SYNARTESIS_HOST")
    if named:
        return named
    if hasattr(os, "uname"):
        return os.uname().nodename
    return os.environ.get("COMPUTERNAME", "")  # Windows (no socket import on the proxy's start-up path)


def _linux_boot_id() -> str:
    global _boot_id
    if _boot_id is None:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
                _boot_id = f.read().strip()
        except OSError:
            _boot_id = ""
    return _boot_id


def _linux_pid_ns() -> str:
    """The inode of this process's pid namespace ("" when it cannot be read)."""
    global _pid_ns
    if _pid_ns is None:
        try:
            _pid_ns = str(os.stat("/proc/self/ns/pid").st_ino)
        except OSError:
            _pid_ns = ""
    return _pid_ns


def _proc_stat(pid: int) -> tuple[str, list[str]] | None:
    """(comm, fields after the command name) of ``/proc/<pid>/stat``; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    close = raw.rfind(")")  # the command name may itself contain ") "
    if close < 0:
        return None
    return raw[raw.find("(") + 1:close], raw[close + 2:].split()


def start_token(pid: int) -> str | None:
    """The start token of process ``pid`` (see module docstring); None when it cannot be read
    (no such process, no permission, no psutil off Linux)."""
    if sys.platform.startswith("linux"):
        stat = _proc_stat(pid)
        if stat is None or len(stat[1]) < 20:
            return None
        ns = _linux_pid_ns()
        return f"linux:{_linux_boot_id()}:{stat[1][19]}" + (f":{ns}" if ns else "")
    try:
        import psutil  # off Linux only; not on the proxy's start-up path
        return f"ct:{psutil.Process(pid).create_time():.2f}"
    except Exception:  # ImportError, NoSuchProcess, AccessDenied: nothing can be told
        return None


def pid_alive(pid: int) -> bool:
    """True when a process with this id exists here (or it cannot be checked)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _exited(pid: int) -> bool:
    """True when ``pid`` has exited and only waits to be reaped (a zombie, Linux): a client that
    SIGKILLs its proxy and has not called ``wait`` yet still holds its pid, and that proxy is gone."""
    if not sys.platform.startswith("linux"):
        return False
    stat = _proc_stat(pid)
    return stat is not None and bool(stat[1]) and stat[1][0] in ("Z", "X")


def process_state(pid: int | None, token: str | None, host: str | None = None) -> str:
    """``live``, ``gone`` or ``unknown`` for the process recorded as (pid, start token, host).

    ``gone``: the pid is not alive on this host (or has exited and waits to be reaped), or it
    is alive with another start token (reused), or this host rebooted since. ``unknown``: another
    host, another pid namespace (the token's fourth field is not ours: the pid names another
    process here, or none), or no pid. A pid that is alive and whose start cannot be compared is
    ``live``.
    """
    if pid is None or (host is not None and host != host_name()):
        return "unknown"
    if token and token.startswith("linux:"):
        parts = token.split(":")
        if len(parts) > 3 and parts[3] != _linux_pid_ns():
            return "unknown"
    if not pid_alive(pid) or _exited(pid):
        return "gone"
    if not token:
        return "live"
    now = start_token(pid)
    if now is None or now.split(":", 1)[0] != token.split(":", 1)[0]:
        return "live"
    if token.startswith("linux:") and token.count(":") == 2:  # recorded before the namespace was
        now = ":".join(now.split(":")[:3])
    return "live" if now == token else "gone"


def group_alive(pid: int, token: str | None, host: str | None = None) -> bool:
    """Whether the server started as ``pid`` (with start token ``token``), or anything in its
    process group, still runs. The proxy starts each server as the leader of a session of its
    own, so a launcher (``sh launch.sh`` without ``exec``, ``npx``) and the server it starts
    share the group: the leader gone, its group still has members while ``killpg(pid, 0)``
    succeeds (the kernel does not give a pid to a new process while a group of that id
    exists). A live leader with another start token is another process: the group ended
    (adversarial review 17, F1: a wrapper killed, its server went on). False on another host
    or pid namespace (nothing here can tell)."""
    state = process_state(pid, token, host)
    if state == "live":
        return True
    if state != "gone" or pid_alive(pid) and not _exited(pid):
        return False  # unknown, or the pid now names another process (so the group is gone)
    if os.path.isdir("/proc/self"):  # Linux: a member that has exited (a zombie) does not count
        return any(_group_member(entry, pid) for entry in os.listdir("/proc") if entry.isdigit())
    try:
        os.killpg(pid, 0)
    except (ProcessLookupError, PermissionError, OSError, AttributeError):
        return False
    return True


def marked_process(name: str, mark: str, host: str | None = None) -> int | None:
    """The pid of a live process whose environment has ``name=mark`` (the variable every server
    the proxy starts gets: :data:`synartesis.proxy.spawn.MARK_VAR`), else None. A server's child
    that left its process group (``setsid``, a daemon's double fork) still carries it, since a
    process's ``/proc/<pid>/environ`` is the environment it was started with (adversarial review
    18, F3: a detached child went on writing after the group check said the server was gone).

    Linux only, and only this user's processes are readable (a server that changed user or
    cleared its environment is not found); None on another host or elsewhere. Reads every
    process's ``/proc/<pid>/environ``: a few milliseconds, asked only for an undo's unknown
    outcome."""
    if (host is not None and host != host_name()) or not os.path.isdir("/proc/self"):
        return None
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        env = _environ_of(int(entry))  # None: gone, or another user's
        if env is not None and env.get(name) == mark:
            found = _proc_stat(int(entry))
            if found is not None and found[1][:1] not in (["Z"], ["X"]):
                return int(entry)
    return None


def _group_member(entry: str, pgid: int) -> bool:
    """Whether /proc/ENTRY is a process of group ``pgid`` that has not exited."""
    found = _proc_stat(int(entry))
    if found is None:
        return False
    fields = found[1]  # state, ppid, pgrp, …
    try:
        return fields[0] not in ("Z", "X") and int(fields[2]) == pgid
    except (IndexError, ValueError):
        return False


@dataclass(frozen=True)
class ClientProcess:
    """The process that launched this proxy (its agent): pid, start token, program name."""

    pid: int | None
    started: str | None
    name: str | None


def _parent(pid: int) -> tuple[int, str] | None:
    """(parent pid, parent's program name) of ``pid``."""
    if sys.platform.startswith("linux"):
        stat = _proc_stat(pid)
        if stat is None or len(stat[1]) < 2:
            return None
        ppid = int(stat[1][1])
        parent = _proc_stat(ppid)
        return ppid, (parent[0] if parent else "")
    try:
        import psutil
        proc = psutil.Process(pid).parent()
        return (proc.pid, proc.name()) if proc is not None else None
    except Exception:
        return None


def client_process(pid: int | None = None) -> ClientProcess:
    """The agent's process for the proxy ``pid`` (default: this process): its parent, or the
    first ancestor above shell and launcher wrappers (``sh -c``, ``env``, ``uvx``), at most four
    levels up. No parent (pid 1, or orphaned) gives an empty ClientProcess."""
    me = pid is None or pid == os.getpid()
    pid = os.getpid() if pid is None else pid
    up = _parent(pid)
    if up is None and me:  # nothing to inspect here (no /proc, no psutil): the parent, unnamed
        up = (os.getppid(), "")
    for _ in range(4):
        if up is None or up[0] <= 1:
            return ClientProcess(None, None, None)
        ppid, name = up
        if os.path.basename(name).lower() not in _WRAPPERS:
            return ClientProcess(ppid, start_token(ppid), name or None)
        up = _parent(ppid)
    if up is None or up[0] <= 1:
        return ClientProcess(None, None, None)
    return ClientProcess(up[0], start_token(up[0]), up[1] or None)


# Set by shells (and terminal geometry) on the way to the proxy: nothing a server reads.
# Variables a client sets for its own bookkeeping, its terminal or its identity, which no server
# reads to find its data: naming them made every undo warn "undo cannot give it again" (USER,
# NO_COLOR from Claude Code and Codex). USER/LOGNAME are the OS user's, which undo runs as too.
_BOOKKEEPING = frozenset({
    "PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES",
    "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
    "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "USER", "LOGNAME",
})


def _environ_of(pid: int) -> dict[str, str] | None:
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        out = {}
        for item in raw.split(b"\0"):
            k, sep, v = item.partition(b"=")
            if sep and k:
                out[k.decode("utf-8", "surrogateescape")] = v.decode("utf-8", "surrogateescape")
        return out
    try:
        import psutil  # off Linux only; not on the proxy's start-up path
        return dict(psutil.Process(pid).environ())
    except Exception:  # ImportError, NoSuchProcess, AccessDenied: nothing can be told
        return None


def env_given_by_client(environ: dict[str, str] | None = None) -> list[str] | None:
    """The names (never the values) of the variables this process has set, non-empty, that its
    client process (:func:`client_process`) does not have or has with another value: what the
    client entry's ``env`` (or a wrapper such as ``env K=V``) gave the server, which undo must
    give it again. None when the client's environment cannot be read."""
    client = client_process()
    theirs = _environ_of(client.pid) if client.pid else None
    if theirs is None:
        return None
    if environ is None:
        # the environment this process was started with: Python itself may have added to
        # os.environ since (PEP 538 sets LC_CTYPE when it coerces the C locale), and what it
        # added no client gave (an undo's own Python coerces the same way)
        mine = (_environ_of(os.getpid()) if sys.platform.startswith("linux") else None) or dict(os.environ)
        if _coerced(mine, theirs):
            mine.pop("LC_CTYPE", None)
    else:
        mine = environ
    return sorted(k for k, v in mine.items() if v and theirs.get(k) != v
                  and k not in _BOOKKEEPING and not k.startswith("SYNARTESIS_"))


def _coerced(mine: dict[str, str], theirs: dict[str, str]) -> bool:
    """Is ``mine``'s LC_CTYPE the one Python's C-locale coercion sets (PEP 538: LC_ALL unset,
    the C or POSIX locale, LC_CTYPE set to a UTF-8 variant of C), not one the client had?"""
    value = mine.get("LC_CTYPE")
    if value is None or "LC_CTYPE" in theirs or mine.get("LC_ALL"):
        return False
    return value in ("C.UTF-8", "C.utf8", "UTF-8") and mine.get("LANG", "C") in ("", "C", "POSIX")
