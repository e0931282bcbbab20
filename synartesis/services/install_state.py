"""The install record: ``$SYNARTESIS_HOME/installed.json`` (a file synartesis owns, 0600).

One entry per config entry install wrote (a wrapped entry, or a Claude Code local-scope
shadow): which file and key path, the policy key, and the adapter's record — hashes of what we
wrote and of the original, and *templates* of the original ``command``/``args`` texts: their
layout, with each value given as the index of the wrapped ``args`` element that holds it
verbatim (:func:`synartesis.clients.adapters.render_template`). No argument, env value or
token is stored (issue 9 item 3): the original entry is rebuilt from the written one by
reversing our own edits. Records of earlier versions held the texts; they still restore, and
install rewrites them (``upgrade_record``). ``uninstall``
restores only entries whose current text or value still equals what we wrote
(CLIENTS.md §4 row 11); ``status`` uses the same record to tell drift apart.

Also kept: the list of backups taken, and what install learned about each policy key
(shipped/drafted, provenance, TODO count) for ``status``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from synartesis import fsops
from synartesis.errors import ConfigParseError, SynartesisError
from synartesis.paths import Env, synartesis_home

__all__ = ["STATE_FILENAME", "SCHEMA_VERSION", "InstallState", "state_path", "load_state", "save_state", "now"]

STATE_FILENAME = "installed.json"
SCHEMA_VERSION = 1


def now() -> str:
    """UTC timestamp, ISO 8601 with seconds."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_path(env: Env) -> Path:
    """``$SYNARTESIS_HOME/installed.json``."""
    return synartesis_home(env) / STATE_FILENAME


@dataclass
class InstallState:
    """The parsed install record.

    Attributes:
        entries: dicts with ``client``, ``file``, ``target``, ``scope``, ``name``, ``project``,
            ``policy_key``, ``installed_at``, ``backup``, ``record`` (adapter record; its
            ``op`` is ``wrap`` or ``shadow``) and for shadows ``source`` (the project file).
        backups: dicts with ``file``, ``backup``, ``sha256``, ``at``, ``client``.
        policies: policy key → ``{source, policy_id, provenance, checked, todo_count, reason}``.
    """

    entries: list[dict[str, Any]] = field(default_factory=list)
    backups: list[dict[str, Any]] = field(default_factory=list)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_target(self, target: str) -> list[dict[str, Any]]:
        """Entries recorded for one resolved file path."""
        return [e for e in self.entries if e.get("target") == target]

    def projects(self) -> dict[str, list[str]]:
        """Client id → the project roots of the project-scope files synartesis wrapped, for
        :func:`synartesis.clients.discover.discover` (``known_projects``)."""
        out: dict[str, dict[str, None]] = {}  # insertion-ordered sets
        for e in self.entries:
            if e.get("scope") == "project" and isinstance(e.get("project"), str) and isinstance(e.get("client"), str):
                out.setdefault(e["client"], {})[e["project"]] = None
        return {client: list(roots) for client, roots in out.items()}

    def find(self, target: str, locator: list[str]) -> dict[str, Any] | None:
        """The entry recorded for ``locator`` in ``target``."""
        for e in self.entries:
            if e.get("target") == target and e.get("record", {}).get("locator") == list(locator):
                return e
        return None

    def to_json(self) -> dict[str, Any]:
        """The on-disk form."""
        return {"schema_version": SCHEMA_VERSION, "entries": self.entries,
                "backups": self.backups, "policies": self.policies}


def load_state(env: Env) -> InstallState:
    """Read the install record (empty when there is none).

    Raises:
        SynartesisError: the record exists but is not readable JSON of a known version — it is
            then left alone (never reset), since uninstall depends on it.
    """
    path = state_path(env)
    data = fsops.read_bytes(path)
    if data is None:
        return InstallState()
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SynartesisError(f"{path}: the install record is damaged ({exc}); it was left as it is. "
                              "Move it away to start over (uninstall then needs --from-backup)") from None
    if not isinstance(raw, dict) or raw.get("schema_version") != SCHEMA_VERSION:
        raise SynartesisError(f"{path}: unknown install record version; left as it is")
    shape = _shape_problem(raw)
    if shape:
        raise ConfigParseError(f"{path}: the install record is damaged ({shape}); it was left as it is. "
                               "Move it away to start over (uninstall then needs --from-backup)")
    entries = [e for e in raw.get("entries", []) if isinstance(e, dict) and isinstance(e.get("record"), dict)]
    backups = [b for b in raw.get("backups", []) if isinstance(b, dict)]
    policies = {k: v for k, v in (raw.get("policies") or {}).items() if isinstance(v, dict)}
    return InstallState(entries, backups, policies)


# the fields every reader of a record takes as text (or leaves out)
_TEXT_FIELDS = ("client", "file", "target", "scope", "name", "project", "policy_key", "source", "backup")


def _shape_problem(raw: dict) -> str | None:
    """Why a record's JSON is not an install record's shape (an adversarial review found a list
    where a name goes, a number where the entries go), or None."""
    for key, kind in (("entries", list), ("backups", list), ("policies", dict)):
        if key in raw and raw[key] is not None and not isinstance(raw[key], kind):
            return f"{key} is not a {'list' if kind is list else 'mapping'}"
    for key in ("entries", "backups"):
        for n, e in enumerate(raw.get(key) or []):
            if not isinstance(e, dict):
                continue  # not an entry at all: dropped by load_state
            bad = next((f for f in _TEXT_FIELDS if e.get(f) is not None and not isinstance(e.get(f), str)), None)
            if bad:
                return f"{key}[{n}].{bad} is not text"
            record = e.get("record")
            if key == "entries" and isinstance(record, dict):  # the entry's place in its file: keys and indexes
                locator = record.get("locator", [])
                if not isinstance(locator, list) or not all(isinstance(k, (str, int)) and not isinstance(k, bool)
                                                            for k in locator):
                    return f"entries[{n}].record.locator is not a list of keys"
    return None


def save_state(env: Env, state: InstallState) -> None:
    """Write the install record atomically (0600, in the 0700 synartesis home).

    Raises:
        SynartesisError: it could not be written.
    """
    home = synartesis_home(env)
    fsops.ensure_private_dir(home)
    text = json.dumps(state.to_json(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    fsops.atomic_write(state_path(env), text.encode("utf-8"), 0o600)
