"""Every location synartesis uses comes from here, resolved against an injectable environment.

Tests build an :class:`Env` pointing at a temporary HOME; production code uses
:func:`Env.current`. Nothing else in the package reads ``os.environ`` or ``Path.home()``
to find a location.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

__all__ = [
    "Env",
    "POLICY_FILENAME",
    "JOURNAL_FILENAME",
    "synartesis_home",
    "locate_policy",
    "locate_journal",
    "backups_dir",
]

POLICY_FILENAME = "synartesis.yaml"
JOURNAL_FILENAME = "journal.db"


@dataclass(frozen=True)
class Env:
    """The environment paths are resolved against.

    Attributes:
        home: the user's home directory.
        environ: environment variables (a plain mapping; never mutated).
        platform: ``sys.platform`` value (``linux``, ``darwin``, ``win32``).
        cwd: the working directory used for walk-up searches.
    """

    home: Path
    environ: Mapping[str, str] = field(default_factory=dict)
    platform: str = sys.platform
    cwd: Path = field(default_factory=Path.cwd)

    @classmethod
    def current(cls) -> "Env":
        """The real process environment (HOME from ``$HOME``/``USERPROFILE`` first)."""
        environ = dict(os.environ)
        home = environ.get("HOME") or environ.get("USERPROFILE") or str(Path.home())
        return cls(home=Path(home), environ=environ, platform=sys.platform, cwd=Path.cwd())

    def get(self, name: str) -> str | None:
        """An environment variable, or None when unset or empty."""
        value = self.environ.get(name)
        return value if value else None


def synartesis_home(env: Env) -> Path:
    """``$SYNARTESIS_HOME``, else ``~/.synartesis`` (DESIGN §4)."""
    given = env.get("SYNARTESIS_HOME")
    return Path(given).expanduser() if given else env.home / ".synartesis"


def backups_dir(env: Env) -> Path:
    """Where install keeps the timestamped backups of client config files (0700)."""
    return synartesis_home(env) / "backups"


def locate_policy(env: Env, given: str | os.PathLike[str] | None = None) -> Path:
    """Find the policy file.

    Order (DESIGN §4): ``given`` (``--manifest``, relative to ``env.cwd``); else the first
    ``synartesis.yaml`` walking up from ``env.cwd``; else ``synartesis_home(env)/synartesis.yaml``.
    The returned path may not exist (callers decide whether that is an error).
    """
    if given:
        p = Path(given).expanduser()
        return p if p.is_absolute() else (env.cwd / p)
    here = env.cwd.resolve() if env.cwd.exists() else env.cwd
    for d in (here, *here.parents):
        candidate = d / POLICY_FILENAME
        if candidate.is_file():
            return candidate
    return synartesis_home(env) / POLICY_FILENAME


def locate_journal(env: Env, policy_path: Path, given: str | os.PathLike[str] | None = None) -> Path:
    """Find the journal: ``given`` (``--journal``), else ``journal.db`` beside the policy.

    Only beside the policy, never a walk-up: an unrelated ``journal.db`` in some ancestor
    directory must not be adopted (reference-spec §10 defect 27).
    """
    if given:
        p = Path(given).expanduser()
        return p if p.is_absolute() else (env.cwd / p)
    return policy_path.parent / JOURNAL_FILENAME
