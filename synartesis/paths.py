"""Every location synartesis uses comes from here, resolved against an injectable environment.

Tests build an :class:`Env` pointing at a temporary HOME; production code uses
:func:`Env.current`. Nothing else in the package reads ``os.environ`` or ``Path.home()``
to find a location.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from synartesis.frozen import factory, record

__all__ = [
    "Env",
    "POLICY_FILENAME",
    "JOURNAL_FILENAME",
    "synartesis_home",
    "locate_policy",
    "locate_journal",
    "JournalURL",
    "is_journal_url",
    "JOURNAL_ENV",
    "journal_location",
    "backups_dir",
]

POLICY_FILENAME = "synartesis.yaml"
JOURNAL_FILENAME = "journal.db"
# A journal elsewhere than beside the policy: a file path or a ``postgresql://`` URL (issue 14).
JOURNAL_ENV = "SYNARTESIS_JOURNAL"
_URL_SCHEMES = ("postgresql://", "postgres://")


@record
class Env:
    """The environment paths are resolved against.

    Attributes:
        home: the user's home directory.
        environ: environment variables (a plain mapping; never mutated).
        platform: ``sys.platform`` value (``linux``, ``darwin``, ``win32``).
        cwd: the working directory used for walk-up searches.
    """

    home: Path
    environ: Mapping[str, str] = factory(dict)
    platform: str = sys.platform
    cwd: Path = factory(Path.cwd)

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


def is_journal_url(value: object) -> bool:
    """True when ``value`` names a PostgreSQL journal (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(value, str) and value.lower().startswith(_URL_SCHEMES)


class JournalURL(str):
    """A PostgreSQL journal's URL as it may be shown: its text never holds a password.

    The text is the URL with any literal password (``user:secret@`` or ``?password=``) left
    out; a ``${VAR}`` reference is kept (it names where the password is, not what it is).
    The URL as given is kept apart (:meth:`secret_url`) for connecting only. Passing this
    value anywhere (a subprocess, a message, a log) therefore never carries a literal password.
    """

    _given: str

    def __new__(cls, given: str) -> "JournalURL":
        if isinstance(given, JournalURL):
            return given
        self = super().__new__(cls, _without_password(given))
        self._given = given
        return self

    def secret_url(self) -> str:
        """The URL exactly as given (may hold a literal password: connect with it, never show it)."""
        return self._given

    def exists(self) -> bool:
        """Always True: whether the database holds a journal is known only by connecting."""
        return True

    @property
    def parent(self) -> Path:
        """Where synartesis keeps its own files for this journal (the compiled policy cache):
        ``$SYNARTESIS_HOME``, since a URL has no folder."""
        return synartesis_home(Env.current())


def _without_password(url: str) -> str:
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = len(rest)
    for ch in "/?#":
        at = rest.find(ch)
        if 0 <= at < cut:
            cut = at
    netloc, tail = rest[:cut], rest[cut:]
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if colon and not (password.startswith("${") and password.endswith("}")):
            netloc = f"{user}@{hosts}"
    path, q, query = tail.partition("?")
    if q:
        kept = [kv for kv in query.split("&") if kv.split("=", 1)[0].lower() != "password"
                or kv.split("=", 1)[-1].startswith("${")]
        tail = path + ("?" + "&".join(kept) if kept else "")
    return f"{head}://{netloc}{tail}"


def locate_journal(env: Env, policy_path: Path, given: str | os.PathLike[str] | None = None,
                   policy_journal: str | None = None) -> "Path | JournalURL":
    """Find the journal: ``given`` (``--journal``), else ``$SYNARTESIS_JOURNAL``, else the
    policy's ``journal:`` (``policy_journal``; a path in it is relative to the policy's folder),
    else ``journal.db`` beside the policy. Any may be a ``postgresql://`` URL (a
    :class:`JournalURL` is returned for it).

    Only beside the policy, never a walk-up: an unrelated ``journal.db`` in some ancestor
    directory must not be adopted (reference-spec §10 defect 27).
    """
    if not given:
        given = env.get(JOURNAL_ENV)
    if not given and policy_journal:
        if is_journal_url(policy_journal):
            return JournalURL(policy_journal)
        p = Path(policy_journal).expanduser()
        return p if p.is_absolute() else policy_path.parent / p
    if given:
        if isinstance(given, JournalURL) or is_journal_url(given):
            return JournalURL(given) if isinstance(given, JournalURL) else JournalURL(str(given))
        p = Path(given).expanduser()
        return p if p.is_absolute() else (env.cwd / p)
    return policy_path.parent / JOURNAL_FILENAME


def journal_location(value: "str | os.PathLike[str]") -> "Path | JournalURL":
    """A journal location as the journal takes it: a :class:`JournalURL` for a URL, else a path."""
    if isinstance(value, JournalURL):
        return value
    if is_journal_url(value):
        return JournalURL(str(value))
    return Path(value)
