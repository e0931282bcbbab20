"""Where OAuth sign-ins are kept: the OS keychain (``keyring``) when it has a backend, else one
0600 file per server under ``$SYNARTESIS_HOME/oauth/`` (folder 0700).

A record is one JSON object per server name (:class:`TokenRecord`): the server's URL and
resource, the authorization server's issuer and token endpoint, the client registration and
the tokens. It is never copied into a policy, ``installed.json``, a log, a diff or the journal.

``oauth/NAME.json`` always exists while a sign-in does: with the file store it *is* the record;
with the keychain it only says so (``{"store": "keyring"}``, no secret), so a proxy that finds
no file knows there is nothing to look up and never imports ``keyring`` (about 0.15 s).
Writes are atomic; a refresh runs under an advisory lock on ``oauth/NAME.lock`` so two
proxies of one server do not spend the same single-use refresh token.

``SYNARTESIS_TOKEN_STORE=file`` forces the file store (tests use it: a test must never write
into the real keychain); ``=keyring`` refuses to fall back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from synartesis import fsops
from synartesis.errors import SynartesisError
from synartesis.paths import Env, synartesis_home

__all__ = ["KEYRING_SERVICE", "TokenRecord", "TokenStore"]

KEYRING_SERVICE = "synartesis-oauth"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class TokenRecord:
    """One server's sign-in.

    Attributes:
        server: the server's name (as the client uses it).
        url: the MCP endpoint the sign-in is for; tokens are sent to no other origin.
        resource: the RFC 8707 resource the tokens were requested for.
        issuer, token_endpoint: the authorization server, and where refreshes go.
        client: the client registration (``client_id``, ``client_secret`` if any,
            ``token_endpoint_auth_method``).
        access_token, refresh_token, token_type, scope: the tokens.
        expires_at: epoch seconds when the access token expires (None: unknown).
        obtained_at: epoch seconds of the last sign-in or refresh.
    """

    server: str
    url: str
    resource: str | None = None
    issuer: str | None = None
    token_endpoint: str | None = None
    client: dict = field(default_factory=dict)
    access_token: str | None = None
    refresh_token: str | None = None
    token_type: str = "Bearer"
    scope: str | None = None
    expires_at: float | None = None
    obtained_at: float = field(default_factory=time.time)

    def expired(self, skew: float = 60.0, now: float | None = None) -> bool:
        """True when the access token is missing or expires within ``skew`` seconds."""
        if not self.access_token:
            return True
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at - skew

    def to_json(self) -> str:
        return json.dumps({"version": 1, **asdict(self)}, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TokenRecord:
        """Raises ValueError on anything that is not a record this module wrote."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("server"), str) \
                or not isinstance(data.get("url"), str):
            raise ValueError("not a synartesis sign-in record")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if not isinstance(known.get("client", {}), dict):
            raise ValueError("not a synartesis sign-in record")  # noqa: TRY004 - damaged data, not a caller's type
        return cls(**known)


