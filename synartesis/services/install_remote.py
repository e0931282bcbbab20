"""Remote entries at install and status time: may this one be wrapped, and what the wrapped
entry and its policy's launch line are.

A wrapped remote entry runs ``synartesis proxy --server KEY --url URL`` plus the header flags
(:mod:`synartesis.remote.headers`: header values travel in the entry's ``env`` as written, or,
for Codex, as ``env_vars`` names the client passes through). Its policy starts
``synartesis remote-relay`` with the same flags, which is how ``check``, ``pin``, ``init``,
undo and install's own introspection reach the server (the values come from the client entry's
environment at that moment).

Not wrapped, and why: Claude Desktop's remote servers (they live in the app's Connectors, not
in the file); an entry the client signs in to with OAuth, unless ``--include-oauth`` (the
client's own sign-in stops applying once the entry runs a command; ``synartesis login KEY``
signs the bridge in instead); WebSocket entries; a Claude Code entry with a ``url`` but no
``type`` (Claude Code skips it); an admin rule by URL that the wrapped entry would no longer
match; malformed credentials; an entry the bridge could only fail to start (an unknown
``type``, a URL that is not http(s), a header value with a line break).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from synartesis.clients.descriptor import ClientDescriptor
from synartesis.clients.entries import ServerEntry
from synartesis.errors import UsageError
from synartesis.remote.headers import RemoteEntry, remote_entry

__all__ = ["RemoteWrap", "decide_remote", "remote_wrap", "DESKTOP_CONNECTORS"]

DESKTOP_CONNECTORS = ("Claude Desktop keeps remote servers in the app (Settings → Connectors), not in its "
                      "config file, so synartesis cannot cover them from the file")


@dataclass(frozen=True)
class RemoteWrap:
    """What a remote entry becomes.

    Attributes:
        spec: the entry as references.
        args: the wrapped entry's ``args`` (after the synartesis path).
        env: ``env`` members the wrapped entry gains (values as written, references and all).
        env_vars: names Codex must pass through to the proxy.
        relay: the policy's launch line (after the synartesis path): ``remote-relay …``.
        oauth: the server signs in with OAuth (print ``synartesis login KEY``).
    """

    spec: RemoteEntry
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    env_vars: tuple[str, ...]
    relay: tuple[str, ...]
    oauth: bool


def _spec(desc: ClientDescriptor, entry: ServerEntry) -> RemoteEntry:
    spec = remote_entry(entry.value if isinstance(entry.value, dict) else {}, desc.id)
    if spec is None:
        raise UsageError("no url")
    return spec


def decide_remote(desc: ClientDescriptor, entry: ServerEntry, *, include_oauth: bool,
                  managed: object | None = None) -> tuple[str, str]:
    """``(action, reason)`` for a remote entry: ``wrap`` or why not (``uncovered``, ``oauth``,
    ``skipped``, ``invalid``, ``blocked``)."""
    if desc.id == "claude-desktop":
        return "uncovered", DESKTOP_CONNECTORS
    value = entry.value if isinstance(entry.value, dict) else {}
    try:
        spec = _spec(desc, entry)
    except UsageError as exc:
        return "invalid", f"its credentials cannot be read: {exc.message}"
    if desc.id == "claude-code" and not isinstance(value.get("type"), str):
        return "invalid", 'a "url" without a "type": Claude Code skips this entry'
    if spec.transport == "ws":
        return "skipped", "a WebSocket server: synartesis bridges Streamable HTTP and SSE only"
    why = _fails_at_launch(desc, value, spec)
    if why:
        return "invalid", why
    if any(k in value for k in ("command", "args", "env")):
        return "skipped", "the remote entry also has command/args/env; not wrapped"
    blocks = getattr(managed, "blocks_remote", None)
    why = blocks(entry.name, spec.url) if blocks is not None else None
    if why:
        return "blocked", why
    if spec.oauth and not include_oauth:
        return "oauth", ("signs in through the client (OAuth); not wrapped, since the client's own sign-in "
                         f"would stop applying: `synartesis install --include-oauth` wraps it, then "
                         f"`synartesis login {shlex.quote(entry.name)}`")
    return "wrap", ""


_CLAUDE_TYPES = ("http", "streamable-http", "streamableHttp", "sse", "ws")


def _fails_at_launch(desc: ClientDescriptor, value: dict, spec: RemoteEntry) -> str | None:
    """Why the bridge could only fail to start for this entry (so it is left alone), or None:
    a ``type`` the client has no transport for, a URL that is not http(s) (a ``${VAR}`` URL is
    checked at launch), a header value with a line break (no HTTP request can carry it)."""
    typ = value.get("type")
    if desc.id in ("claude-code", "claude-desktop") and isinstance(typ, str) and typ not in _CLAUDE_TYPES:
        return f'its "type" is {typ[:40]!r}, not a remote transport (http, sse)'
    url = spec.url.strip()
    if not url.startswith("$") and not url.lower().startswith(("http://", "https://")):
        scheme = url.split(":", 1)[0][:20] if ":" in url else ""
        return (f"its URL is not http:// or https:// ({scheme + '://' if scheme else 'no scheme'}); "
                "the bridge speaks Streamable HTTP and SSE only")
    for name, v in spec.headers.literal:
        if "\r" in v or "\n" in v:
            return f"the value of its header {name} has a line break, which no HTTP request can carry"
    return None


def remote_wrap(desc: ClientDescriptor, entry: ServerEntry, key: str) -> RemoteWrap:
    """The wrapped form of a remote entry that :func:`decide_remote` said to wrap.

    Raises:
        UsageError: the entry's credentials cannot be read.
    """
    spec = _spec(desc, entry)
    url_args, url_env = spec.url_args()
    header_args, header_env, passthrough = spec.headers.to_proxy(literal_in_env=True)
    transport = {"http": ["--transport", "http"], "sse": ["--transport", "sse"]}.get(spec.transport, [])
    flags = (*url_args, *header_args, *transport)
    env = {**url_env, **header_env}
    return RemoteWrap(spec, ("proxy", "--server", key, *flags), tuple(env.items()),
                      tuple(dict.fromkeys(passthrough)) if desc.id == "codex" else (),
                      ("remote-relay", "--server", key, *flags), spec.oauth)
