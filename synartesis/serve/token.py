"""The bearer token ``serve`` requires: at least 32 random bytes, created on first use in
``$SYNARTESIS_HOME/serve-token`` (0600, folder 0700), compared in constant time."""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from pathlib import Path

from synartesis import fsops
from synartesis.errors import SynartesisError
from synartesis.paths import Env, synartesis_home

__all__ = ["TOKEN_BYTES", "load_or_create_token", "token_matches", "token_path"]

TOKEN_BYTES = 32


def token_path(env: Env) -> Path:
    """``$SYNARTESIS_HOME/serve-token``."""
    return synartesis_home(env) / "serve-token"


def load_or_create_token(env: Env) -> tuple[str, bool]:
    """The token, and whether it was created now.

    A file that holds less than 32 bytes' worth of token (43 URL-safe characters) is refused
    rather than used: someone wrote a weak one.
    Raises:
        SynartesisError: the file cannot be read, written, or holds a weak token.
    """
    path = token_path(env)
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        fsops.ensure_private_dir(path.parent)
        fsops.atomic_write(path, (token + "\n").encode("ascii"), 0o600)
        os.chmod(path, 0o600)
        return token, True
    except (OSError, UnicodeDecodeError) as exc:
        raise SynartesisError(f"cannot read the serve token {path}: {exc}") from None
    if len(text) < 43 or any(c.isspace() for c in text):
        raise SynartesisError(f"the serve token in {path} is too short (it needs at least 32 random bytes); "
                              "delete the file and a new one is made")
    with contextlib.suppress(OSError):
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
    return text, False


def token_matches(expected: str, authorization: str | None) -> bool:
    """True when ``authorization`` is ``Bearer <expected>``; constant time in the token."""
    if not authorization:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), expected.encode("ascii"))
