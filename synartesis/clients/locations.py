"""Where each client's config files are, resolved against an injectable :class:`Env`.

Path templates in the descriptors use these tokens (nothing else reads ``os.environ`` or
``Path.home()`` for a client location, DESIGN §2 / STYLE habit 6):

- ``{home}``: ``env.home``; ``{env:NAME}``: a variable (the candidate is skipped when unset);
- ``{xdg_config_home}``: ``$XDG_CONFIG_HOME`` else ``~/.config``;
- ``{appdata}`` / ``{localappdata}``: ``%APPDATA%`` / ``%LOCALAPPDATA%`` else their defaults
  under the home (Claude Desktop strips the environment, CLIENTS.md §2 "Windows env stripping");
- ``{codex_home}``: ``$CODEX_HOME`` else ``~/.codex``; ``{programfiles}``: ``%ProgramFiles%``
  else ``C:\\Program Files``.

platformdirs is not used here: it reads the real process environment, and these paths must
follow the injected one. Absolute system paths (managed settings) are re-rooted under
``system_root`` so tests can point them into a temporary tree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote, urlparse

from synartesis.clients.descriptor import ClientDescriptor, FileSpec, ProjectSpec
from synartesis.paths import Env

__all__ = [
    "ConfigLocation",
    "expand_template",
    "user_locations",
    "project_roots",
    "project_locations",
    "managed_paths",
]

_TOKEN_RE = re.compile(r"\{([a-z_]+)(?::([A-Za-z0-9_]+))?\}")


@dataclass(frozen=True)
class ConfigLocation:
    """One config file of one client.

    Attributes:
        client: descriptor id.
        scope: ``user`` or ``project``.
        path: the path as the client names it (a symlink is not resolved here).
        spec: the descriptor part that describes the file.
        project: for project files, the project root as a string (the key Claude Code uses).
        note: a remark for the user (e.g. "not read by the app: the MSIX path wins").
        active: False for a candidate the client does not read.
    """

    client: str
    scope: str
    path: Path
    spec: FileSpec | ProjectSpec
    project: str | None = None
    note: str = ""
    active: bool = True


def _token(env: Env, name: str, arg: str | None) -> str | None:
    win = env.platform.startswith("win")
    if name == "home":
        return str(env.home)
    if name == "env":
        return env.get(arg or "")
    if name == "xdg_config_home":
        return env.get("XDG_CONFIG_HOME") or str(env.home / ".config")
    if name == "appdata":
        return env.get("APPDATA") or str(env.home / "AppData" / "Roaming")
    if name == "localappdata":
        return env.get("LOCALAPPDATA") or str(env.home / "AppData" / "Local")
    if name == "codex_home":
        return env.get("CODEX_HOME") or str(env.home / ".codex")
    if name == "programfiles":
        return env.get("ProgramFiles") or env.get("PROGRAMFILES") or ("C:\\Program Files" if win else None)
    raise ValueError(f"unknown path token {{{name}}}")


def expand_template(template: str, env: Env, system_root: Path | None = None) -> Path | None:
    """A descriptor path template → a path, or None when a variable it needs is unset.

    ``system_root`` re-roots absolute paths that do not come from a token (e.g.
    ``/etc/claude-code/…``) so tests never read the real system.
    """
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        v = _token(env, m.group(1), m.group(2))
        if v is None:
            missing = True
            return ""
        return v.replace("\\", "/") if env.platform.startswith("win") else v

    starts_with_token = template.startswith("{")
    out = _TOKEN_RE.sub(sub, template)
    if missing:
        return None
    if system_root is not None and not starts_with_token and out.startswith("/"):
        return system_root / out.lstrip("/")
    return Path(out)


def _glob(path: Path) -> list[Path]:
    parts = path.parts
    if not any("*" in p for p in parts):
        return [path]
    anchor = Path(parts[0])
    rel = str(Path(*parts[1:]))
    return sorted(anchor.glob(rel))


def user_locations(desc: ClientDescriptor, env: Env) -> tuple[list[ConfigLocation], list[str]]:
    """The client's user-level config files that exist, and notes about candidates skipped.

    For ``select = "first"`` only the first existing candidate is returned (the one the client
    reads); a glob with several matches is ambiguous and nothing is guessed (CLIENTS.md §1.2).
    """
    found: list[ConfigLocation] = []
    notes: list[str] = []
    for spec in desc.files:
        seen: set[str] = set()
        chosen = False
        for tpl in spec.templates(env.platform):
            p = expand_template(tpl, env)
            if p is None:
                continue
            matches = [m for m in _glob(p) if m.is_file()]
            if len(matches) > 1:
                notes.append(f"{desc.display_name}: several candidate configs ({', '.join(map(str, matches))}); "
                             "not guessing which one the app reads")
                chosen = True
                break
            for m in matches:
                key = str(m.resolve()) if m.exists() else str(m)
                if key in seen:
                    continue
                seen.add(key)
                if spec.select == "first" and chosen:
                    notes.append(f"{desc.display_name}: {m} is not read by the app (an earlier candidate wins)")
                    continue
                found.append(ConfigLocation(desc.id, spec.scope, m, spec))
                chosen = True
    return found, notes


def looked_in(desc: ClientDescriptor, env: Env) -> list[Path]:
    """Every user-level path ``desc``'s client may read on this platform, found or not (for
    "no MCP client config found; looked in: …", a new user's round 31, #7)."""
    out: list[Path] = []
    for spec in desc.files:
        for tpl in spec.templates(env.platform):
            p = expand_template(tpl, env)
            if p is not None and p not in out:
                out.append(p)
    return out


