"""What an action's undo would touch, for actions with nothing read to compare by.

``undo --only SEQ`` must refuse when a later action of the session touched what undoing SEQ
would change (issue 10 item 6). An action with a pre-read or ``verify`` read names its resource
by that read (:func:`synartesis.undo.engine.resource_key`). A compensation without one (memory's
``create_entities`` → ``delete_entities {entityNames}``) has no such key, so its resource is
what its inverse names: every identifier in the inverse's arguments (strings and numbers; not
booleans, null or empty strings), on its server as its run launched it. A later action touched
it when one of those identifiers appears anywhere in that action's arguments, its read's or its
inverse's, on the same server. The rule errs towards refusing: a shared value that is not a
name (a later call that merely mentions ``alice``) refuses too, and ``--force`` shows the step.
"""

from __future__ import annotations

import posixpath
from typing import Any

from synartesis.canonical import canonical
from synartesis.journal import RunRow

__all__ = ["leaves", "undo_touches", "action_touches", "shares", "spelled_once"]

Touch = set[tuple[str, str]]  # (server as launched, canonical identifier)


def spelled_once(value: Any) -> Any:
    """``value`` with every absolute POSIX path in it written one way (``/a/./b``, ``/a//b``,
    ``/a/x/../b`` and ``/a/b/`` as ``/a/b``), so a resource reached under another spelling is
    the same resource (adversarial review 19, F5: ``data/./c.txt`` slipped past the
    other-session halt). Lexical only: a symlink is not followed, nor a relative path resolved.
    A string that merely starts with ``/`` is rewritten the same way, which can only make two
    names equal, never split one."""
    if isinstance(value, str):
        if value.startswith("/") and ("/." in value or "//" in value or (value.endswith("/") and len(value) > 1)):
            return "/" + posixpath.normpath(value).lstrip("/")
        return value
    if isinstance(value, dict):
        return {k: spelled_once(v) for k, v in value.items()}
    if isinstance(value, list):
        return [spelled_once(v) for v in value]
    return value


def leaves(value: Any) -> set[str]:
    """The canonical texts of every string and number inside ``value`` (a JSON value), at any
    depth (iteratively: a server's answer may nest past Python's recursion limit); absolute
    paths as :func:`spelled_once` writes them."""
    out: set[str] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, bool) or v is None or v == "":
            continue
        elif isinstance(v, str):
            out.add(canonical(spelled_once(v)))
        elif isinstance(v, (int, float)):
            out.add(canonical(v))
    return out


def _server(run: RunRow | None, name: Any) -> str:
    """A server as its run launched it: its launch line, under whatever name (two entries of
    one command line are one server: adversarial review 20, F1); its name when the run
    recorded no launch line."""
    launch = (run.servers.get(name) if run is not None and isinstance(name, str) else None) or {}
    return canonical([None if launch.get("command") else name, {k: launch.get(k) for k in ("command", "args", "cwd")}])


def _calls(run: RunRow | None, calls: list[dict]) -> Touch:
    return {(_server(run, c.get("server")), leaf) for c in calls if isinstance(c, dict) for leaf in leaves(c.get("args"))}


def undo_touches(run: RunRow | None, read: dict | None, inverse: list[dict] | None) -> Touch:
    """What undoing an action would change: the arguments of its read when it has one (it names
    the resource), else of its inverse's calls. ``run`` is the action's run (for how its servers
    were launched); ``read``/``inverse`` as the journal stores them (``{"server","tool","args"}``)."""
    return _calls(run, [read] if read else list(inverse or []))


def action_touches(run: RunRow | None, server: str, args: Any, read: dict | None,
                   inverse: list[dict] | None) -> Touch:
    """What an action touched (its own arguments) or its undo would (:func:`undo_touches`)."""
    return undo_touches(run, read, inverse) | {(_server(run, server), leaf) for leaf in leaves(args)}


def shares(a: Touch, b: Touch) -> bool:
    """Do two footprints name anything in common on the same server?"""
    return not a.isdisjoint(b)
