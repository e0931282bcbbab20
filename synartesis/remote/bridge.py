"""The remote side of ``synartesis proxy --server NAME --url URL``: the stdio ↔ remote bridge.

``proxy/main.py`` parses the flags and hands them here; this builds the
:class:`~synartesis.remote.http.HttpUpstream` the engine relays to, with the headers resolved
from their references in the proxy's own environment (the client expanded ``${VAR}`` in it),
the ``headersHelper`` run as Claude Code runs it, and the stored OAuth sign-in when the entry
gives no ``Authorization`` of its own.

Flags (every one takes a value; ``--header`` and ``--header-env`` may repeat):

- ``--url URL`` / ``--url-env VAR``: the endpoint (``--url-env`` keeps a URL holding a key out
  of the command line).
- ``--header "Name: value"``: a literal header; ``--header-env Name=VAR``: the header's value
  is ``$VAR``; ``--bearer-env VAR``: ``Authorization: Bearer $VAR``.
- ``--headers-helper CMD``: a command printing a JSON object of headers, run through the shell
  at connect (and after a 401).
- ``--transport auto|http|sse``: ``sse`` for a Claude Code ``"type": "sse"`` entry.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from synartesis.errors import UsageError
from synartesis.remote.headers import HeaderSpec, parse_header, run_headers_helper, unexpanded

__all__ = ["RemoteSpec", "open_remote", "relay_launch", "remote_spec"]


@dataclass(frozen=True)
class RemoteSpec:
    """A remote server as the proxy's flags give it (references, never values)."""

    url: str | None = None
    url_env: str | None = None
    headers: HeaderSpec = field(default_factory=HeaderSpec)
    transport: str = "auto"


def remote_spec(values: Mapping[str, list[str]]) -> RemoteSpec | None:
    """The spec from parsed flag values (``{"url": [...], "header": [...], …}``), or None when
    neither ``--url`` nor ``--url-env`` is given.

    Raises:
        UsageError: a malformed header, a bad transport, both URL forms, or headers without a URL.
    """
    url = values.get("url", [None])[-1]
    url_env = values.get("url-env", [None])[-1]
    has_headers = any(values.get(k) for k in ("header", "header-env", "bearer-env", "headers-helper", "transport"))
    if url is None and url_env is None:
        if has_headers:
            raise UsageError("--header, --header-env, --bearer-env, --headers-helper and --transport need --url")
        return None
    if url is not None and url_env is not None:
        raise UsageError("give --url or --url-env, not both")
    from_env = []
    for item in values.get("header-env", []):
        name, eq, var = item.partition("=")
        if not eq or not name or not var:
            raise UsageError(f"--header-env needs NAME=VAR, got {item[:40]!r}")
        from_env.append((name.strip(), var.strip()))
    transport = values.get("transport", ["auto"])[-1]
    if transport not in ("auto", "http", "sse"):
        raise UsageError(f"--transport must be auto, http or sse, not {transport!r}")
    spec = HeaderSpec(literal=tuple(parse_header(h) for h in values.get("header", [])), from_env=tuple(from_env),
                      bearer_env=values.get("bearer-env", [None])[-1], helper=values.get("headers-helper", [None])[-1])
    return RemoteSpec(url, url_env, spec, transport)


def open_remote(server: str, spec: RemoteSpec, environ: Mapping[str, str], home_env=None):
    """The upstream for ``spec`` (not started).

    Raises:
        UsageError: the URL variable or a header's variable is unset, or the URL is not http(s).
    """
    from synartesis.paths import Env
    from synartesis.remote.http import HttpUpstream
    from synartesis.remote.oauth import OAuthBearer
    from synartesis.remote.tokens import TokenStore

    url = spec.url if spec.url is not None else environ.get(spec.url_env or "")
    if not url:
        raise UsageError("--url is empty" if spec.url is not None else
                         f"the server's URL comes from ${spec.url_env}, which is not set")
    unset = unexpanded(url)
    if unset:
        raise UsageError(f"the server's URL names {unset}, which is not set (a client passes an unset "
                         "variable on as written)")
    if not url.lower().startswith(("http://", "https://")):
        raise UsageError("the server's URL must start with http:// or https://")
    static = spec.headers.resolve(environ)
    helper = spec.headers.helper
    headers: object = static
    if helper:
        def headers() -> dict[str, str]:  # type: ignore[no-redef]
            return {**static, **run_headers_helper(helper, environ, server=server, url=url)}
    auth = None
    if not spec.headers.has_authorization:
        auth = OAuthBearer(TokenStore(home_env or Env.current()), server, url)
    return HttpUpstream(url, label=server, transport=spec.transport, headers=headers, auth=auth)


def relay_launch(server: str, spec: RemoteSpec) -> dict:
    """The launch line the journal records for a remote server: ``synartesis remote-relay``
    with the same flags (references only), so undo and the other commands reach the same
    server with the same credentials (read from the client entry's environment then)."""
    command, args = _own_command()
    args += ["remote-relay", "--server", server]
    args += ["--url", spec.url] if spec.url is not None else ["--url-env", spec.url_env or ""]
    args += spec.headers.flags(hide_literals=True)
    if spec.transport != "auto":
        args += ["--transport", spec.transport]
    return {"command": command, "args": args, "cwd": os.getcwd()}


def _own_command() -> tuple[str, list[str]]:
    """How this synartesis was started: the ``synartesis`` executable a client entry runs (so the
    launch line is the one install writes into the policy and undo sees no changed launch), else
    this interpreter with ``-m synartesis``. Either way the relay comes from the same install."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    if name in ("synartesis", "synartesis.exe") and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return os.path.abspath(argv0), []
    return sys.executable, ["-m", "synartesis"]
