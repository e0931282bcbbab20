"""What a client gives a server, read from the client entry it was installed from.

Undo, ``show --live``, ``check`` and ``pin`` start servers themselves; a server configured with
``env`` in a client config (an API key, ``MEMORY_FILE_PATH``) needs that same environment to
open the same data, and a server whose arguments hold a secret needs those arguments — the
policy and the journal's launch line keep only their redacted shape (issue 9 item 3). Both
are read at launch time from the client's file, expanded the way that client expands them, and
never stored anywhere (DESIGN §3).

:data:`entry_env` is what the CLI and the console hand to the undo engine: called with an
``origin`` it returns the entry's env (:func:`entry_env_of`); its ``launch(origin, server)``
returns the entry's command line (:func:`entry_launch`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from synartesis.clients.descriptor import get_descriptor
from synartesis.clients.discover import read_location
from synartesis.clients.entries import entry_env as _client_env
from synartesis.clients.locations import ConfigLocation, project_locations, user_locations
from synartesis.paths import Env

__all__ = ["entry_env", "entry_env_of", "entry_launch", "entries_wrapped_as", "WrappedAs", "ClientEntries"]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def _real(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path)


def _entry(origin: Mapping[str, Any], env: Env):
    try:
        desc = get_descriptor(str(origin.get("client")))
    except Exception:
        return None, None
    path = Path(str(origin.get("file", "")))
    locations: list[ConfigLocation] = list(user_locations(desc, env)[0])
    project = origin.get("project")
    if project:
        locations += project_locations(desc, env, [(str(project), Path(str(project)))])
    for loc in locations:
        if not _same(loc.path, path):
            continue
        found = read_location(desc, loc)
        if found.view is None:
            return desc, None
        # the entry of that scope: a user-scope `memory` and a local-scope one in the same file
        # are two servers with their own env (adversarial review 8)
        for entry in found.view.entries:
            if entry.name == origin.get("entry") and (entry.project or None) == (project or None):
                return desc, entry
        if project:
            for entry in found.view.entries:  # a project file whose entries carry no project
                if entry.name == origin.get("entry") and entry.project is None and entry.scope == "project":
                    return desc, entry
    return desc, None


def _installed_origins(server: str, env: Env, strict: bool = False) -> list[dict[str, Any]] | None:
    """Origins of the entries install wrapped with ``--server server`` (from installed.json);
    with ``strict``, None when the install record cannot be read."""
    from synartesis.services.install_state import load_state

    try:
        state = load_state(env)
    except Exception:  # a damaged record must not stop an undo; the origin is only a fallback
        return None if strict else []
    return [{"client": e.get("client"), "file": e.get("file"), "entry": e.get("name"), "project": e.get("project")}
            for e in state.entries if e.get("policy_key") == server]


def entry_launch(origin: Mapping[str, Any] | None, env: Env | None = None,
                 server: str | None = None) -> tuple[str, list[str]] | None:
    """The original ``(command, args)`` of the client entry ``origin`` names (unwrapped from
    our ``proxy --server NAME -- …`` form), so a server whose arguments hold a secret can be
    started without the policy or the journal keeping a copy of it.

    Args:
        origin: ``{client, file, entry, project?}`` (the policy's ``servers.NAME.origin``);
            None to look the server up in the install record by ``server``.
        server: the policy key, used when ``origin`` is None or names no readable entry.
    Returns:
        ``(command, args)`` as the client starts them, or None when no entry can be read.
    """
    from synartesis.clients.entries import is_ours, ours_server, proxy_args
    env = env or Env.current()
    candidates = [dict(origin)] if origin else []
    if server:
        candidates += _installed_origins(server, env) or []
    for o in candidates:
        _, entry = _entry(o, env)
        if entry is None or entry.command is None:
            continue
        if is_ours(entry.command, entry.args):
            if server and ours_server(entry.args) not in (None, server):
                continue
            inner = proxy_args(entry.args)
            if inner is not None:
                return inner
            continue
        return entry.command, entry.args
    return None


@dataclass
class WrappedAs:
    """The client entries that start one policy key (:func:`entries_wrapped_as`).

    Attributes:
        entries: ``[(label, (command, args) or None, env)]``, one per distinct entry read:
            ``label`` names it without values (:func:`~synartesis.clients.entries.entry_label`),
            ``env`` is the entry's own keys expanded as its client does.
        unreadable: labels (with why) of entries the install record names that cannot be read.
        record_ok: False when the install record itself cannot be read.
    """

    entries: list[tuple[str, tuple[str, list[str]] | None, dict[str, str]]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    record_ok: bool = True


def entries_wrapped_as(server: str, origin: Mapping[str, Any] | None = None, env: Env | None = None) -> WrappedAs:
    """Every client entry that starts the policy key ``server``: ``origin`` (the policy's) and the
    entries install wrapped with ``--server server``. Two of them that start different servers (an
    install made before keys told them apart) make a run of ``server`` impossible to place, which
    undo must not guess (:func:`synartesis.undo.launch.launch_specs`); nor may it guess when one
    of them cannot be read.

    Returns:
        A :class:`WrappedAs`.
    """
    from synartesis.clients.entries import display_name, entry_label, is_ours, ours_server, proxy_args
    env = env or Env.current()
    out = WrappedAs()
    seen = set()
    recorded = _installed_origins(server, env, strict=True)
    if recorded is None:
        out.record_ok, recorded = False, []
    for n, o in enumerate(([dict(origin)] if origin else []) + recorded):
        desc, entry = _entry(o, env)
        if desc is None or entry is None:
            if n or not origin:  # the policy's own origin gone is undo's usual fallback, not a dispute
                why = "its client file cannot be read" if desc is not None and not _readable(o, env) else "it is gone"
                client = desc.display_name if desc is not None else display_name(str(o.get("client")))
                out.unreadable.append(f"{client}'s {display_name(str(o.get('entry')))} ({why})")
            continue
        where = (desc.id, _real(Path(str(o.get("file", "")))), entry.name, entry.project)
        if where in seen:
            continue
        seen.add(where)
        argv: tuple[str, list[str]] | None = None
        if entry.command is not None:
            if is_ours(entry.command, entry.args):
                if ours_server(entry.args) not in (None, server):
                    continue
                argv = proxy_args(entry.args)
            else:
                argv = (entry.command, list(entry.args))
        out.entries.append((entry_label(desc.display_name, entry), argv, entry_env_of(o, env) or {}))
    return out


def _readable(origin: Mapping[str, Any], env: Env) -> bool:
    """Whether the client file ``origin`` names parses (its entry may still be gone)."""
    try:
        desc = get_descriptor(str(origin.get("client")))
    except Exception:
        return False
    path = Path(str(origin.get("file", "")))
    locations = list(user_locations(desc, env)[0])
    if origin.get("project"):
        locations += project_locations(desc, env, [(str(origin["project"]), Path(str(origin["project"])))])
    for loc in locations:
        if _same(loc.path, path):
            return read_location(desc, loc).view is not None
    return False


def entry_env_of(origin: Mapping[str, Any], env: Env | None = None) -> dict[str, str] | None:
    """The ``env`` of the client entry ``origin`` names (``{client, file, scope, entry, project?}``),
    expanded as that client would; only the entry's own keys, not the whole environment.

    Returns None when the client, file or entry cannot be found or parsed.
    """
    env = env or Env.current()
    desc, entry = _entry(origin, env)
    if desc is None or entry is None:
        return None
    value = entry.value if isinstance(entry.value, dict) else {}
    raw = value.get("env")
    if raw is None and entry.command is None:
        value = _as_wrapped_remote(desc, entry, value)
        raw = value.get("env")
    if not isinstance(raw, dict):
        return {}
    full = _client_env(value, desc.expansion, env.environ, str(env.home))
    return {k: full[k] for k in raw if k in full}


def _as_wrapped_remote(desc: Any, entry: Any, value: dict) -> dict:
    """A remote entry that is no longer wrapped (after ``uninstall``), with the ``env`` its
    wrapped form carried (``SYNARTESIS_HEADER_<n>``, ``SYNARTESIS_URL``): the relay a run of
    it recorded reads its credentials from there, so its runs can still be undone."""
    from synartesis.errors import UsageError
    from synartesis.services.install_remote import remote_wrap

    if not isinstance(value.get("url"), str):
        return value
    try:
        wrap = remote_wrap(desc, entry, entry.name)
    except UsageError:
        return value
    return {**value, "env": dict(wrap.env)} if wrap.env else value


class ClientEntries:
    """The reader undo and ``show --live`` get: ``reader(origin)`` is :func:`entry_env`,
    ``reader.launch(origin, server)`` is :func:`entry_launch`, ``reader.wrapped_as(server, origin)``
    is :func:`entries_wrapped_as` (see :func:`synartesis.undo.launch.launch_specs`)."""

    def __init__(self, env: Env | None = None) -> None:
        self.env = env

    def __call__(self, origin: Mapping[str, Any]) -> dict[str, str] | None:
        return entry_env_of(origin, self.env)

    def launch(self, origin: Mapping[str, Any] | None, server: str | None = None) -> tuple[str, list[str]] | None:
        """The client entry's own command line (secrets included), or None."""
        return entry_launch(origin, self.env, server)

    def wrapped_as(self, server: str, origin: Mapping[str, Any] | None = None) -> WrappedAs:
        """The client entries that start ``server`` (:func:`entries_wrapped_as`)."""
        return entries_wrapped_as(server, origin, self.env)


#: The shared reader (callable like :func:`entry_env_of`; also has ``.launch``).
entry_env = ClientEntries()

del os
