"""A remote server's URL and credentials as **references**, resolved only inside the proxy.

Secrets stay where the user put them (HELPERS "Secrets"): a client entry names a header value
with ``${VAR}`` (Claude Code), ``${env:VAR}`` (Cursor), an environment variable name (Codex
``bearer_token_env_var``, ``env_http_headers``), a literal (Codex ``http_headers``) or a
command that prints them (Claude Code ``headersHelper``). This module models those forms
(:class:`RemoteEntry`, :class:`HeaderSpec`), turns a spec into the ``synartesis proxy --url``
arguments plus the environment entries that carry the references (:meth:`HeaderSpec.to_proxy`),
and resolves a spec to real headers at launch (:meth:`HeaderSpec.resolve`).

Why header values travel in the environment and not in ``args``: a client expands ``${VAR}``
in both before starting the proxy, and a command line is visible to every user of the machine
(``ps``); a process's environment is not.

Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from synartesis.errors import UsageError

__all__ = [
    "HEADER_ENV_PREFIX",
    "URL_ENV",
    "HeaderSpec",
    "RemoteEntry",
    "parse_header",
    "remote_entry",
    "run_headers_helper",
    "unexpanded",
]

#: environment names the wrapped entry uses to carry header values and the URL to the proxy
HEADER_ENV_PREFIX = "SYNARTESIS_HEADER_"
URL_ENV = "SYNARTESIS_URL"
_HELPER_TIMEOUT = 10.0
_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 token
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"\$\{[^}]+\}")
_SECRET_QUERY = re.compile(r"[?&][^=&#]*(key|token|secret|password|auth|sig)[^=&#]*=", re.IGNORECASE)


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` → ``(name, value)``.

    Raises:
        UsageError: no colon, or a name that is not an HTTP token.
    """
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not _NAME.match(name):
        raise UsageError(f"--header needs NAME: VALUE with an HTTP header name, got {text[:40]!r}")
    return name, value.strip()


