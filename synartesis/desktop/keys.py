"""API keys: in the OS keychain through ``keyring`` (macOS Keychain, Windows Credential Locker,
Secret Service), or, where there is no keychain, in this process's memory only.

A key goes in once (the page posts it) and never comes back out to the page: callers get
:class:`KeyStatus` (saved or not, and where). It is handed only to the model adapter that sends
it to the provider's endpoint. Nothing here logs or writes a key anywhere else.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["KeyStore", "KeyStatus", "SERVICE"]

SERVICE = "synartesis-desktop"


@dataclass(frozen=True)
class KeyStatus:
    """What the page may know about a key: ``saved`` and ``storage`` (``keychain`` / ``memory``)."""

    saved: bool
    storage: str

    def as_json(self) -> dict:
        return {"saved": self.saved, "storage": self.storage}


def _keychain():
    """The keyring backend when it is a real keychain, else None (no backend, or keyring's
    "fail" / "null" stand-ins, or keyring not installed)."""
    try:
        import keyring
        from keyring.backends import fail
    except Exception:  # keyring missing or broken: memory only
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or type(backend).__module__.startswith("keyring.backends.null"):
        return None
    try:
        if backend.priority <= 0:  # type: ignore[attr-defined]
            return None
    except Exception:
        pass
    return backend


class KeyStore:
    """Keys by profile id (``openai``, ``anthropic``, a custom endpoint's id)."""

    def __init__(self, use_keychain: bool = True) -> None:
        self._memory: dict[str, str] = {}
        self._found: list = []
        # keyring's backend discovery imports every backend and probes D-Bus (hundreds of ms):
        # done on a thread, so the window starts meanwhile
        self._finder = threading.Thread(target=lambda: self._found.append(_keychain() if use_keychain else None),
                                        name="keychain", daemon=True)
        self._finder.start()

    @property
    def _backend(self):
        self._finder.join()
        return self._found[0] if self._found else None

    @property
    def storage(self) -> str:
        """``keychain`` when keys outlive this window, else ``memory``."""
        return "keychain" if self._backend is not None else "memory"

    @property
    def notice(self) -> str | None:
        """What the page must say when keys cannot be kept (None with a keychain)."""
        if self._backend is not None:
            return None
        return ("No OS keychain is available here, so API keys are kept in memory for this window only: "
                "they are forgotten when you close it, and never written to disk.")

    def save(self, profile: str, key: str) -> KeyStatus:
        """Store ``key`` for ``profile``; a keychain failure falls back to memory (and says so)."""
        key = key.strip()
        if not key:
            return self.forget(profile)
        if self._backend is not None:
            try:
                self._backend.set_password(SERVICE, profile, key)
                self._memory.pop(profile, None)
                return KeyStatus(True, "keychain")
            except Exception:
                pass  # a locked or refusing keychain: keep it for this window only
        self._memory[profile] = key
        return KeyStatus(True, "memory")

    def get(self, profile: str) -> str | None:
        """The key for ``profile`` (for the model adapter only), or None."""
        if profile in self._memory:
            return self._memory[profile]
        if self._backend is not None:
            try:
                return self._backend.get_password(SERVICE, profile)
            except Exception:
                return None
        return None

    def status(self, profile: str) -> KeyStatus:
        if profile in self._memory:
            return KeyStatus(True, "memory")
        return KeyStatus(self.get(profile) is not None, self.storage)

    def forget(self, profile: str) -> KeyStatus:
        """Remove the key for ``profile`` from memory and the keychain."""
        self._memory.pop(profile, None)
        if self._backend is not None:
            try:
                self._backend.delete_password(SERVICE, profile)
            except Exception:
                pass
        return KeyStatus(False, self.storage)
