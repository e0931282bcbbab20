"""Finding the policy and journal a command works on (DESIGN §4), the same way the proxy does."""

from __future__ import annotations

import getpass
import os
import re
from dataclasses import dataclass
from pathlib import Path

from synartesis.journal import Journal
from synartesis.paths import JOURNAL_ENV, Env, is_journal_url, locate_journal, locate_policy, synartesis_home

__all__ = ["Where", "where", "open_journal", "default_actor", "given_actor", "installed_journal_elsewhere"]


@dataclass(frozen=True)
class Where:
    """The located policy path (may not exist) and journal path."""

    policy: Path
    journal: Path
    source: str = ""  #: where the journal's location came from, as a message says it ("--journal", …)


def where(manifest: str | None = None, journal: str | None = None, env: Env | None = None) -> Where:
    """Locate the policy and journal from ``--manifest``/``--journal``, the environment and the
    policy's ``journal:`` key (as the proxy does)."""
    env = env or Env.current()
    policy = locate_policy(env, manifest)
    named = None if journal or env.get(JOURNAL_ENV) else policy_journal(policy)
    if journal:
        source = "--journal"
    elif env.get(JOURNAL_ENV):
        source = f"${JOURNAL_ENV}"
    elif named:
        source = f"the journal: key of {policy}"
    elif manifest:
        source = f"the policy given with --manifest ({policy}): journal.db beside it"
    elif policy.parent == synartesis_home(env):
        # the variable is named only when it is set (new user round 9: it was named when unset)
        home = f"$SYNARTESIS_HOME ({policy.parent}" if env.get("SYNARTESIS_HOME") else f"{policy.parent} (the default home"
        source = f"{home}, where installed proxies write): journal.db there"
    else:
        source = f"the synartesis.yaml found from this folder up ({policy}): journal.db beside it"
    return Where(policy, locate_journal(env, policy, journal, named), source)


def installed_journal_elsewhere(manifest: str | None = None, journal: str | None = None,
                                env: Env | None = None) -> "Path | None":
    """The journal the installed proxies write to, when this command reads another one only
    because a ``synartesis.yaml`` was found from the working directory up (no ``--manifest``,
    ``--journal`` or ``$SYNARTESIS_JOURNAL`` chose it) and that journal exists; else None.

    The installed proxy reads ``$SYNARTESIS_HOME/synartesis.yaml`` whatever folder its client
    starts in, so from a project folder with its own policy the terminal commands read that
    project's journal while the agent's calls are in the home one (new user round 31, #4)."""
    env = env or Env.current()
    if manifest or journal or env.get(JOURNAL_ENV):
        return None
    home_policy = synartesis_home(env) / "synartesis.yaml"
    here = where(None, None, env)
    if here.policy == home_policy:
        return None
    installed = locate_journal(env, home_policy, None, policy_journal(home_policy))
    if is_journal_url(installed) or installed == here.journal or not installed.exists():
        return None
    return installed


def _quoted(path: object) -> str:
    import shlex
    return shlex.quote(str(path))


def policy_journal(policy: Path) -> str | None:
    """The policy's ``journal:`` value, or None (no such key, no policy, or one that does not
    load: the proxy refuses those, and the journal beside it is the one to look at)."""
    try:
        raw = policy.read_bytes()
    except OSError:
        return None
    if not re.search(rb"^journal\s*:", raw, re.M):  # spare the YAML parse for nearly every policy
        return None
    from synartesis.errors import PolicyError
    from synartesis.policy.cache import load_policy_cached
    try:
        return load_policy_cached(policy, policy.parent).journal
    except PolicyError:
        return None


def open_journal(manifest: str | None = None, journal: str | None = None, env: Env | None = None) -> Journal:
    """Open the existing journal (never creates one).

    Raises:
        PolicyError: ``--manifest`` names a file that does not exist (and no ``--journal``).
        NoJournalError: there is none yet.
        JournalError: it cannot be opened.
    """
    w = where(manifest, journal, env)
    if manifest and not journal and not w.policy.exists():
        from synartesis.errors import PolicyError
        raise PolicyError(f"there is no policy at {w.policy} (given with --manifest)")
    from synartesis.errors import NoJournalError
    try:
        return Journal.open(w.journal, create=False)
    except NoJournalError as exc:  # say the one source this command used, not every possible one
        other = installed_journal_elsewhere(manifest, journal, env)
        also = f" The installed proxies write to {other} (add --journal {_quoted(other)} to read that one)." if other else ""
        raise NoJournalError(f"{exc.message}. This command took that location from {w.source}.{also}") from None


def given_actor(by: str | None) -> str | None:
    """A ``--by`` value as the commands take it: an empty or blank one is none given (so
    ``approve --by ""`` records the OS user and ``history --by ""`` filters on nobody; new user
    round 31, 9f); any other, without surrounding blanks."""
    return by.strip() if by is not None and by.strip() else None


def default_actor(journal: object = None) -> str:
    """Who is deciding or undoing: the OS user (``--by`` overrides); ``user@host`` when
    ``journal`` is a team journal (a PostgreSQL URL, issue 14), where decisions come from many
    machines."""
    user = "unknown"
    for var in ("USER", "LOGNAME", "USERNAME"):
        if os.environ.get(var):
            user = os.environ[var]
            break
    else:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            pass
    if is_journal_url(journal):
        from synartesis.journal.liveness import host_name
        return f"{user}@{host_name()}"
    return user
