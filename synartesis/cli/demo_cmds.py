"""`synartesis demo`: run the whole loop against the bundled toy CRM and print each step."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from synartesis.cli.app import app
from synartesis.services.demo import CommandRun, DemoStep, run_demo

__all__ = ["demo", "demo_console"]


def _render_step(console: Console, step: DemoStep) -> None:
    console.rule(f"[bold]Step {step.number}[/bold]  {escape(step.title)}", align="left")
    for item in step.items:
        if isinstance(item, CommandRun):
            console.print(Text(f"$ {item.shown}", style="bold cyan"))
            for line in (item.output or "").splitlines():
                console.print(Text("  " + line, style="dim"), soft_wrap=True)
            console.print(Text(f"  (exit {item.exit_code})", style="dim"))
        else:
            console.print(Text(item))
    for check in step.checks:
        mark, style = ("✓", "green") if check.ok else ("✗", "bold red")
        text = Text(f"{mark} {check.what}", style=style)
        if not check.ok and check.detail:
            text.append(f"\n    saw: {check.detail}", style="red")
        console.print(text)
    console.print()


def demo_console(**kw: object) -> Console:
    """The demo's console: it never breaks a line itself (``soft_wrap``), so a command it shows,
    such as ``synartesis approve ID --journal PATH``, stays one copyable line when piped (where
    rich would wrap at 80 columns) and on a terminal (which folds long lines on its own)."""
    return Console(highlight=False, soft_wrap=True, **kw)  # type: ignore[arg-type]


@app.command()
def demo(
    keep: bool = typer.Option(False, "--keep",
                              help="Keep the demo folder (policy, journal, CRM store) and print where it is."),
) -> None:
    """Run the whole loop on a toy CRM through the real proxy, in a fresh temporary folder.

    The agent damages records → list/show → undo --dry-run → undo (the data is back) → a
    person edits a record and undo refuses, showing both values → an email is held until
    `approve` → the retry goes through. Exits 0 only if every step behaved as shown.
    """
    console = demo_console()
    workdir = Path(tempfile.mkdtemp(prefix="synartesis-demo-"))
    console.print(Text(f"Demo folder: {workdir}  (policy synartesis.yaml, journal journal.db, "
                       "CRM store crm-store.json)" + ("" if keep else "; deleted when the demo ends (--keep keeps it)")))
    console.print()
    try:
        result = run_demo(workdir, on_step=lambda step: _render_step(console, step))
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if result.error:
        console.print(Text(f"The demo stopped: {result.error}", style="bold red"))
    if result.ok:
        console.print(Text(f"All {len(result.steps)} steps behaved as shown.", style="bold green"))
    else:
        failed = next((s for s in result.steps if not s.ok), None)
        where = f" at step {failed.number} ({failed.title})" if failed else ""
        console.print(Text(f"The demo failed{where}.", style="bold red"))
        if not keep:
            console.print(Text("Run `synartesis demo --keep` to keep the folder (servers.log has "
                               "the servers' stderr)."))
    if keep:
        console.print(Text(f"Kept {workdir}: cd there and try `synartesis list`, `show`, `undo`."))
    elif result.ok:
        # the approve and gates lines above name it (new user round 31, #11)
        console.print(Text("The demo folder was deleted, so the commands above that name it no longer work; "
                           "`synartesis demo --keep` keeps it to try them."))
    raise typer.Exit(0 if result.ok else 1)
