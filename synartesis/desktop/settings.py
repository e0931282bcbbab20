"""The window's model settings: which endpoint and model each profile uses, and which profile is
current. Kept in ``$SYNARTESIS_HOME/desktop.json`` (0600). No key is ever written here (keys
live in the keychain or in memory, :mod:`synartesis.desktop.keys`), and a base URL that carries
credentials is refused, so the file cannot become a place a secret leaks to.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from synartesis.desktop.models import PRESETS, Profile, preset
from synartesis.redact import redact_argv

__all__ = ["Settings", "SettingsError"]


class SettingsError(ValueError):
    """A setting the window refuses (the message says why)."""


def check_base_url(url: str) -> str:
    """``url`` trimmed, if it is a plain http(s) URL without credentials.

    Raises:
        SettingsError: another scheme, no host, or a user, password or key inside it.
    """
    url = url.strip()
    if not url:
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"the base URL must be http:// or https:// with a host, not {url[:80]!r}")
    if parts.username or parts.password or redact_argv([url])[1]:
        raise SettingsError("the base URL carries a credential; paste the key in the key field instead "
                            "(it is kept in the keychain or in memory, never in a file)")
    return url


class Settings:
    """Profiles (the presets, with the user's endpoint and model) and the current one."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.profiles: dict[str, Profile] = {p.id: p for p in PRESETS}
        self.current = "anthropic"
        self.problem: str | None = None
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            self.problem = f"{path} could not be read ({exc}); using the defaults and leaving the file as it is"
            self.path = None  # never overwrite a file we could not read
            return
        profiles = data.get("profiles") if isinstance(data, dict) else None
        for pid, value in (profiles or {}).items():
            base = preset(pid)
            if base is None or not isinstance(value, dict):
                continue
            try:
                url = check_base_url(str(value.get("baseUrl", base.base_url)))
            except SettingsError:
                continue
            self.profiles[pid] = replace(base, base_url=url, model=str(value.get("model", base.model))[:200])
        if isinstance(data, dict) and data.get("current") in self.profiles:
            self.current = data["current"]

    def update(self, pid: str, base_url: str | None = None, model: str | None = None, make_current: bool = True) -> Profile:
        """Change a profile's endpoint or model (and make it current); saved at once.

        Raises:
            SettingsError: unknown profile, a value that is not text, or a refused base URL.
        """
        for what, value in (("the base URL", base_url), ("the model", model)):
            if value is not None and not isinstance(value, str):
                raise SettingsError(f"{what} must be text")
        if pid not in self.profiles:
            raise SettingsError(f"unknown model profile {pid!r}")
        p = self.profiles[pid]
        if base_url is not None:
            p = replace(p, base_url=check_base_url(base_url))
        if model is not None:
            p = replace(p, model=model.strip()[:200])
        self.profiles[pid] = p
        if make_current:
            self.current = pid
        self.save()
        return p

    def save(self) -> None:
        if self.path is None:
            return
        from synartesis.fsops import atomic_write
        data = {"current": self.current,
                "profiles": {p.id: {"baseUrl": p.base_url, "model": p.model} for p in self.profiles.values()}}
        atomic_write(self.path, (json.dumps(data, indent=2) + "\n").encode())
