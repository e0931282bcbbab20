"""The environment a client gives a server, read from the client entry it was installed from.

Undo, ``show --live``, ``check`` and ``pin`` start servers themselves; a server configured with
``env`` in a client config (an API key, ``MEMORY_FILE_PATH``) needs that same environment to
open the same data. Values are read at launch time from the client's file, expanded the way
that client expands them, and never stored anywhere (DESIGN §3).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from synartesis.clients.descriptor import get_descriptor
from synartesis.clients.discover import read_location
from synartesis.clients.entries import entry_env as _client_env
from synartesis.clients.locations import ConfigLocation, project_locations, user_locations
from synartesis.paths import Env

__all__ = ["entry_env", "entry_launch"]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


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
        for entry in found.view.entries:
            if entry.name == origin.get("entry") and (not project or entry.project in (project, None)):
                return desc, entry
    return desc, None


def entry_launch(origin: Mapping[str, Any], env: Env | None = None) -> tuple[str, list[str]] | None:
    """The original ``(command, args)`` of the client entry ``origin`` names (unwrapped from
    our ``proxy --server NAME -- …`` form), so a server whose arguments hold a secret can be
    started without the policy keeping a copy of it. None when it cannot be read."""
    from synartesis.clients.entries import proxy_args
    env = env or Env.current()
    _, entry = _entry(origin, env)
    if entry is None or entry.command is None:
        return None
    inner = proxy_args(entry.args)
    return inner if inner is not None else (entry.command, entry.args)


def entry_env(origin: Mapping[str, Any], env: Env | None = None) -> dict[str, str] | None:
    """The ``env`` of the client entry ``origin`` names (``{client, file, scope, entry, project?}``),
    expanded as that client would; only the entry's own keys, not the whole environment.

    Returns None when the client, file or entry cannot be found or parsed.
    """
    env = env or Env.current()
    desc, entry = _entry(origin, env)
    if desc is None or entry is None:
        return None
    raw = entry.value.get("env") if isinstance(entry.value, dict) else None
    if not isinstance(raw, dict):
        return {}
    full = _client_env(entry.value, desc.expansion, env.environ, str(env.home))
    return {k: full[k] for k in raw if k in full}

del os
