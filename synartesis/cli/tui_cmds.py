"""`synartesis` with no command: the full-screen console on a terminal, one plain frame otherwise.

Registered as the typer group's callback (``invoke_without_command``), so ``synartesis --help``
and every subcommand keep working; the callback does nothing when a subcommand follows.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from synartesis.cli.app import app
from synartesis.cli.common import JournalOpt, ManifestOpt
from synartesis.errors import NoJournalError, UsageError
from synartesis.services.context import default_actor, given_actor, open_journal, where

__all__ = ["console_callback", "plain_console", "wants_terminal"]


def wants_terminal() -> bool:
    """True when a full-screen console can run: stdin and stdout are terminals and TERM is
    not ``dumb``."""
    try:
        tty = sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


def plain_console(manifest: Optional[str], journal: Optional[str]) -> str:
    """The one frame printed when stdout is not a terminal: agent sessions with their runs
    (newest first) and every held call with its reason and arguments. Never creates a journal.

    Raises:
        PolicyError: ``--manifest`` names a file that does not exist (and no ``--journal``).
        JournalError: the journal exists but cannot be read.
    """
    from synartesis.proxy.payload import cli_command
    from synartesis.tui.data import quiet_policy, read_snapshot
    from synartesis.tui.render import plain_frame

    path = where(manifest, journal).journal
    try:
        j = open_journal(manifest, journal)
    except NoJournalError:
        return plain_frame(path, None, [], cli=cli_command())
    policy = quiet_policy(where(manifest, journal).policy)  # for the production flags of held calls
    with j:
        snap = read_snapshot(j, policy=policy)
    return plain_frame(path, snap.runs, snap.held, cli=cli_command(), sessions=snap.sessions,
                       production=snap.production)


def _print_version(value: bool) -> None:
    if value:
        from synartesis import __version__

        sys.stdout.write(f"synartesis {__version__}\n")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True,
              epilog="With no command, synartesis opens the console: runs, held calls, clients and undo on one screen "
                     "(piped: one plain frame of runs and held calls).")
def console_callback(ctx: typer.Context,
                     manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                     by: Optional[str] = typer.Option(None, "--by", help="Who approves, denies and undoes from the console (default: the OS user)."),
                     version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                                  help="Print the version and exit.")) -> None:
    """With no command: the console (runs, held calls, clients, undo) on a terminal, one plain frame when piped."""
    if ctx.invoked_subcommand is not None:
        given = [name for name, value in (("--manifest", manifest), ("--journal", journal), ("--by", by))
                 if value is not None]
        if given:
            raise UsageError(f"{given[0]} goes after the command: synartesis {ctx.invoked_subcommand} {given[0]} …")
        return
    _open_console(manifest, journal, by)


@app.command("console")
def console_cmd(manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                by: Optional[str] = typer.Option(None, "--by", help="Who approves, denies and undoes from the console (default: the OS user).")) -> None:
    """The console, as `synartesis` with no command opens it."""
    # by name too: `synartesis console` said "No such command" (new user round 11)
    _open_console(manifest, journal, by)


def _open_console(manifest: Optional[str], journal: Optional[str], by: Optional[str]) -> None:
    """Run the console on a terminal, or write one plain frame when stdout is not one.

    Raises:
        typer.Exit: always, with the console's return code (0 for the plain frame).
    """
    if not wants_terminal():
        sys.stdout.write(plain_console(manifest, journal))
        raise typer.Exit(0)
    from synartesis.tui.app import ConsoleApp

    loc = where(manifest, journal)
    console = ConsoleApp(loc.journal, loc.policy, given_actor(by) or default_actor(loc.journal))
    console.run()
    raise typer.Exit(console.return_code or 0)
