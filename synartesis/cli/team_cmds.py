"""`journal migrate` and `team`: moving to a team journal on PostgreSQL and who may do what there."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from synartesis.cli.app import app
from synartesis.cli.common import JournalOpt, JsonOpt, ManifestOpt, console, print_json

journal_app = typer.Typer(help="Manage the journal itself: move it to PostgreSQL (`journal migrate --to URL`).",
                          no_args_is_help=True)
app.add_typer(journal_app, name="journal")


@journal_app.command("migrate")
def migrate_cmd(to: str = typer.Option(..., "--to", help="The journal to copy into: postgresql://USER@HOST/DB "
                                       "(the password from PGPASSWORD, ~/.pgpass or a ${VAR} in the URL)."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                as_json: bool = JsonOpt) -> None:
    """Copy this journal (runs, actions, payloads, events) into another, then audit both sides
    (exit 1 if any run audits differently in the copy)."""
    from synartesis.services.context import where
    from synartesis.services.journal_migrate import migrate_journal

    source = where(manifest, journal).journal
    report = migrate_journal(str(source), to)
    if as_json:
        print_json({"source": report.source, "target": report.target, "rows": report.rows, "ok": report.ok,
                    "runs": [{"run": a.run_id, "source_ok": a.source_ok, "target_ok": a.target_ok,
                              "events": list(a.events), "problems": a.problems} for a in report.audits]})
    else:
        out = console()
        out.print(f"copied {escape(report.source)} → {escape(report.target)}: "
                  + ", ".join(f"{n} {t}" for t, n in report.rows.items()))
        for a in report.audits:
            side = lambda ok: "intact" if ok else "BROKEN"  # noqa: E731
            out.print(f"{a.run_id[:8]}  source {side(a.source_ok)}, copy {side(a.target_ok)}  "
                      f"({a.events[0]} events)" + ("" if a.same else "  DIFFERS"))
            for p in a.problems:
                out.print(f"    {escape(p)}")
        out.print("audit: the copy matches the source" if report.ok else "audit: the copy differs from the source")
        if report.ok:
            out.print(f"now point every proxy and command at it: SYNARTESIS_JOURNAL={escape(report.target)}")
    if not report.ok:
        raise typer.Exit(1)


team_app = typer.Typer(help="Who may do what in a team journal on PostgreSQL: a member approves, denies, undoes and "
                            "redoes only runs of their own user; an admin, anyone's.", no_args_is_help=True)
app.add_typer(team_app, name="team")


def _print_team(view) -> None:
    out = console()
    out.print(f"team of {escape(view.journal)} (you: {escape(view.me)}, {view.my_role})")
    for m in view.members:
        out.print(f"  {escape(m.name):<20} {m.role:<7} added by {escape(m.added_by)} at {m.added_at}")


def _team_json(view) -> dict:
    return {"journal": view.journal, "me": view.me, "my_role": view.my_role,
            "members": [{"name": m.name, "role": m.role, "added_by": m.added_by, "added_at": m.added_at}
                        for m in view.members]}


@team_app.command("list")
def team_list(manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Every role of the team, and which one you are."""
    from synartesis.cli.common import journal_for
    from synartesis.services.team import team_view
    with journal_for(manifest, journal) as j:
        view = team_view(j)
    print_json(_team_json(view)) if as_json else _print_team(view)


@team_app.command("add")
def team_add(name: str = typer.Argument(..., help="The database role (it must exist: CREATE ROLE name LOGIN)."),
             role: str = typer.Option("member", "--role", help="admin or member."),
             by: Optional[str] = typer.Option(None, "--by", help="Who is adding (default: user@host)."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Make a database role a member (or an admin) of the team, with the privileges it needs."""
    from synartesis.cli.common import journal_for
    from synartesis.services.context import default_actor, given_actor
    from synartesis.services.team import set_role
    with journal_for(manifest, journal) as j:
        view = set_role(j, name, role, given_actor(by) or default_actor(j.path))
    print_json(_team_json(view)) if as_json else _print_team(view)


@team_app.command("remove")
def team_remove(name: str = typer.Argument(..., help="The database role."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt) -> None:
    """Take a role off the team and away from the journal's tables."""
    from synartesis.cli.common import journal_for
    from synartesis.services.team import remove_member
    with journal_for(manifest, journal) as j:
        gone = remove_member(j, name)
    console().print(f"removed {escape(name)}" if gone else f"{escape(name)} was not on the team")
    if not gone:
        raise typer.Exit(1)
