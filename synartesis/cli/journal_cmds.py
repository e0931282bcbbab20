"""`list`, `show`, `gates`, `approve`, `deny`, `close`, `watch`, `audit`: reading the journal."""

from __future__ import annotations

import sys
import time
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from synartesis.cli.app import app
from synartesis.cli.common import JournalOpt, JsonOpt, ManifestOpt, console, print_json, shorten, visible
from synartesis.errors import NoJournalError, UsageError
from synartesis.services.context import default_actor, open_journal, where
from synartesis.services.runs import CLASS_BADGE, action_view, decide, pick_gated, run_summary, show_run


@app.command("list")
def list_cmd(manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Runs, newest first: id, label, status, started, action count."""
    with open_journal(manifest, journal) as j:
        runs = j.list_runs()
    if as_json:
        print_json([run_summary(r) for r in runs])
        return
    out = console()
    if not runs:
        out.print("no runs recorded")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("run", "agent", "status", "started", "actions"):
        table.add_column(col, justify="right" if col == "actions" else "left")
    for r in runs:
        extra = []
        if r.counts.get("unknown"):
            extra.append(f"{r.counts['unknown']} of unknown outcome")
        if r.counts.get("gated"):
            extra.append(f"{r.counts['gated']} awaiting approval")
        table.add_row(r.id[:8], escape(r.label or "-"), r.status, r.started_at,
                      str(r.actions) + (f" ({'; '.join(extra)})" if extra else ""))
    out.print(table)


@app.command("show")
def show_cmd(run: Optional[str] = typer.Argument(None, help="Run id or prefix (default: the newest run)."),
             live: bool = typer.Option(False, "--live", help="Read every resource the run touched now and say which writes still match."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """A run's actions: seq, server.tool, class, status and the resolved inverse."""
    if live:
        from synartesis.cli.undo_cmds import show_live
        raise typer.Exit(show_live(run, manifest, journal, as_json))
    with open_journal(manifest, journal) as j:
        view = show_run(j, run)
    if as_json:
        print_json({"run": run_summary(view.run), "actions": [a.as_json() for a in view.actions]})
        return
    out = console()
    r = view.run
    out.print(f"[bold]run {r.id}[/]  agent {escape(r.label or '-')}  {r.status}  started {r.started_at}"
              + (f"  ended {r.ended_at}" if r.ended_at else ""))
    if not view.actions:
        out.print("no actions recorded")
        return
    for a in view.actions:
        row = a.row
        out.print(f"{row.seq:>4} {CLASS_BADGE.get(row.cls, '?')} {row.label:<13} [bold]{escape(row.qualified)}[/]  "
                  f"[dim]{row.cls}[/]")
        out.print(f"       args: {escape(shorten(a.args))}")
        if row.decided_by:
            verb = "denied" if row.status == "denied" else "approved"
            out.print(f"       {verb} by {escape(row.decided_by)} at {row.decided_at}"
                      + (f": {escape(row.decision_note)}" if row.status == "denied" and row.decision_note else ""))
        if row.used_by:
            out.print(f"       approval used by {escape(view.carriers.get(row.used_by, row.used_by[:8]))}")
        if row.note:
            out.print(f"       note: {escape(shorten(row.note, 200))}")
        if a.inverse:
            for inv in a.inverse:
                out.print(f"       undo: {escape(inv['server'])}.{escape(inv['tool'])} {escape(shorten(inv['args'], 160))}")
    counts: dict[str, int] = {}
    for a in view.actions:
        counts[a.row.label] = counts.get(a.row.label, 0) + 1
    with_undo = sum(1 for a in view.actions if a.inverse)
    out.print(f"\n{len(view.actions)} actions: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
              + f" | {with_undo} with a recorded undo")


@app.command("gates")
def gates_cmd(manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Every call waiting for a person's approval, across all runs."""
    with open_journal(manifest, journal) as j:
        views = [action_view(j, a) for a in j.list_gated()]
        jpath = j.path
    if as_json:
        print_json([v.as_json() for v in views])
        return
    out = console()
    if not views:
        out.print("Nothing is waiting for a decision.")
        return
    from synartesis.proxy.payload import cli_command
    for v in views:
        a = v.row
        out.print(f"[bold]{a.id[:8]}[/]  {a.created_at}  [bold]{escape(a.qualified)}[/]")
        out.print(f"          arguments: {escape(visible(v.args))}")  # whole: a person decides on them
        out.print(f"          {a.cls}: {escape(a.note or 'held by policy')}")
    by = default_actor()
    out.print(f"\napprove one:  {cli_command()} approve {views[0].row.id[:8]} --by {by} --journal {jpath}")
    out.print(f"approve all:  {cli_command()} approve --all --by {by} --journal {jpath}")
    out.print(f"deny one:     {cli_command()} deny {views[0].row.id[:8]} --reason \"…\" --journal {jpath}")


def _decide(action: Optional[str], all_: bool, by: Optional[str], reason: Optional[str], approve: bool,
            manifest: Optional[str], journal: Optional[str], as_json: bool) -> None:
    if action and all_:
        raise UsageError("give an action id or --all, not both")
    with open_journal(manifest, journal) as j:
        if all_ and not j.list_gated():
            console().print("nothing is awaiting approval")
            return
        targets = pick_gated(j, action, all_)
        results = decide(j, targets, approve, by or default_actor(), reason)
    if as_json:
        print_json([{"id": d.action.id, "ok": d.ok, "message": d.message} for d in results])
    else:
        out = console()
        for d in results:
            out.print(escape(d.message))
    if not all(d.ok for d in results):
        raise typer.Exit(1)


@app.command("approve")
def approve_cmd(action: Optional[str] = typer.Argument(None, help="Held action id or prefix."),
                all_: bool = typer.Option(False, "--all", help="Approve every held call."),
                by: Optional[str] = typer.Option(None, "--by", help="Who approves (default: the OS user)."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                as_json: bool = JsonOpt) -> None:
    """Approve a held call once; the agent's identical retry within an hour goes through."""
    _decide(action, all_, by, None, True, manifest, journal, as_json)


@app.command("deny")
def deny_cmd(action: Optional[str] = typer.Argument(None, help="Held action id or prefix."),
             all_: bool = typer.Option(False, "--all", help="Deny every held call."),
             by: Optional[str] = typer.Option(None, "--by", help="Who denies (default: the OS user)."),
             reason: Optional[str] = typer.Option(None, "--reason", help="Told to the agent when it retries."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Deny a held call; the agent's retry is told who denied it and why."""
    _decide(action, all_, by, reason or "denied by operator", False, manifest, journal, as_json)


@app.command("close")
def close_cmd(run: Optional[str] = typer.Argument(None, help="Run id or prefix (default: the newest active run)."),
              force: bool = typer.Option(False, "--force", help="Close it even if its proxy still seems to run."),
              manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt) -> None:
    """Close a run that a killed proxy left active."""
    from synartesis.errors import ConflictError
    from synartesis.journal.store import process_alive
    with open_journal(manifest, journal) as j:
        target = j.find_run(run, status=("active",)) if run is None else j.find_run(run)
        if target.status == "active" and target.pid and process_alive(target.pid) and not force:
            raise ConflictError(f"run {target.id[:8]} is still being written by its proxy (pid {target.pid}); "
                                "stop the agent first, or add --force if that process is not a proxy")
        if target.status != "active" or not j.close_run(target.id):
            console().print(f"{target.id} was not active.")
            raise typer.Exit(1)
    console().print(f"closed {target.id}")


@app.command("audit")
def audit_cmd(run: Optional[str] = typer.Argument(None, help="Run id or prefix (default: every run)."),
              manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Verify each run's hash chain and say where it breaks (exit 1 if anything was edited)."""
    with open_journal(manifest, journal) as j:
        runs = [j.find_run(run)] if run else j.list_runs()
        results = [j.audit(r.id) for r in runs]
    if as_json:
        print_json([{"run": a.run_id, "ok": a.ok, "events": a.events, "problems": a.problems} for a in results])
    else:
        out = console()
        for a in results:
            out.print(f"{a.run_id[:8]}  {'intact' if a.ok else 'BROKEN'}  ({a.events} events)")
            for p in a.problems:
                out.print(f"    {escape(p)}")
        if not results:
            out.print("no runs recorded")
    if not all(a.ok for a in results):
        raise typer.Exit(1)


@app.command("watch")
def watch_cmd(manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              interval: float = typer.Option(0.5, "--interval", help="Seconds between polls."),
              once: bool = typer.Option(False, "--once", help="Print one frame and exit.")) -> None:
    """A scrolling log of actions and held calls as agents work (piped: one frame)."""
    out = console()
    live = sys.stdout.isatty() and not once
    path = where(manifest, journal).journal
    j = None
    while j is None:
        try:
            j = open_journal(manifest, journal)
        except NoJournalError:
            if not live:
                out.print(f"no journal at {path} yet; it appears when the first proxy runs")
                return
            out.print(f"no journal at {path} yet; waiting…")
            time.sleep(max(interval, 1.0))
    with j:
        seen: set[str] = set()
        seen_states: dict[str, str] = {}
        first = True
        try:
            while True:
                runs = j.list_runs()
                actions = j.recent_actions(12 if first else 200)
                held = j.list_gated()
                if first:
                    live_runs = sum(1 for r in runs if r.status == "active")
                    out.print(f"[bold]watching[/] {path}  {len(runs)} runs, {live_runs} live · "
                              f"{len(held)} awaiting approval" if held else
                              f"[bold]watching[/] {path}  {len(runs)} runs, {live_runs} live · nothing waiting")
                    if not actions:
                        out.print("No agent has done anything through this journal yet.")
                for a in actions:
                    if seen_states.get(a.id) != a.status:
                        seen_states[a.id] = a.status
                        out.print(f"{a.updated_at[11:19]} {CLASS_BADGE.get(a.cls, '?')} {a.label:<13} "
                                  f"{escape(a.qualified)}" + (f"  [dim]{escape(shorten(a.note or '', 80))}[/]" if a.note else ""))
                for a in held:
                    if a.id not in seen:
                        seen.add(a.id)
                        out.print(f"[bold]held[/] {a.id[:8]} {escape(a.qualified)}: approve with "
                                  f"`synartesis approve {a.id[:8]}`")
                first = False
                if not live:
                    return
                time.sleep(interval)
        except KeyboardInterrupt:
            return