class TokenStore:
    """Per-server sign-ins (see the module docstring).

    Args:
        env: where ``$SYNARTESIS_HOME`` is and whether the keychain may be used.
    """

    def __init__(self, env: Env) -> None:
        self.env = env
        self.dir = synartesis_home(env) / "oauth"
        self._mode = (env.get("SYNARTESIS_TOKEN_STORE") or "auto").lower()
        if self._mode not in ("auto", "file", "keyring"):
            raise SynartesisError(f"SYNARTESIS_TOKEN_STORE must be auto, file or keyring, not {self._mode!r}")

    # -- paths ---------------------------------------------------------------------------
    def path(self, server: str) -> Path:
        """``oauth/<name>.json``; names that are not plain get a hash suffix (no path tricks)."""
        safe = _SAFE.sub("_", server)[:64] or "_"
        if safe != server:
            safe += "-" + hashlib.sha256(server.encode("utf-8")).hexdigest()[:8]
        return self.dir / f"{safe}.json"

    # -- reading -------------------------------------------------------------------------
    def get(self, server: str) -> TokenRecord | None:
        """The sign-in for ``server``, or None.

        Raises:
            SynartesisError: the record exists but cannot be read (the message says where).
        """
        path = self.path(server)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SynartesisError(f"cannot read the sign-in for {server} ({path}): {exc.strerror}") from None
        try:
            pointer = json.loads(text)
        except ValueError:
            raise SynartesisError(f"the sign-in file {path} is damaged; run `synartesis logout {server}` "
                                  "and sign in again") from None
        if isinstance(pointer, dict) and pointer.get("store") == "keyring":
            text = self._keyring_get(server)
            if text is None:
                return None
        try:
            record = TokenRecord.from_json(text)
        except (ValueError, TypeError):
            raise SynartesisError(f"the sign-in for {server} is damaged; run `synartesis logout {server}` "
                                  "and sign in again") from None
        return record if record.server == server else None

    def where(self, server: str) -> str | None:
        """``"keychain (BACKEND)"``, the file's path, or None when there is no sign-in."""
        path = self.path(server)
        try:
            pointer = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if isinstance(pointer, dict) and pointer.get("store") == "keyring":
            return f"keychain ({pointer.get('backend', 'keyring')})"
        return str(path)

    # -- writing -------------------------------------------------------------------------
    def put(self, record: TokenRecord) -> str:
        """Store ``record`` (replacing any earlier one); returns where it went (see :meth:`where`).

        Raises:
            SynartesisError: neither the keychain nor the file could be written.
        """
        path = self.path(record.server)
        fsops.ensure_private_dir(self.dir)
        text = record.to_json()
        backend = self._keyring_put(record.server, text) if self._mode != "file" else None
        if backend is not None:
            self._write_private(path, json.dumps({"store": "keyring", "backend": backend, "server": record.server},
                                                 sort_keys=True).encode())
            return f"keychain ({backend})"
        if self._mode == "keyring":
            raise SynartesisError("SYNARTESIS_TOKEN_STORE=keyring, but no keychain could store the sign-in")
        self._write_private(path, text.encode("utf-8"))
        return str(path)

    def delete(self, server: str) -> bool:
        """Remove the sign-in from the keychain and the file; True when there was one."""
        path = self.path(server)
        had = path.exists()
        if self._mode != "file":
            try:
                pointer = json.loads(path.read_text(encoding="utf-8")) if had else {}
            except (OSError, ValueError):
                pointer = {}
            if pointer.get("store") == "keyring" or (not had and self._mode == "keyring"):
                had = self._keyring_delete(server) or had
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with contextlib.suppress(FileNotFoundError):
            path.with_suffix(".lock").unlink()
        return had

    def acquire(self, server: str) -> int:
        """Take the advisory lock for ``server``'s record (blocking; POSIX ``flock``); returns
        the handle for :meth:`release`. Used around a refresh."""
        fsops.ensure_private_dir(self.dir)
        fd = os.open(self.path(server).with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock, refreshes may race
            return fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    @staticmethod
    def release(fd: int) -> None:
        """Let go of a lock from :meth:`acquire`."""
        try:
            import fcntl
            fcntl.flock(fd, fcntl.LOCK_UN)
        except ImportError:  # pragma: no cover
            pass
        finally:
            os.close(fd)

    # -- the keychain --------------------------------------------------------------------
    def _keyring(self) -> Any | None:
        """The keyring module when a real backend is available, else None."""
        try:
            import keyring
            from keyring.backends import fail, null
        except ImportError:
            return None
        try:
            backend = keyring.get_keyring()
        except Exception:  # noqa: BLE001 - a broken keyring setup means "no keychain"
            return None
        if isinstance(backend, (fail.Keyring, null.Keyring)):
            return None
        try:
            if float(getattr(backend, "priority", 1)) <= 0:
                return None
        except Exception:  # noqa: BLE001 - some backends raise from priority when unusable
            return None
        return keyring

    def _keyring_put(self, server: str, text: str) -> str | None:
        kr = self._keyring()
        if kr is None:
            return None
        try:
            kr.set_password(KEYRING_SERVICE, server, text)
        except Exception:  # noqa: BLE001 - any keychain refusal (locked, too large): use the file
            return None
        backend = kr.get_keyring()
        return f"{type(backend).__module__}.{type(backend).__name__}"

    def _keyring_get(self, server: str) -> str | None:
        kr = self._keyring()
        if kr is None:
            raise SynartesisError(f"the sign-in for {server} is in the keychain, which is not available now")
        try:
            return kr.get_password(KEYRING_SERVICE, server)
        except Exception as exc:  # noqa: BLE001 - a locked keychain: say so
            raise SynartesisError(f"cannot read the sign-in for {server} from the keychain: {exc}") from None

    def _keyring_delete(self, server: str) -> bool:
        kr = self._keyring()
        if kr is None:
            return False
        try:
            kr.delete_password(KEYRING_SERVICE, server)
        except Exception:  # noqa: BLE001 - nothing there (PasswordDeleteError) or unavailable
            return False
        return True

    @staticmethod
    def _write_private(path: Path, data: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(path, 0o600)  # atomic_write keeps an existing file's mode: never a wider one
        fsops.atomic_write(path, data, 0o600)
        os.chmod(path, 0o600)
