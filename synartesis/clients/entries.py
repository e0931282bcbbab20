"""Server entries as found in a client config: what kind each is, and whose wrapper it runs.

An entry is treated as an opaque mapping (CLIENTS.md §2 "Typed-model round-trip drops
fields"); only ``command``, ``args`` and ``url``/``type`` are looked at to classify it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "ServerEntry",
    "classify",
    "is_ours",
    "ours_server",
    "foreign_wrapper",
    "proxy_args",
    "value_sha",
    "expand",
    "entry_env",
    "has_surrogate",
    "display_name",
    "entry_label",
    "SURROGATE_DETAIL",
]

SURROGATE_DETAIL = ("it holds a lone surrogate escape (such as \\ud800), which is not valid Unicode text "
                    "and cannot be passed to a program; left alone")

REMOTE_TYPES = frozenset({"http", "streamable-http", "sse", "ws", "streamableHttp"})


@dataclass(frozen=True)
class ServerEntry:
    """One server entry of a config file.

    Attributes:
        scope: ``user``, ``local`` (Claude Code ``projects[…]``) or ``project``.
        name: the server name (the key), exactly as in the file.
        locator: object-key path from the document root to the entry.
        value: the parsed entry (normally a mapping).
        project: the ``projects`` key (local scope) or project root (project files).
        kind: ``stdio`` | ``remote`` | ``invalid``.
        detail: why an entry is ``invalid``.
    """

    scope: str
    name: str
    locator: tuple[str, ...]
    value: Any
    project: str | None
    kind: str
    detail: str = ""

    @property
    def command(self) -> str | None:
        """The ``command`` string of a stdio entry."""
        v = self.value.get("command") if isinstance(self.value, dict) else None
        return v if isinstance(v, str) else None

    @property
    def args(self) -> list[str]:
        """The ``args`` list of a stdio entry (empty when absent)."""
        v = self.value.get("args") if isinstance(self.value, dict) else None
        return list(v) if isinstance(v, list) else []

    @property
    def argv(self) -> list[str]:
        """``[command, *args]``."""
        return [self.command or "", *self.args]


def has_surrogate(value: Any) -> bool:
    """True when a string anywhere in ``value`` (keys included) holds a lone surrogate.

    JSON allows ``"\\ud800"``; Python decodes it to a string that cannot be encoded as UTF-8,
    so such a name or argument can be neither written to the policy nor passed to a program.
    """
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    try:  # one C-speed pass: UTF-8 encoding fails exactly on a lone surrogate
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, TypeError, RecursionError):  # not JSON-shaped: walk it
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                if _SURROGATE.search(v):
                    return True
            elif isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def display_name(name: str) -> str:
    """A name as it may be printed: lone surrogates and control characters as escapes."""
    if not isinstance(name, str):
        return str(name)
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii")
                            if not _SURROGATE.match(m.group()) else f"\\u{ord(m.group()):04x}", name)


def entry_label(client: str, entry: ServerEntry) -> str:
    """An entry as a message names it, no values: "Codex's memory", "Claude Code's memory (local
    scope, project /p)", "Claude Code's memory (project file of /p)". ``client`` is the client's
    display name."""
    label = f"{client}'s {display_name(entry.name)}"
    if entry.project and entry.scope == "project":
        return f"{label} (project file of {display_name(str(entry.project))})"
    if entry.project:
        return f"{label} ({entry.scope} scope, project {display_name(str(entry.project))})"
    return label


def classify(value: Any, fmt: str) -> tuple[str, str]:
    """(kind, detail) of an entry: ``stdio``, ``remote`` or ``invalid`` with the reason."""
    if not isinstance(value, dict):
        return "invalid", "the entry is not an object"
    if has_surrogate(value):
        return "invalid", SURROGATE_DETAIL
    has_url = "url" in value
    typ = value.get("type")
    if "command" in value:
        cmd = value["command"]
        if not isinstance(cmd, str) or not cmd.strip():
            return "invalid", "command is not a non-empty string"
        if fmt == "toml" and has_url:
            return "invalid", "both command and url (Codex rejects this entry)"
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return "invalid", "args is not a list of strings"
        if isinstance(typ, str) and typ in REMOTE_TYPES:
            return "invalid", f"type {typ!r} with a command"
        return "stdio", ""
    if has_url or (isinstance(typ, str) and typ in REMOTE_TYPES):
        url = value.get("url")
        if has_url and not isinstance(url, str):
            return "invalid", "url is not a string"
        if isinstance(url, str) and _CONTROL.search(url):
            # a line break or NUL cannot be in a URL (RFC 3986); an HTTP client would refuse it
            # at the first request, or split the request line, so it is never bridged
            return "invalid", "url contains a line break or another control character"
        return "remote", "remote server (url)"
    return "invalid", "neither command nor url"


def _stem(command: str) -> str:
    base = re.split(r"[\\/]", command)[-1].lower()
    for ext in (".exe", ".cmd", ".bat"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def is_ours(command: str | None, args: list[str]) -> bool:
    """True for an entry that runs ``synartesis proxy … -- …`` (any synartesis path)."""
    if not command:
        return False
    if _stem(command) == "synartesis" and args[:1] == ["proxy"]:
        return True
    return args[:3] == ["-m", "synartesis", "proxy"]


def ours_server(args: list[str]) -> str | None:
    """The ``--server`` value of one of our entries' args."""
    try:
        stop = args.index("--")
    except ValueError:
        stop = len(args)
    for i, a in enumerate(args[:stop]):
        if a == "--server" and i + 1 < stop:
            return args[i + 1]
        if a.startswith("--server="):
            return a.split("=", 1)[1]
    return None


