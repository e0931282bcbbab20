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
