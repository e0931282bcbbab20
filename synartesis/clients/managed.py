"""Admin-managed MCP policy that can block a wrapped entry (CLIENTS.md §0.6, §1.1 "Policy").

Claude Code's managed settings (``managed-settings.json`` and ``managed-settings.d/*.json``)
carry ``allowedMcpServers`` / ``deniedMcpServers`` whose entries match by ``serverName``,
``serverUrl`` or ``serverCommand`` — the exact command and args. A wrapped entry no longer has
the original command, so an allow rule by command would stop matching (the server is blocked)
and a deny rule by command would stop matching (the admin's deny is evaded). Either way the
entry is skipped and reported. A ``managed-mcp.json`` takes exclusive control: user and project
servers are not loaded at all, which is reported as a warning.

Cursor's enterprise allowlist lives in the team dashboard, not in a file, so it cannot be
checked here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synartesis.clients.descriptor import ClientDescriptor
from synartesis.clients.locations import managed_paths
from synartesis.paths import Env

__all__ = ["ManagedPolicy", "load_managed"]


@dataclass
class ManagedPolicy:
    """What the managed files say about MCP servers."""

    exclusive_file: Path | None = None
    allowed: list[dict[str, Any]] = field(default_factory=list)
    denied: list[dict[str, Any]] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def blocks(self, name: str, argv: list[str]) -> str | None:
        """Why wrapping the entry ``name`` running ``argv`` must be skipped, else None."""
        for rule in self.denied:
            if rule.get("serverCommand") == argv:
                return ("denied by command in Claude Code managed settings; wrapping it would "
                        "evade the administrator's rule, so it is left alone")
        by_command = any(r.get("serverCommand") == argv for r in self.allowed)
        by_name = any(r.get("serverName") == name for r in self.allowed)
        if by_command and not by_name:
            return ("allowed only by its exact command in Claude Code managed settings; a wrapped "
                    "entry would be blocked, so it is left alone")
        return None


    def blocks_remote(self, name: str, url: str) -> str | None:
        """Why wrapping the remote entry ``name`` at ``url`` must be skipped, else None: a
        ``serverUrl`` rule (``*`` wildcards) stops matching once the entry runs a command."""
        import fnmatch

        def hit(rule: dict[str, Any]) -> bool:
            pattern = rule.get("serverUrl")
            return isinstance(pattern, str) and fnmatch.fnmatchcase(url, pattern)
        if any(hit(r) for r in self.denied):
            return ("denied by URL in Claude Code managed settings; wrapping it would evade the "
                    "administrator's rule, so it is left alone")
        if any(hit(r) for r in self.allowed) and not any(r.get("serverName") == name for r in self.allowed):
            return ("allowed only by its URL in Claude Code managed settings; a wrapped entry would be "
                    "blocked, so it is left alone")
        return None


def _rules(value: Any) -> list[dict[str, Any]]:
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def load_managed(desc: ClientDescriptor, env: Env, system_root: Path | None = None) -> ManagedPolicy:
    """Read the client's managed files (none for clients without a ``[managed]`` table).

    Unreadable managed files are reported in ``errors``, never fatal.
    """
    out = ManagedPolicy()
    paths = managed_paths(desc, env, system_root)
    mcp = paths.get("mcp")
    if mcp is not None and mcp.is_file():
        out.exclusive_file = mcp
    files: list[Path] = []
    if paths.get("settings") is not None and paths["settings"].is_file():
        files.append(paths["settings"])
    d = paths.get("settings_dir")
    if d is not None and d.is_dir():
        files.extend(sorted(p for p in d.glob("*.json") if p.is_file()))
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            out.errors.append(f"{f}: {exc}")
            continue
        if not isinstance(data, dict):
            continue
        out.sources.append(f)
        out.allowed += _rules(data.get("allowedMcpServers"))
        out.denied += _rules(data.get("deniedMcpServers"))
    return out
