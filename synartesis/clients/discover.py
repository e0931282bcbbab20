"""Find and parse every config file of the chosen clients (read-only).

One failure never stops the others (stacklok/toolhive#969): a file that cannot be read or
parsed is returned with its error and the rest go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from synartesis import fsops
from synartesis.clients.adapters import ConfigView, adapter_for
from synartesis.clients.descriptor import ClientDescriptor
from synartesis.clients.locations import ConfigLocation, looked_in, project_locations, project_roots, user_locations
from synartesis.errors import SynartesisError
from synartesis.paths import Env

__all__ = ["FoundFile", "Discovery", "discover", "read_location"]


@dataclass
class FoundFile:
    """One config file: parsed (``view``) or not (``error``)."""

    descriptor: ClientDescriptor
    location: ConfigLocation
    target: Path
    view: ConfigView | None = None
    error: str | None = None
    data: bytes | None = None
    error_code: int = 0  # 2: the file is not a valid config (ConfigParseError); 1: it cannot be read


@dataclass
class Discovery:
    """Every config file found, plus notes about candidates skipped."""

    files: list[FoundFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    looked: list[str] = field(default_factory=list)  # every user-level path looked in, found or not


def read_location(desc: ClientDescriptor, loc: ConfigLocation) -> FoundFile:
    """Read and parse one location (errors captured, never raised)."""
    target = fsops.resolve_target(loc.path)
    found = FoundFile(desc, loc, target)
    try:
        data = fsops.read_bytes(loc.path)
    except SynartesisError as exc:
        found.error, found.error_code = str(exc), exc.exit_code
        return found
    if data is None:
        found.error, found.error_code = f"{loc.path}: disappeared while reading", 1
        return found
    found.data = data
    try:
        found.view = adapter_for(desc).read(loc, data)
    except SynartesisError as exc:
        found.error, found.error_code = str(exc), exc.exit_code
    return found


def discover(env: Env, clients: Sequence[ClientDescriptor],
             known_projects: Mapping[str, Iterable[str]] | None = None) -> Discovery:
    """User files first (per client), then the project files they lead to.

    ``known_projects``: client id → project roots synartesis wrapped a file in before (from
    the install record). They are looked in too, wherever the command runs: a Cursor project
    found by walking up from one folder must not read as "removed" from another.
    """
    out = Discovery()
    for desc in clients:
        out.looked += [str(p) for p in looked_in(desc, env) if str(p) not in out.looked]
        locs, notes = user_locations(desc, env)
        out.notes += notes
        users = [read_location(desc, loc) for loc in locs]
        out.files += users
        values = [f.view.value for f in users if f.view is not None]
        roots = project_roots(desc, env, values)
        seen = {Path(k) for k, _ in roots}  # a set: an install record can name thousands
        for key in (known_projects or {}).get(desc.id, ()):
            if isinstance(key, str) and key and Path(key) not in seen:
                seen.add(Path(key))
                roots.append((key, Path(key)))
        if desc.id == "codex":
            trusted = set()
            for v in values:
                projects = v.get("projects") if isinstance(v, dict) else None
                if isinstance(projects, dict):
                    trusted |= {k for k, p in projects.items()
                                if isinstance(p, dict) and p.get("trust_level") == "trusted"}
            kept = []
            for key, root in roots:
                if key in trusted or any(Path(t) == root for t in trusted):
                    kept.append((key, root))
                else:
                    out.notes.append(f"{desc.display_name}: {root / '.codex/config.toml'} is not read "
                                     "by Codex (the project is not trusted)")
            roots = kept
        for loc in project_locations(desc, env, roots):
            out.files.append(read_location(desc, loc))
    return out
