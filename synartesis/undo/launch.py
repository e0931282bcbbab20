"""Starting the servers a run touched, from the launch line the proxy recorded (DESIGN §3).

The command line, arguments and working directory come from the run (what the proxy actually
started); the environment is this process's, plus the env of the client entry the server was
installed from (read now from the client's file, expanded as that client does), plus the
policy's ``servers.NAME.env`` for keys the entry does not set (``${VAR}`` expanded now, never
stored expanded). When the policy or the client entry now
describes a different launch line, a warning says so: inverses must go to the same place the
writes went.

The proxy also records the names (never the values) of the variables its client gave the
server (``env``). One that neither the client entry, the policy nor this environment sets is
named in a warning; when the policy's ``env`` names it (the server reads it: a memory server
without its ``MEMORY_FILE_PATH`` opens another graph) the server is not started. One that is
set here is taken as it is (values are never recorded, so a different value cannot be noticed);
when the client entry it was installed from no longer sets it, a warning says this shell's value
is used. A drift or failed-read halt on that server repeats the reason
(:meth:`~synartesis.undo.servers.ServerPool.launch_note`).

The recorded launch line and the policy keep secret arguments only as
:data:`~synartesis.redact.SECRET_MARK` (issue 9 item 3). Such a line is completed from the
client entry the server was installed from (``entry_env.launch``), and only when that entry's
command line has the same shape once redacted; otherwise the server is not started, with the
reason, rather than started with a placeholder for an argument.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from synartesis.expand import expand_env  # moved below the proxy; kept importable from here
from synartesis.policy.model import Policy
from synartesis.redact import SECRET_MARK, redact_argv

__all__ = ["LaunchSpec", "launch_specs", "expand_env"]


def _show(argv: list[str]) -> str:
    return " ".join(redact_argv(argv)[0])


@dataclass
class LaunchSpec:
    server: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str | None
    warnings: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)  # env taken from this shell that the entry gave the run


EntryEnv = Callable[[Mapping[str, Any]], "dict[str, str] | None"]
"""Reads a client entry's env from an origin; may also have ``launch(origin, server)`` returning
the entry's ``(command, args)`` (:class:`synartesis.services.launch_env.ClientEntries`)."""


def _real_argv(name: str, command: str, args: list[str], origin: Mapping[str, Any] | None,
               reader: Any) -> tuple[str, list[str]] | str:
    """The real command line behind a redacted one, from the client entry; or why not."""
    launch = getattr(reader, "launch", None)
    real = None
    if launch is not None:
        try:
            real = launch(origin, name)
        except Exception:  # an unreadable client config is a reason, not a crash
            real = None
    if real is None:
        return (f"{name}: its launch line keeps secret arguments hidden and the client entry it was "
                "installed from cannot be read, so it cannot be started; restore that entry (or run "
                "install again) and retry")
    rcmd, rargs = real[0], list(real[1])
    # the policy redacts the args alone; a launch line may be redacted as one argv: accept both
    same = (redact_argv(rargs)[0] == args and (rcmd == command or redact_argv([rcmd])[0] == [command])) \
        or redact_argv([rcmd, *rargs])[0] == [command, *args]
    if not same:
        return (f"{name}: its launch line keeps secret arguments hidden, and the client entry now starts "
                f"`{_show([rcmd, *rargs])}` instead of `{_show([command, *args])}`; not started, so undo "
                "cannot reach a different server")
    return rcmd, rargs


def _entry_env(origin: dict | None, reader: EntryEnv | None) -> dict[str, str] | None:
    """The env of the client entry a server was installed from (None when unavailable)."""
    if not origin or reader is None:
        return None
    try:
        return reader(origin)
    except Exception:  # a client config that no longer parses must not stop an undo
        return None


@dataclass
class _Shared:
    labels: list[str]
    argv_differs: bool
    disputed: list[str]           # env names whose values differ between the entries
    values: dict[str, set]        # name -> the values the entries give it (None: not set)
    unreadable: list[str]
    record_ok: bool


