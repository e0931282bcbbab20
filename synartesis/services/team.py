"""`team`: the roles of a team journal on PostgreSQL (``admin``, ``member``; issue 14). Thin: the
journal keeps the table and the database enforces it."""

from __future__ import annotations

from dataclasses import dataclass

from synartesis.journal import Journal
from synartesis.journal.team import TeamMember

__all__ = ["TeamView", "team_view", "set_role", "remove_member"]


@dataclass(frozen=True)
class TeamView:
    """Who is on the team, and who this connection is (its database role and team role)."""

    journal: str
    me: str
    my_role: str
    members: list[TeamMember]


def team_view(j: Journal) -> TeamView:
    """The team of ``j``.

    Raises:
        UsageError: a SQLite journal (it has no team).
    """
    members = j.team()
    me, role = j.whoami()
    return TeamView(str(j.path), me, role, members)


def set_role(j: Journal, name: str, role: str, by: str) -> TeamView:
    """Make the database role ``name`` a team ``admin`` or ``member``; returns the team after.

    Raises:
        UsageError: SQLite, a bad name or role, or no such database role.
        JournalError: the database refused (only an admin may change the team).
    """
    j.set_team_role(name, role, by)
    return team_view(j)


def remove_member(j: Journal, name: str) -> bool:
    """Take ``name`` off the team; False when it was not on it."""
    return j.remove_team_member(name)