@dataclass(frozen=True)
class HeaderSpec:
    """Where each header of a remote server comes from; none of it is a secret's value
    unless the user wrote the value literally (Codex ``http_headers``).

    Attributes:
        literal: ``(name, value)`` pairs as written (the client may have expanded references).
        from_env: ``(name, VAR)``: the header's whole value is ``$VAR`` (Codex
            ``env_http_headers``; also what the wrapped entries use).
        bearer_env: ``VAR`` whose value is sent as ``Authorization: Bearer $VAR``.
        helper: a shell command printing a JSON object of headers (Claude Code
            ``headersHelper``); its headers win over the others of the same name.
    """

    literal: tuple[tuple[str, str], ...] = ()
    from_env: tuple[tuple[str, str], ...] = ()
    bearer_env: str | None = None
    helper: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.literal or self.from_env or self.bearer_env or self.helper)

    @property
    def names(self) -> list[str]:
        """The header names this spec sets (lower case), for messages that must not show values."""
        out = [n.lower() for n, _ in self.literal] + [n.lower() for n, _ in self.from_env]
        if self.bearer_env:
            out.append("authorization")
        return sorted(set(out))

    @property
    def has_authorization(self) -> bool:
        """True when the entry itself supplies ``Authorization`` (or may, through a helper)."""
        return "authorization" in self.names or self.helper is not None

    def resolve(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The static headers (the helper is run separately, by :func:`run_headers_helper`).

        Raises:
            UsageError: a named environment variable is unset or empty (the message names the
                variable and the header, never a value).
        """
        headers: dict[str, str] = {}
        for name, value in self.literal:
            headers[name.lower()] = value
        for name, var in self.from_env:
            value = environ.get(var)
            if not value:
                raise UsageError(f"the {name} header comes from ${var}, which is not set")
            headers[name.lower()] = value
        if self.bearer_env:
            token = environ.get(self.bearer_env)
            if not token:
                raise UsageError(f"the bearer token comes from ${self.bearer_env}, which is not set")
            headers["authorization"] = f"Bearer {token}"
        for name, value in headers.items():
            if "\n" in value or "\r" in value:
                raise UsageError(f"the {name} header's value holds a line break")
            unset = unexpanded(value)
            if unset:
                raise UsageError(f"the {name} header names {unset}, which is not set (a client passes an "
                                 "unset variable on as written); set it where the client runs, and for "
                                 "undo or check in this shell")
        return headers

    def flags(self, *, hide_literals: bool = False) -> list[str]:
        """The ``synartesis proxy`` / ``remote-relay`` flags for this spec; with
        ``hide_literals`` a literal header's value is the secret mark (a recorded launch line)."""
        from synartesis.redact import SECRET_MARK

        args: list[str] = []
        for name, value in self.literal:
            args += ["--header", f"{name}: {SECRET_MARK if hide_literals else value}"]
        for name, var in self.from_env:
            args += ["--header-env", f"{name}={var}"]
        if self.bearer_env:
            args += ["--bearer-env", self.bearer_env]
        if self.helper:
            args += ["--headers-helper", self.helper]
        return args

    def to_proxy(self, *, literal_in_env: bool = True) -> tuple[list[str], dict[str, str], list[str]]:
        """How a wrapped client entry carries this spec to ``synartesis proxy``.

        Returns:
            ``(args, env, pass_through)``: proxy arguments (``--header-env NAME=VAR``,
            ``--bearer-env VAR``, ``--headers-helper CMD``), environment entries to add to the
            wrapped entry (``SYNARTESIS_HEADER_<n>`` → the value *as written*, references and
            all), and the names of environment variables the client must pass through to the
            proxy (Codex ``env_vars``). With ``literal_in_env=False`` literal headers become
            ``--header NAME: VALUE`` arguments instead (only for values with no secret).
        """
        env: dict[str, str] = {}
        carried: list[tuple[str, str]] = []
        for i, (name, value) in enumerate(self.literal if literal_in_env else (), 1):
            var = f"{HEADER_ENV_PREFIX}{i}"
            env[var] = value
            carried.append((name, var))
        spec = HeaderSpec(() if literal_in_env else self.literal, (*carried, *self.from_env), self.bearer_env,
                          self.helper)
        passthrough = [var for _, var in self.from_env] + ([self.bearer_env] if self.bearer_env else [])
        return spec.flags(), env, passthrough


def unexpanded(value: str) -> str | None:
    """The first ``${VAR}`` / ``${env:VAR}`` reference left in ``value``, or None.

    Claude Code and Cursor pass a reference to an unset variable on as written (CLIENTS.md §1,
    §3); sent as a header it only earns a 401 that names nothing. The reference is the user's
    own text, never a secret's value, so a message may show it.
    """
    m = _REF.search(value)
    return m.group(0) if m else None


def run_headers_helper(command: str, environ: Mapping[str, str], *, server: str, url: str,
                       timeout: float = _HELPER_TIMEOUT) -> dict[str, str]:
    """Run a ``headersHelper`` the way Claude Code does: through the shell, with
    ``CLAUDE_CODE_MCP_SERVER_NAME`` and ``CLAUDE_CODE_MCP_SERVER_URL`` set, at most
    ``timeout`` seconds; its stdout must be a JSON object of string values.

    Returns: the headers, names in lower case.
    Raises:
        UsageError: it failed, timed out or printed something else (its output is never
            quoted: it holds secrets).
    """
    env = dict(environ)
    env["CLAUDE_CODE_MCP_SERVER_NAME"] = server
    env["CLAUDE_CODE_MCP_SERVER_URL"] = url
    try:
        # its own process group: on a timeout the shell *and* what it started are ended
        proc = subprocess.Popen(command, shell=True, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=os.name == "posix")
    except OSError as exc:
        raise UsageError(f"the headers helper of {server} could not run: {exc.strerror}") from None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise UsageError(f"the headers helper of {server} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        raise UsageError(f"the headers helper of {server} exited with {proc.returncode}")
    try:
        value = json.loads(out)
    except ValueError:
        raise UsageError(f"the headers helper of {server} did not print a JSON object") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError(f"the headers helper of {server} must print a JSON object of strings")
    for k, v in value.items():
        if not _NAME.match(k) or "\n" in v or "\r" in v:
            raise UsageError(f"the headers helper of {server} printed a header that is not valid HTTP")
    return {k.lower(): v for k, v in value.items()}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        pass


@dataclass(frozen=True)
class RemoteEntry:
    """A client's remote server entry, read as references.

    Attributes:
        url: the URL as written (may hold ``${VAR}`` / ``${env:VAR}``).
        transport: ``http``, ``sse`` or ``auto`` (Cursor detects; Codex speaks Streamable HTTP);
            ``ws`` is kept so callers can refuse it.
        headers: where the credentials come from.
        oauth: the entry configures OAuth itself (Claude Code ``oauth``, Cursor ``auth``, Codex
            ``oauth``/``scopes``), or gives no headers at all: the server may ask for a sign-in
            that the client would have done.
        explicit_oauth: only the first reason (the entry says so).
        style: how references are written (``claude``, ``cursor``, ``none``).
    """

    url: str
    transport: str
    headers: HeaderSpec = field(default_factory=HeaderSpec)
    oauth: bool = False
    explicit_oauth: bool = False
    style: str = "none"

    def url_args(self) -> tuple[list[str], dict[str, str]]:
        """``--url URL`` or, when the URL holds a reference or a key-like query, ``--url-env``
        with the URL (as written) in the environment, out of ``ps``."""
        if _REF.search(self.url) or _SECRET_QUERY.search(self.url) or "@" in urlsplit(self.url).netloc:
            return ["--url-env", URL_ENV], {URL_ENV: self.url}
        return ["--url", self.url], {}


_CLAUDE_TRANSPORTS = {"http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse", "ws": "ws"}


def remote_entry(value: Mapping, client: str) -> RemoteEntry | None:
    """Read a remote entry of ``client`` (``claude-code``, ``cursor``, ``codex``, ``claude-desktop``).

    Returns None when the entry is not a remote one (no ``url``).
    Raises:
        UsageError: the entry's credentials are malformed (a header that is not a string …).
    """
    url = value.get("url")
    if not isinstance(url, str) or not url:
        return None
    if client == "codex":
        literal = _pairs(value.get("http_headers"), "http_headers")
        from_env = _pairs(value.get("env_http_headers"), "env_http_headers")
        for name, var in from_env:
            if not _ENV_NAME.match(var):
                raise UsageError(f"env_http_headers.{name} must name an environment variable")
        bearer = value.get("bearer_token_env_var")
        if bearer is not None and (not isinstance(bearer, str) or not _ENV_NAME.match(bearer)):
            raise UsageError("bearer_token_env_var must name an environment variable")
        spec = HeaderSpec(literal=literal, from_env=from_env, bearer_env=bearer)
        explicit = "oauth" in value or "scopes" in value or "oauth_resource" in value
        return RemoteEntry(url, "http", spec, explicit or spec.empty, explicit, "none")
    style = "cursor" if client == "cursor" else "claude"
    typ = value.get("type")
    if client == "cursor":
        transport = {"http": "http", "streamable-http": "http", "sse": "sse"}.get(typ, "auto") \
            if isinstance(typ, str) else "auto"
        explicit = isinstance(value.get("auth"), Mapping)
    else:
        transport = _CLAUDE_TRANSPORTS.get(typ, "http") if isinstance(typ, str) else "http"
        explicit = isinstance(value.get("oauth"), Mapping)
    helper = value.get("headersHelper") if client != "cursor" else None
    if helper is not None and not isinstance(helper, str):
        raise UsageError("headersHelper must be a command string")
    spec = HeaderSpec(literal=_pairs(value.get("headers"), "headers"), helper=helper or None)
    return RemoteEntry(url, transport, spec, explicit or spec.empty, explicit, style)


def _pairs(raw: object, key: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise UsageError(f"{key} must be a table of header names to strings")
    out = []
    for k, v in raw.items():
        if not isinstance(k, str) or not _NAME.match(k) or not isinstance(v, str):
            raise UsageError(f"{key}: every header needs an HTTP name and a string value")
        out.append((k, v))
    return tuple(out)