def _shared(name: str, origin: Mapping[str, Any] | None, reader: Any) -> _Shared | None:
    """The client entries that start ``name``, when undo must look at them: several that differ,
    one the install record names that cannot be read, or no readable record; else None."""
    wrapped_as = getattr(reader, "wrapped_as", None)
    if wrapped_as is None:
        return None
    try:
        found = wrapped_as(name, origin)
    except Exception:  # an unreadable client config is not a reason to stop: origin alone decides
        return None
    entries = found.entries
    argvs = {"\0".join([argv[0], *argv[1]]) for _, argv, _ in entries if argv is not None}
    names = sorted({k for _, _, e in entries for k in e})
    values = {k: {e.get(k) for _, _, e in entries} for k in names}
    disputed = [k for k in names if len(values[k]) > 1]
    if len(argvs) < 2 and not disputed and not found.unreadable and found.record_ok:
        return None
    return _Shared([label for label, _, _ in entries], len(argvs) > 1, disputed, values,
                   list(found.unreadable), found.record_ok)


def _both(name: str, labels: list[str]) -> str:
    if len(labels) < 2:
        return f"{''.join(labels) or 'its entry'} starts `{name}`"
    return (f"{', '.join(labels[:-1])} and {labels[-1]} are {'both' if len(labels) == 2 else 'all'} wrapped as "
            f"`{name}` but start different servers")


_FIX = ("`synartesis uninstall` then `synartesis install` rewrites the entries from the client files, each "
        "distinct server with its own key, for later runs")


def _dispute(name: str, shared: _Shared, environ: Mapping[str, str], entry: dict[str, str]) -> str | None:
    """Why ``name`` is not started because its entries disagree (a problem), or None; takes the
    disputed variables out of ``entry`` when this shell gives each one of the entries' values.
    Rule: adversarial review 8 (an old install gave two clients' memory one key; undo acted on
    the other client's graph)."""
    from synartesis.clients.entries import display_name
    from synartesis.redact import is_secret_name

    if shared.unreadable:
        return (f"{name}: {' and '.join(shared.unreadable)} is also wrapped as `{name}` (says the install record) "
                "and cannot be read, so which entry this run came from cannot be told; not started. Fix that "
                "client file, or if you removed that entry run `synartesis install` (it forgets entries that are "
                "gone), and retry")
    if shared.argv_differs:
        return (f"{name}: {_both(name, shared.labels)} (their command lines differ), so which one this run's "
                f"writes went through cannot be told; not started. {_FIX[0].upper()}{_FIX[1:]}")
    shown = [display_name(k) for k in shared.disputed]
    asked = [k for k in shared.disputed if not is_secret_name(k) and not k.startswith("SYNARTESIS_")]
    wrong = [k for k in shared.disputed if environ.get(k) not in shared.values[k] or k not in environ]
    if wrong:
        how = (f" Set {', '.join(display_name(k) for k in asked)} the way the entry this run came from sets it "
               f"(`{display_name(asked[0])}=… synartesis …`; it must be one of the entries' values) and retry; "
               if asked and len(asked) == len(shared.disputed) else " ")
        return (f"{name}: {_both(name, shared.labels)} (they give {', '.join(shown)} different values), so "
                f"which one's data this run changed cannot be told; not started.{how}{_FIX}")
    for k in shared.disputed:
        entry.pop(k, None)
    return None