def _walk_up(start: Path, rel: str, home: Path) -> Path | None:
    try:
        here = start.resolve()
    except OSError:
        return None
    try:
        home_r = home.resolve()
    except OSError:
        home_r = home
    for d in (here, *here.parents):
        if d == home_r:
            return None
        if (d / rel).is_file():
            return d
    return None


def _cursor_workspaces(desc: ClientDescriptor, env: Env) -> list[Path]:
    key = "win32" if env.platform.startswith("win") else env.platform
    tpl = desc.workspaces.get(key)
    base = expand_template(tpl, env) if tpl else None
    if base is None or not base.is_dir():
        return []
    out = []
    for ws in sorted(base.glob("*/workspace.json")):
        try:
            folder = json.loads(ws.read_text(encoding="utf-8")).get("folder")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(folder, str) and folder.startswith("file://"):
            out.append(Path(unquote(urlparse(folder).path)))
    return out


def project_roots(desc: ClientDescriptor, env: Env, user_values: Sequence[Any]) -> list[tuple[str, Path]]:
    """Project roots to look in, as (key, path): the key is the string the client uses.

    ``user_values`` are the parsed user config files (for Claude Code's ``projects`` keys and
    Codex's trusted projects). Claude Code keys are kept exactly as stored — never normalised
    (CLIENTS.md §1.1 "Windows project keys").
    """
    roots: list[tuple[str, Path]] = []
    seen: set[str] = set()

    def add(key: str, path: Path) -> None:
        if key not in seen:
            seen.add(key)
            roots.append((key, path))

    for how in desc.project_discovery:
        if how == "claude-projects":
            for v in user_values:
                projects = v.get("projects") if isinstance(v, dict) else None
                if isinstance(projects, dict):
                    for key in projects:
                        add(key, Path(key))
        elif how == "codex-trusted":
            for v in user_values:
                projects = v.get("projects") if isinstance(v, dict) else None
                if isinstance(projects, dict):
                    for key, p in projects.items():
                        if isinstance(p, dict) and p.get("trust_level") == "trusted":
                            add(key, Path(key))
        elif how == "cursor-workspaces":
            for p in _cursor_workspaces(desc, env):
                add(str(p), p)
        elif how == "cwd":
            for spec in desc.projects:
                root = _walk_up(env.cwd, spec.path, env.home)
                if root is not None:
                    key = root.as_posix() if env.platform.startswith("win") else str(root)
                    if not any(Path(k) == root for k in seen):
                        add(key, root)
    return roots


def project_locations(desc: ClientDescriptor, env: Env,
                      roots: Iterable[tuple[str, Path]]) -> list[ConfigLocation]:
    """Project config files that exist under ``roots``."""
    out = []
    seen: set[tuple[Path, str]] = set()
    for key, root in roots:
        for spec in desc.projects:
            p = root / spec.path
            try:
                if not p.is_file():
                    continue
                r = p.resolve()
            except OSError:
                continue
            # Claude Code keys one folder under every spelling a launcher used (drive-letter
            # case on Windows); each key needs its own local-scope entry, so keep them all.
            ident = (r, key if spec.cover == "shadow" else "")
            if ident in seen:
                continue
            seen.add(ident)
            out.append(ConfigLocation(desc.id, spec.scope, p, spec, project=key))
    return out


def managed_paths(desc: ClientDescriptor, env: Env, system_root: Path | None = None) -> dict[str, Path]:
    """Admin-managed files for this client (``mcp``, ``settings``, ``settings_dir``) on this OS."""
    key = "win32" if env.platform.startswith("win") else env.platform
    out = {}
    for kind, per_os in desc.managed.items():
        tpl = per_os.get(key)
        if tpl:
            p = expand_template(tpl, env, system_root)
            if p is not None:
                out[kind] = p
    return out