def proxy_args(args: list[str]) -> tuple[str, list[str]] | None:
    """The original (command, args) after ``--`` in one of our entries, else None."""
    try:
        i = args.index("--")
    except ValueError:
        return None
    rest = args[i + 1:]
    return (rest[0], rest[1:]) if rest else None


def foreign_wrapper(command: str | None, args: list[str]) -> str | None:
    """The name of another tool whose wrapper/gateway this entry runs, else None.

    Wrapping a wrapper hides the real server from both tools (CLIENTS.md §5 "Detect
    already-wrapped entries"): mcp-scan / invariant-gateway, mcp-context-protector, mcpm,
    the Docker MCP gateway.
    """
    if not command:
        return None
    stem = _stem(command)
    joined = " ".join(args)
    if "invariant-gateway" in joined or "invariant-gateway" in command:
        return "mcp-scan (invariant-gateway)"
    if "mcp-context-protector" in stem or "mcp-context-protector" in joined or "--command-args" in args:
        return "mcp-context-protector"
    if stem == "mcpm" and args[:1] == ["run"]:
        return "mcpm"
    if stem == "docker" and args[:3] == ["mcp", "gateway", "run"]:
        return "Docker MCP gateway"
    if stem == "mcp-scan" or (args[:1] and args[0].startswith("mcp-scan") and "proxy" in args):
        return "mcp-scan"
    return None


def value_sha(value: Any) -> str:
    """SHA-256 of a value's canonical JSON (keys sorted; dates and other scalars as text)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_CLAUDE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_CURSOR_VAR = re.compile(r"\$\{(env:([A-Za-z_][A-Za-z0-9_]*)|userHome|pathSeparator|/)\}")


def expand(value: str, style: str, environ: Mapping[str, str], home: str = "") -> str:
    """Expand a string the way the client would before starting the server (in memory only).

    ``style`` is the descriptor's ``expansion``: ``claude`` (``${VAR}``, ``${VAR:-default}``;
    unset stays literal), ``cursor`` (``${env:NAME}``, ``${userHome}``, ``${pathSeparator}``),
    ``none``. The result is used to start a server for introspection and is never stored.
    """
    if style == "claude":
        def sub(m: re.Match[str]) -> str:
            v = environ.get(m.group(1))
            if v:
                return v
            return m.group(2) if m.group(2) is not None else m.group(0)
        return _CLAUDE_VAR.sub(sub, value)
    if style == "cursor":
        def csub(m: re.Match[str]) -> str:
            if m.group(2):
                return environ.get(m.group(2), "")
            if m.group(1) == "userHome":
                return home
            return os.sep
        return _CURSOR_VAR.sub(csub, value)
    return value


def entry_env(entry: Any, style: str, environ: Mapping[str, str], home: str = "") -> dict[str, str]:
    """The environment a client would give this entry's server: ours plus the entry's ``env``."""
    env = dict(environ)
    raw = entry.get("env") if isinstance(entry, dict) else None
    if isinstance(raw, dict):
        for k, v in raw.items():
            if isinstance(k, str) and isinstance(v, (str, int, float, bool)):
                env[k] = expand(str(v).lower() if isinstance(v, bool) else str(v), style, environ, home)
    return env
