"""Who may do what in a team journal (issue 14): the ``team`` table and the checks before a
decision or an undo.

The undo contract: one may undo what one's own agents did; an admin may undo anyone's; both
leave a trace. In PostgreSQL each run belongs to the database role that began it (``runs.owner``)
and row-level security lets a role change only rows of its own runs unless the ``team`` table
makes it an ``admin`` (the role that created the journal owns its tables and is one too), so a
member's own SQL cannot skip the rule. :meth:`TeamMixin._check_may` says the same earlier and in
words. On SQLite the OS user owns everything: nothing here applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from synartesis.errors import ConflictError, UsageError
from synartesis.journal.attempts import AttemptsMixin
from synartesis.journal.rows import now_iso

__all__ = ["TeamMixin", "TeamMember", "TEAM_ROLES"]

TEAM_ROLES = ("admin", "member")
_ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.@-]{0,62}")
# What a member's database role may do per table (row-level security narrows the first three).
_MEMBER_GRANTS = {
    "runs": "SELECT, INSERT, UPDATE, DELETE", "actions": "SELECT, INSERT, UPDATE, DELETE",
    "undos": "SELECT, INSERT, UPDATE, DELETE", "events": "SELECT, INSERT, DELETE",
    "blobs": "SELECT, INSERT", "packs": "SELECT, INSERT", "chunks": "SELECT, INSERT", "packs3": "SELECT, INSERT",
    "chunks3": "SELECT, INSERT", "shapes": "SELECT, INSERT", "sessions": "SELECT, INSERT, UPDATE, DELETE",
    "counters": "SELECT, UPDATE", "migrations": "SELECT", "team": "SELECT",
    "reads": "SELECT, INSERT, DELETE", "all_actions": "SELECT",  # reads never change once written (schema 6)
}
_ON_PG_ONLY = ("team roles live in a team journal on PostgreSQL; on a SQLite journal the OS user owns "
               "everything (move with `synartesis journal migrate --to postgresql://…`)")


@dataclass(frozen=True)
class TeamMember:
    """One row of the team: a database role and what it may do."""

    name: str
    role: str
    added_by: str
    added_at: str


def _ident(name: str) -> str:
    """A role name as a quoted SQL identifier (checked first: roles are plain names)."""
    if not _ROLE_NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a database role name (letters, digits, _ . @ -)")
    return '"' + name.replace('"', '""') + '"'


class TeamMixin(AttemptsMixin):
    def _team_journal(self) -> bool:
        return self.db.name == "postgresql"

    def whoami(self) -> tuple[str, str]:
        """(database role, ``admin`` | ``member`` | ``none``) of this connection; on SQLite
        (``""``, ``admin``): the OS user owns everything."""
        if not self._team_journal():
            return "", "admin"
        with self._guard("read the team"):
            row = self._one(
                "SELECT CAST(current_user AS TEXT), "
                "EXISTS (SELECT 1 FROM team WHERE name = CAST(current_user AS TEXT) AND role = 'admin') "
                "OR (SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'runs') "
                "= current_user OR COALESCE((SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = "
                "current_user), false), "
                "EXISTS (SELECT 1 FROM team WHERE name = CAST(current_user AS TEXT))")
        me, admin, listed = row
        return me, "admin" if admin else "member" if listed else "none"

    def _check_may(self, run_ids: Iterable[str], what: str) -> None:
        """Raise ConflictError (exit 1) when this connection's role may not ``what`` one of
        ``run_ids`` (a member and another user's run). SQLite: never."""
        if not self._team_journal():
            return
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return
        me, role = self.whoami()
        if role == "admin":
            return
        marks = ",".join("?" * len(ids))
        with self._guard("read run owners"):
            owners = self._all(f"SELECT id, owner FROM runs WHERE id IN ({marks})", tuple(ids))
        for rid, owner in owners:
            if owner != me:
                raise ConflictError(f"{me} is a {role if role != 'none' else 'user'} of the team journal at "
                                    f"{self.path}, and a member may {what} only runs of their own user: run "
                                    f"{rid[:8]} is {owner}'s. Ask an admin (synartesis team list).")

    def _may_collect(self) -> bool:
        """Payloads are shared across the team's runs: only an admin deletes unreferenced ones."""
        return not self._team_journal() or self.whoami()[1] == "admin"

    def run_owners(self, run_ids: Iterable[str]) -> dict[str, str]:
        """{run id: the database role that began it}; empty on SQLite."""
        ids = list(dict.fromkeys(run_ids))
        if not self._team_journal() or not ids:
            return {}
        with self._guard("read run owners"):
            return dict(self._all(f"SELECT id, owner FROM runs WHERE id IN ({','.join('?' * len(ids))})", tuple(ids)))

    # -- the team table ------------------------------------------------------------------
    def team(self) -> list[TeamMember]:
        """Every role of the team, admins first.

        Raises:
            UsageError: a SQLite journal (it has no team).
        """
        if not self._team_journal():
            raise UsageError(_ON_PG_ONLY)
        with self._guard("read the team"):
            rows = self._all("SELECT name, role, added_by, added_at FROM team ORDER BY role, name")
        return [TeamMember(*r) for r in rows]

    def set_team_role(self, name: str, role: str, by: str) -> None:
        """Make the database role ``name`` a ``member`` or an ``admin`` of this journal: the
        team row and the table privileges it needs (an admin's with grant option). Only an
        admin may (the database refuses anyone else).

        Raises:
            UsageError: a SQLite journal, an unknown role name or team role.
            JournalError: the database refused (not an admin), or the role does not exist.
        """
        if not self._team_journal():
            raise UsageError(_ON_PG_ONLY)
        if role not in TEAM_ROLES:
            raise UsageError(f"a team role is admin or member, not {role!r}")
        who = _ident(name)
        with self._guard(f"make {name} a team {role}"), self._tx():
            if not self._one("SELECT 1 FROM pg_roles WHERE rolname = ?", (name,)):
                raise UsageError(f"there is no database role {name!r}; create it first "
                                 f"(CREATE ROLE {who} LOGIN), then add it to the team")
            self._q("INSERT INTO team (name, role, added_by, added_at) VALUES (?,?,?,?) "
                    "ON CONFLICT (name) DO UPDATE SET role = excluded.role, added_by = excluded.added_by, "
                    "added_at = excluded.added_at", (name, role, by, now_iso()))
            schema = self._one("SELECT current_schema()")[0]
            self._q(f"GRANT USAGE ON SCHEMA {_ident(schema)} TO {who}")
            grant = " WITH GRANT OPTION" if role == "admin" else ""
            for table, privileges in _MEMBER_GRANTS.items():
                if role == "admin":
                    privileges = "SELECT, INSERT, UPDATE, DELETE"
                else:
                    self._q(f"REVOKE ALL ON {table} FROM {who}")
                self._q(f"GRANT {privileges} ON {table} TO {who}{grant}")

    def remove_team_member(self, name: str) -> bool:
        """Take ``name`` off the team and away from the journal's tables; False if not on it."""
        if not self._team_journal():
            raise UsageError(_ON_PG_ONLY)
        who = _ident(name)
        with self._guard(f"remove {name} from the team"), self._tx():
            gone = self._q("DELETE FROM team WHERE name = ?", (name,)).rowcount
            if self._one("SELECT 1 FROM pg_roles WHERE rolname = ?", (name,)):
                for table in _MEMBER_GRANTS:
                    self._q(f"REVOKE ALL ON {table} FROM {who}")
        return bool(gone)