def launch_specs(servers: set[str], recorded: Mapping[str, Any], policy: Policy | None,
                 environ: Mapping[str, str] | None = None,
                 entry_env: EntryEnv | None = None) -> tuple[dict[str, LaunchSpec], list[str]]:
    """How to start each server in ``servers``.

    Args:
        recorded: the run's ``servers`` ({name: {command, args, cwd}}) written by the proxy.
        policy: the current policy (for env and to warn about a changed launch line).
        entry_env: reads a client entry's env from ``servers.NAME.origin`` (the CLI passes
            :func:`synartesis.services.launch_env.entry_env`).
    Returns:
        ({name: LaunchSpec}, problems) where problems name servers that cannot be started.
    """
    from synartesis.clients.entries import display_name

    environ = dict(os.environ if environ is None else environ)
    specs: dict[str, LaunchSpec] = {}
    problems: list[str] = []
    for name in sorted(servers):
        rec = recorded.get(name) if isinstance(recorded, Mapping) else None
        pspec = policy.servers.get(name) if policy is not None else None
        warnings: list[str] = []
        if rec and rec.get("command"):
            command, args, cwd = rec["command"], list(rec.get("args") or []), rec.get("cwd")
            if pspec is not None and pspec.command and [pspec.command, *pspec.args] != [command, *args] \
                    and [pspec.command, *pspec.args] != [command, *redact_argv(args)[0]]:
                warnings.append(f"{name}: the policy now starts `{_show([pspec.command, *pspec.args])}`, but this "
                                f"run's writes went through `{_show([command, *args])}`; undo uses the latter")
        elif pspec is not None and pspec.command:
            command, args, cwd = pspec.command, list(pspec.args), pspec.cwd
            warnings.append(f"{name}: no launch line was recorded with the run; using the policy's")
        else:
            problems.append(f"{name}: no launch line was recorded and the policy has no command for it")
            continue
        if SECRET_MARK in command or any(SECRET_MARK in a for a in args):
            real = _real_argv(name, command, args, pspec.origin if pspec else None, entry_env)
            if isinstance(real, str):
                problems.append(real)
                continue
            command, args = real
        env = dict(environ)
        read_entry = _entry_env(pspec.origin if pspec else None, entry_env)
        entry = read_entry or {}
        shared = _shared(name, pspec.origin if pspec else None, entry_env)
        if shared is not None:
            why = _dispute(name, shared, environ, entry)
            if why is not None:
                problems.append(why)
                continue
            if shared.disputed:
                warnings.append(f"{name}: {_both(name, shared.labels)} (they give {', '.join(shared.disputed)} "
                                "different values); using this shell's, which is one of them")
            if not shared.record_ok:
                warnings.append(f"{name}: the install record cannot be read, so whether other client entries "
                                "also start it (with other env) is not checked")
        env.update(entry)  # the client entry's env, expanded as that client does: it wins
        unset: set[str] = set()  # policy references that expanded to nothing here
        if pspec is not None:
            for k, v in pspec.env.items():
                if k not in entry:
                    value = expand_env(v, env)
                    if value or k not in env:
                        env[k] = value
                    if not value:
                        unset.add(k)
        missing = [k for k in ((rec.get("env") or []) if rec else [])
                   if isinstance(k, str) and k not in entry and (k not in env or k in unset)]
        shown = ", ".join(display_name(k) for k in missing)
        why = (f"this run's server was given {shown} by its client, and undo cannot give it again "
               "(the journal keeps names, never values; no client entry it was installed from sets it, and it is "
               "not set here)")
        if pspec is not None and any(k in pspec.env for k in missing):
            # the policy says the server reads it: started without it, it could open other data
            first = display_name(next(k for k in missing if k in pspec.env))
            problems.append(f"{name}: {why}, so it is not started: it would open other data. Put {shown} back in the "
                            f"client entry, or set it as the client did (`{first}=… synartesis …`), and retry")
            continue
        if missing:
            warnings.append(f"{name}: {why}; it is started without it (set it and retry if the server reads it)")
        # given by the entry then, taken from this shell now, and the policy says the server reads
        # it: the value cannot be compared (a new user's round 7: the entry's MEMORY_FILE_PATH was
        # deleted; a shell that sets it to another graph would have undo act there)
        doubts = [k for k in ((rec.get("env") or []) if rec else [])
                  if isinstance(k, str) and read_entry is not None and pspec is not None and k in pspec.env
                  and k not in entry and k not in missing and env.get(k)]
        doubt = (f"{name}: this run's server was given {', '.join(display_name(k) for k in doubts)} by its client "
                 "entry, which no longer sets it; this shell's value is used, and it may not be the one the run had "
                 "(the journal keeps names, never values)") if doubts else None
        if doubt:
            warnings.append(doubt)
        if cwd and not os.path.isdir(cwd):
            warnings.append(f"{name}: the recorded working directory {cwd} is gone; using the current one")
            cwd = None
        specs[name] = LaunchSpec(name, command, args, env, cwd, warnings, [doubt] if doubt else [])
    return specs, problems
