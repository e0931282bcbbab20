"""Remote servers as the CLI sees them: which URL a name means, signing in and out, and the
sign-in state ``status`` shows.

A name is looked up in every client config this machine has (a remote entry of that name, or
one of our wrapped entries whose ``proxy --url`` says where it goes); ``--url`` skips the
lookup. References in the URL and headers are expanded the way that client would, in memory,
at the moment they are needed, and never stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from synartesis.errors import UsageError
from synartesis.paths import Env
from synartesis.remote.headers import (
    HeaderSpec,
    RemoteEntry,
    parse_header,
    remote_entry,
)
from synartesis.remote.tokens import TokenStore

__all__ = ["RemoteTarget", "SignInState", "find_remote", "placeholder_launch", "proxy_remote_args", "sign_in", "sign_in_state",
           "sign_out"]


@dataclass(frozen=True)
class RemoteTarget:
    """A remote server, ready to talk to (references expanded in memory).

    Attributes:
        name, url: the server's name and its URL (expanded).
        transport: ``auto``, ``http`` or ``sse``.
        headers: the entry's header references; ``environ`` resolves them.
        environ: the environment the client would give (ours plus the entry's ``env``).
        client_id, client_secret, callback_port, scopes: OAuth settings from the entry.
        source: where it was found (``claude-code ~/.claude.json``, or ``--url``).
    """

    name: str
    url: str
    transport: str = "auto"
    headers: HeaderSpec = field(default_factory=HeaderSpec)
    environ: Mapping[str, str] = field(default_factory=dict)
    client_id: str | None = None
    client_secret: str | None = None
    callback_port: int | None = None
    scopes: str | None = None
    source: str = "--url"


@dataclass(frozen=True)
class SignInState:
    """``signed in``, ``expired`` (refreshable or not), ``not signed in``; ``where`` it is kept."""

    state: str
    where: str | None = None
    expires_at: float | None = None
    refreshable: bool = False


def proxy_remote_args(args: list[str], env: Mapping[str, str] | None = None) -> tuple[str, HeaderSpec, str] | None:
    """From our wrapped entry's ``proxy --url …`` arguments: (url, header spec, transport).
    None when the arguments are not the remote form. ``env`` supplies ``--url-env``."""
    url: str | None = None
    transport = "auto"
    literal: list[tuple[str, str]] = []
    from_env: list[tuple[str, str]] = []
    bearer: str | None = None
    helper: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in ("--url", "--url-env", "--header", "--header-env", "--bearer-env", "--headers-helper",
                    "--transport") and not eq:
            if i + 1 >= len(args):
                break
            value = args[i + 1]
            i += 1
        if name == "--url":
            url = value
        elif name == "--url-env":
            url = (env or {}).get(value) or url
        elif name == "--header":
            try:
                literal.append(parse_header(value))
            except UsageError:
                pass
        elif name == "--header-env":
            h, _, var = value.partition("=")
            from_env.append((h, var))
        elif name == "--bearer-env":
            bearer = value
        elif name == "--headers-helper":
            helper = value
        elif name == "--transport":
            transport = value
        i += 1
    if not url:
        return None
    return url, HeaderSpec(tuple(literal), tuple(from_env), bearer, helper), transport


def find_remote(env: Env, name: str, url: str | None = None) -> RemoteTarget:
    """The remote server ``name`` means.

    Raises:
        UsageError: no client config has a remote entry of that name (give ``--url``), or two
            entries of that name point at different URLs.
    """
    if url:
        return RemoteTarget(name, url, environ=dict(env.environ))
    from synartesis.clients.descriptor import load_descriptors
    from synartesis.clients.discover import discover
    from synartesis.clients.entries import entry_env, expand, is_ours, ours_server

    found: list[RemoteTarget] = []
    for f in discover(env, load_descriptors()).files:
        if f.view is None:
            continue
        desc = f.descriptor
        for entry in f.view.entries:
            if not isinstance(entry.value, dict):
                continue
            ours = entry.kind == "stdio" and is_ours(entry.command, entry.args)
            # a wrapped entry answers to its --server key too (install may have made it `git-cursor`)
            if entry.name != name and not (ours and ours_server(entry.args) == name):
                continue
            environ = entry_env(entry.value, desc.expansion, env.environ, str(env.home))
            where = f"{desc.id} {f.location.path}"
            raw = entry.value.get("auth" if desc.id == "cursor" else "oauth")  # kept on a wrapped entry too
            oauth: Mapping = raw if isinstance(raw, Mapping) else {}
            port = oauth.get("callbackPort")
            sign_in = {"client_id": oauth.get("clientId") or oauth.get("CLIENT_ID") or oauth.get("client_id"),
                       "client_secret": oauth.get("CLIENT_SECRET"),
                       "callback_port": port if isinstance(port, int) else None,
                       "scopes": _scopes(oauth.get("scopes")) or _scopes(entry.value.get("scopes"))}
            if entry.kind == "remote":
                try:
                    spec: RemoteEntry | None = remote_entry(entry.value, desc.id)
                except UsageError:
                    continue
                if spec is None:
                    continue
                headers = HeaderSpec(tuple((h, expand(v, desc.expansion, environ, str(env.home)))
                                           for h, v in spec.headers.literal), spec.headers.from_env,
                                     spec.headers.bearer_env, spec.headers.helper)
                found.append(RemoteTarget(name, expand(spec.url, desc.expansion, environ, str(env.home)),
                                          spec.transport, headers, environ, source=where, **sign_in))
            elif ours:
                got = proxy_remote_args(entry.args, environ)
                if got is not None:
                    found.append(RemoteTarget(name, got[0], got[2], got[1], environ, source=where, **sign_in))
    if not found:
        raise UsageError(f"no client config has a remote server named {name}; give its URL with --url")
    urls = sorted({t.url for t in found})
    if len(urls) > 1:
        raise UsageError(f"{name} names {len(urls)} different remote servers ({', '.join(sorted(t.source for t in found))}); "
                         "give the one to sign in to with --url")
    return found[0]


def _scopes(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return " ".join(value)
    return None


def sign_in(env: Env, target: RemoteTarget, open_url: Callable[[str], None], *, timeout: float = 300.0):
    """Run the OAuth flow for ``target`` (see :func:`synartesis.remote.oauth.login`).

    Returns: a :class:`~synartesis.remote.oauth.LoginResult`.
    Raises:
        SynartesisError: the flow failed; UsageError: a header reference is unset.
    """
    from synartesis.remote.oauth import login

    headers = target.headers.resolve(target.environ)
    return asyncio.run(login(target.name, target.url, TokenStore(env), open_url=open_url, headers=headers,
                             client_id=target.client_id, client_secret=target.client_secret,
                             scopes=target.scopes, callback_port=target.callback_port or 0, timeout=timeout))


def placeholder_launch(env: Env, name: str) -> list[str] | None:
    """The launch line of ``name`` in the user policy when its rules are install's placeholder
    (the server could not be started then, typically because it wanted a sign-in), else None.

    What ``synartesis init NAME -- …`` needs to draft real rules now; references only, as the
    policy keeps them. A missing or malformed policy is None: this is a hint, never an error.
    """
    from synartesis.paths import POLICY_FILENAME, synartesis_home
    from synartesis.policy import load_policy

    path = synartesis_home(env) / POLICY_FILENAME
    try:
        spec = load_policy(path).servers.get(name) if path.exists() else None
    except Exception:  # noqa: BLE001 - a hint must not turn a good sign-in into an error
        return None
    if spec is None or not spec.command or not (spec.note or "").endswith("placeholder, server not started"):
        return None
    return [spec.command, *spec.args]


def sign_out(env: Env, name: str) -> bool:
    """Remove ``name``'s sign-in (keychain and file); True when there was one."""
    return TokenStore(env).delete(name)


def sign_in_state(env: Env, name: str) -> SignInState:
    """The sign-in state of ``name`` without touching the network."""
    store = TokenStore(env)
    record = store.get(name)
    if record is None:
        return SignInState("not signed in")
    where = store.where(name)
    if record.expired(skew=0):
        return SignInState("expired", where, record.expires_at, bool(record.refresh_token and record.token_endpoint))
    return SignInState("signed in", where, record.expires_at, bool(record.refresh_token))

