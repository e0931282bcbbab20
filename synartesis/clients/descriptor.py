"""Client descriptors: the data in root ``clients/*.toml``, loaded and validated.

Read only through ``importlib.resources.files("synartesis.clients.defs")`` (DESIGN §2), so the
installed wheel and an editable checkout behave the same.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Any, Mapping

from synartesis.errors import SynartesisError

__all__ = [
    "ServersAt",
    "FileSpec",
    "ProjectSpec",
    "ClientDescriptor",
    "DescriptorError",
    "load_descriptors",
    "get_descriptor",
    "parse_descriptor",
]

_FORMATS = ("json", "toml")
_EXPANSIONS = ("claude", "cursor", "none")
_COVERS = ("shadow", "edit-with-consent")
_SELECTS = ("first", "all")
_DISCOVERY = ("claude-projects", "cwd", "cursor-workspaces", "codex-trusted")


class DescriptorError(SynartesisError):
    """A shipped client descriptor is malformed (a packaging bug)."""

    exit_code = 2


@dataclass(frozen=True)
class ServersAt:
    """Where servers live in a file: ``path`` of object keys; ``*`` matches every key there."""

    scope: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class FileSpec:
    """A user-level config file: candidate path templates per platform."""

    scope: str
    select: str  # "first" existing candidate only, or "all" that exist
    paths: Mapping[str, tuple[str, ...]]  # platform ("*" = any) -> templates
    servers: tuple[ServersAt, ...]

    def templates(self, platform: str) -> tuple[str, ...]:
        """Path templates for ``platform`` (``sys.platform`` value)."""
        key = "win32" if platform.startswith("win") else platform
        return self.paths.get(key) or self.paths.get("*") or ()


@dataclass(frozen=True)
class ProjectSpec:
    """A project-level file, relative to a project root."""

    scope: str
    path: str
    servers: tuple[str, ...]
    shared: bool
    cover: str  # "shadow" (Claude Code local scope) or "edit-with-consent"


@dataclass(frozen=True)
class ClientDescriptor:
    """One MCP client, as data."""

    id: str
    display_name: str
    format: str
    expansion: str
    restart: str
    restart_required: bool
    env_vars: tuple[str, ...]
    files: tuple[FileSpec, ...]
    projects: tuple[ProjectSpec, ...] = ()
    project_discovery: tuple[str, ...] = ()
    managed: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    workspaces: Mapping[str, str] = field(default_factory=dict)


def _req(d: Mapping[str, Any], key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if key not in d:
        raise DescriptorError(f"{where}: missing key {key!r}")
    v = d[key]
    if not isinstance(v, typ):
        name = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise DescriptorError(f"{where}: {key!r} must be {name}")
    return v


def _choice(value: str, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise DescriptorError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _str_tuple(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise DescriptorError(f"{where}: expected a list of strings")
    return tuple(v)


def parse_descriptor(data: Mapping[str, Any], where: str) -> ClientDescriptor:
    """Validate one descriptor mapping (from TOML).

    Raises:
        DescriptorError: a key is missing, mistyped or unknown.
    """
    known = {"schema_version", "id", "display_name", "format", "expansion", "restart",
             "restart_required", "env_vars", "project_discovery", "files", "projects",
             "managed", "workspaces"}
    unknown = set(data) - known
    if unknown:
        raise DescriptorError(f"{where}: unknown keys {sorted(unknown)}")
    if _req(data, "schema_version", int, where) != 1:
        raise DescriptorError(f"{where}: unsupported schema_version")
    files_: list[FileSpec] = []
    for i, f in enumerate(_req(data, "files", list, where)):
        w = f"{where}: files[{i}]"
        raw_paths = _req(f, "paths", (list, dict), w)
        if isinstance(raw_paths, list):
            paths = {"*": _str_tuple(raw_paths, w)}
        else:
            paths = {k: _str_tuple(v, f"{w}.paths.{k}") for k, v in raw_paths.items()}
        servers = tuple(ServersAt(_req(s, "scope", str, w), _str_tuple(_req(s, "path", list, w), w))
                        for s in _req(f, "servers", list, w))
        files_.append(FileSpec(_req(f, "scope", str, w),
                               _choice(f.get("select", "first"), _SELECTS, w), paths, servers))
    projects: list[ProjectSpec] = []
    for i, p in enumerate(data.get("projects", [])):
        w = f"{where}: projects[{i}]"
        projects.append(ProjectSpec(_req(p, "scope", str, w), _req(p, "path", str, w),
                                    _str_tuple(_req(p, "servers", list, w), w),
                                    bool(p.get("shared", True)),
                                    _choice(_req(p, "cover", str, w), _COVERS, w)))
    discovery = _str_tuple(data.get("project_discovery", []), where)
    for d in discovery:
        _choice(d, _DISCOVERY, where)
    return ClientDescriptor(
        id=_req(data, "id", str, where),
        display_name=_req(data, "display_name", str, where),
        format=_choice(_req(data, "format", str, where), _FORMATS, where),
        expansion=_choice(data.get("expansion", "none"), _EXPANSIONS, where),
        restart=data.get("restart", ""),
        restart_required=bool(data.get("restart_required", False)),
        env_vars=_str_tuple(data.get("env_vars", []), where),
        files=tuple(files_),
        projects=tuple(projects),
        project_discovery=discovery,
        managed={k: dict(v) for k, v in data.get("managed", {}).items()},
        workspaces=dict(data.get("workspaces", {})),
    )


@lru_cache(maxsize=1)
def load_descriptors() -> tuple[ClientDescriptor, ...]:
    """Every shipped descriptor, ordered by id.

    Raises:
        DescriptorError: a shipped descriptor does not parse or validate.
    """
    out = []
    for res in files("synartesis.clients.defs").iterdir():
        if not res.name.endswith(".toml"):
            continue
        try:
            data = tomllib.loads(res.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise DescriptorError(f"clients/{res.name}: {exc}") from None
        desc = parse_descriptor(data, f"clients/{res.name}")
        if f"{desc.id}.toml" != res.name:
            raise DescriptorError(f"clients/{res.name}: id {desc.id!r} does not match the file name")
        out.append(desc)
    return tuple(sorted(out, key=lambda d: d.id))


def get_descriptor(client_id: str) -> ClientDescriptor:
    """The descriptor for ``client_id``.

    Raises:
        UsageError-like DescriptorError naming the known ids when there is none.
    """
    for d in load_descriptors():
        if d.id == client_id:
            return d
    known = ", ".join(d.id for d in load_descriptors())
    from synartesis.errors import UsageError

    raise UsageError(f"unknown client {client_id!r} (known: {known})")
