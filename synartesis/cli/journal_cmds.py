"""`list`, `show`, `gates`, `approve`, `deny`, `close`, `watch`, `audit`, `history`: reading the journal."""

from __future__ import annotations

import shlex
import sys
import time
from typing import Optional

import typer
from rich.table import Table

from synartesis.cli.app import app
from synartesis.cli.common import (JournalOpt, JsonOpt, ManifestOpt, console, journal_for, journal_named, print_json,
                                   run_servers, run_status, shorten, shown, visible)
from synartesis.errors import NoJournalError, UsageError
from synartesis.journal.rows import ACTS_ON_NOTHING_SHOWN, acts_on_nothing
from synartesis.services.context import default_actor, given_actor, open_journal, where
from synartesis.services.runs import CLASS_BADGE, action_view, class_words, decide, pick_gated, run_summary


@app.command("list")
def list_cmd(runs: bool = typer.Option(False, "--runs", help="One line per run (no sessions)."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Agent sessions, newest first, each with its runs: status, started, action counts."""
    from synartesis.services.sessions import list_sessions
    with journal_for(manifest, journal) as j:
        flat = j.list_runs() if runs else []
        sessions = [] if runs else list_sessions(j)
        jpath = j.path
    if as_json:
        print_json([run_summary(r) for r in flat] if runs else [s.as_json() for s in sessions])
        return
    out = console()
    if not flat and not sessions:
        out.print(f"no runs recorded ({shown(journal_named(jpath, manifest, journal))})")
        return
    table = Table(box=None, pad_edge=False)
    for col in (("run", "session", "agent", "servers", "status", "started", "actions") if runs
                else ("session / run", "agent / servers", "status", "started", "actions")):
        table.add_column(col)
    if runs:
        for r in flat:
            table.add_row(r.id[:8], (r.session_id or "-")[:10], shown(r.label or "-", line=True), run_servers(r), run_status(r), r.started_at,
                          _counts(r.actions, r.unknown, r.counts.get("gated", 0)))
    for s in sessions:
        table.add_row(f"[bold]{s.session.id[:10]}[/]", shown(s.who, line=True), s.shown_status, s.session.started_at,
                      _counts(s.actions, s.count("unknown"), s.count("gated"), suffix=f" in {len(s.runs)} run{'s' if len(s.runs) != 1 else ''}"))
        for r in s.runs:
            table.add_row(f"  run {r.id[:8]}", run_servers(r), run_status(r), r.started_at,
                          _counts(r.actions, r.unknown, r.counts.get("gated", 0)))
    out.print(table)
    out.print(f"\n[dim]{shown(journal_named(jpath, manifest, journal))}[/]")


def _counts(n: int, unknown: int, held: int, suffix: str = "") -> str:
    extra = []
    if unknown:
        extra.append(f"{unknown} of unknown outcome")
    if held:
        extra.append(f"{held} awaiting approval")
    return f"{n}{suffix}" + (f" ({'; '.join(extra)})" if extra else "")


@app.command("show")
def show_cmd(target: Optional[str] = typer.Argument(None, help="Session (s-…) or run id or prefix (default: the newest session)."),
             live: bool = typer.Option(False, "--live", help="Read every resource it touched now and say which writes still match."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """A session's or run's actions in order: seq, server.tool, class, status and the resolved inverse."""
    if live:
        from synartesis.cli.undo_cmds import show_live
        raise typer.Exit(show_live(target, manifest, journal, as_json))
    from synartesis.services.sessions import show_target
    with journal_for(manifest, journal) as j:
        view = show_target(j, target)
    if as_json:
        print_json(view.as_json())
        return
    out = console()
    runs = view.runs
    session = view.target.kind == "session"
    if session and view.session is not None:
        sv = view.session
        out.print(f"[bold]session {sv.session.id}[/]  agent {shown(sv.who, line=True)}  {sv.shown_status}  "
                  f"started {sv.session.started_at}  {len(sv.runs)} run{'s' if len(sv.runs) != 1 else ''}")
        for r in sv.runs:
            out.print(f"  run {r.id[:8]}  {shown(', '.join(sorted(r.servers)) or '-')}  {run_status(r)}  started {r.started_at}"
                      + (f"  ended {r.ended_at}" if r.ended_at else "") + (f"  on {shown(r.host, line=True)}" if r.host else ""))
    else:
        r = view.target.runs[0]
        out.print(f"[bold]run {r.id}[/]  agent {shown(r.label or '-', line=True)}  {run_status(r)}  started {r.started_at}"
                  + (f"  ended {r.ended_at}" if r.ended_at else "") + f"  session {(r.session_id or '-')[:10]}"
                  + (f"  on {shown(r.host, line=True)}" if r.host else ""))
        if r.end_note or r.stale:
            out.print(f"  note: {shown(r.end_note or 'its proxy is gone; it is closed on the next write to the journal')}")
    if not view.actions:
        out.print("no actions recorded")
        return
    for a in view.actions:
        row = a.row
        where = f"{row.run_id[:8]}:{row.seq:<3}" if session else f"{row.seq:>4}"
        label = _shown_label(row, runs)
        out.print(f"{where} {CLASS_BADGE.get(row.cls, '?')} {label:<13} [bold]{shown(row.qualified, line=True)}[/]  "
                  f"[dim]{class_words(row, bool(a.inverse))}[/]")
        out.print(f"       args: {shown(shorten(a.args))}")
        if row.decided_by:
            verb = "denied" if row.status == "denied" else "approved"
            out.print(f"       {verb} by {shown(row.decided_by, line=True)} at {row.decided_at}"
                      + (f": {shown(row.decision_note)}" if row.status == "denied" and row.decision_note else ""))
        if row.used_by:
            out.print(f"       approval used by {shown(view.carriers.get(row.used_by, row.used_by[:8]))}")
        if row.status == "unrecoverable":  # the journal's word; --json keeps it (new user round 10, #4)
            out.print("       halted: an undo stopped at this call without confirming it was reverted, so what it "
                      "did may still be in effect (the note says why); `synartesis undo` reads it again and goes on if it "
                      "is now as the run left it")
        if row.note:
            # a drift note's expected/actual lines keep their indentation, under the note's text
            lines = row.note.split("\n")
            out.print(f"       note: {shown(shorten(lines[0], 200))}")
            for more in lines[1:]:
                out.print(f"             {shown(shorten(more, 200))}")
        if acts_on_nothing(row):
            out.print(f"       undo: {ACTS_ON_NOTHING_SHOWN}")
        elif a.inverse:
            for inv in a.inverse:
                out.print(f"       undo: {shown(inv['server'], line=True)}.{shown(inv['tool'], line=True)} {shown(shorten(inv['args'], 160))}")
    counts: dict[str, int] = {}
    for a in view.actions:
        key = _shown_label(a.row, runs)
        counts[key] = counts.get(key, 0) + 1
    with_undo = sum(1 for a in view.actions if a.inverse)
    out.print(f"\n{len(view.actions)} action{'s' if len(view.actions) != 1 else ''}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
              + f" | {with_undo} with a recorded undo")
    midway = sum(1 for a in view.actions if a.row.status == "rolling_back")
    if midway:  # adversarial review 11: after a killed undo nothing here said so
        ref = view.target.id if view.target.kind == "session" else view.target.id[:8]
        out.print(f"{midway} action{'s are' if midway != 1 else ' is'} rolling_back: an undo of {'them' if midway != 1 else 'it'} "
                  f"was interrupted, or is running now. `synartesis undo {shown(ref, line=True)}` finishes it: it reads "
                  "each such resource first and sends only what is still needed.")


def _shown_label(row, runs) -> str:
    """An action's status as ``show`` words it: a pending call of an ended run is ``unknown``,
    and ``unrecoverable`` (an undo halted on it; the word stays in ``--json``) is ``halted``."""
    if row.status == "pending" and not runs[row.run_id].live:
        return "unknown"
    return "halted" if row.status == "unrecoverable" else row.label


@app.command("gates")
def gates_cmd(no_read: bool = typer.Option(False, "--no-read", help="Do not start servers to show the current state."),
              manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Every call waiting for a person's approval, across all runs, with what it would change."""
    with journal_for(manifest, journal) as j:
        held = j.list_gated()
        views = [action_view(j, a) for a in held]
        previews = _previews(j, held, manifest, read=not no_read)
        jpath = j.path
    if as_json:
        print_json([dict(v.as_json(), preview=p.as_json()) for v, p in zip(views, previews)])
        return
    out = console()
    if not views:
        out.print(f"Nothing is waiting for a decision ({shown(journal_named(jpath, manifest, journal))}).")
        return
    from synartesis.proxy.payload import cli_command
    for v, p in zip(views, previews):
        a = v.row
        out.print(f"[bold]{a.id[:8]}[/]  {a.created_at}  [bold]{shown(a.qualified, line=True)}[/]")
        _print_preview(out, v, p)
    # the commands as the person would type them here: `--by` is left out (approve defaults to
    # the same user, as the demo runs it), and `--journal` is named only when this command was
    # pointed at one (new user round 10, #8: `--by demo` where the demo ran without it)
    tail = f" --journal {shlex.quote(str(jpath))}" if journal is not None or manifest is not None else ""
    who = f" (decided as {shown(default_actor(jpath), line=True)}; --by NAME to say otherwise)"
    out.print(f"\napprove one:  {cli_command()} approve {views[0].row.id[:8]}{tail}{who}")
    out.print(f"approve all:  {cli_command()} approve --all{tail}")
    out.print(f"deny one:     {cli_command()} deny {views[0].row.id[:8]} --reason \"…\"{tail}")


def _previews(j, held: list, manifest: Optional[str], read: bool = True) -> list:
    """What each held call would change (the current state from its pre-read, when ``read``)."""
    from synartesis.services.held import HeldPreview, preview_held, production_hits
    policy = _policy_or_none(manifest)
    if not read or not held:
        return [HeldPreview(a, j.get_json(a.args_ref), production=production_hits(policy, a.server, j.get_json(a.args_ref)))
                for a in held]
    from synartesis.services.launch_env import entry_env
    return preview_held(j, held, policy, entry_env=entry_env)


def _policy_or_none(manifest: Optional[str]):
    from synartesis.errors import PolicyError
    from synartesis.policy import load_policy
    path = where(manifest).policy
    if not path.exists():
        return None
    try:
        return load_policy(path)
    except PolicyError:
        return None  # gates still lists what is held; `check` says what is wrong with the policy


ARGS_SHOWN = 4000  # characters of a held call's arguments printed (a 3 MB write would flood the console)


def _print_preview(out, v, p) -> None:
    a = v.row
    args = visible(v.args)  # whole up to ARGS_SHOWN: a person decides on them; --json has all of it
    more = f"… {len(args) - ARGS_SHOWN} more characters (--json shows them all)" if len(args) > ARGS_SHOWN else ""
    out.print(f"          arguments: {shown(args[:ARGS_SHOWN] if more else args)}{more}")
    out.print(f"          {'irreversible' if a.cls == 'irreversible' else f'held ({a.cls} rule)'}: "
              f"{shown(a.note or 'held by policy')}")
    for hit in p.production:
        out.print(f"          [bold red]PRODUCTION[/]: {shown(hit.where)} {shown(shorten(hit.value, 80))} matches "
                  f"{shown(hit.pattern)} (production_patterns in the policy)")
    if p.current is not None and p.current.get("present"):
        if p.diffs:
            for arg, diff in p.diffs:
                out.print(f"          what it would change in {shown(arg)}:")
                # split on newlines only: a CR or a form feed in the agent's text is shown, not obeyed
                for line in diff.rstrip("\n").split("\n") if diff else ["(no difference)"]:
                    out.print("            " + shown(line))
        else:
            out.print(f"          now: {shown(shorten(p.current.get('value'), 400))}")
    elif p.note:
        out.print(f"          now: {shown(p.note)}")


def _decide(action: Optional[str], all_: bool, by: Optional[str], reason: Optional[str], approve: bool,
            manifest: Optional[str], journal: Optional[str], as_json: bool, read: bool = True) -> None:
    if action and all_:
        raise UsageError("give an action id or --all, not both")
    with journal_for(manifest, journal) as j:
        targets = pick_gated(j, action, all_)
        if all_ and not targets:
            if as_json:  # a script parses stdout: an empty list, not a sentence (adversarial review 31)
                print_json([])
            else:
                console().print(f"nothing is awaiting approval ({shown(journal_named(j.path, manifest, journal))})")
            return
        # what the approval lets through, shown with the decision (issue 10 item 10)
        previews = _previews(j, targets, manifest, read=read and approve) if approve else []
        views = [action_view(j, a) for a in targets]
        results = decide(j, targets, approve, given_actor(by) or default_actor(j.path), reason)
    if as_json:
        print_json([dict({"id": d.action.id, "ok": d.ok, "message": d.message},
                         **({"preview": previews[k].as_json()} if previews else {})) for k, d in enumerate(results)])
    else:
        out = console()
        for k, d in enumerate(results):
            if previews and d.ok:
                out.print(f"[bold]{d.action.id[:8]}[/]  [bold]{shown(d.action.qualified, line=True)}[/]")
                _print_preview(out, views[k], previews[k])
            out.print(shown(d.message))
    if not all(d.ok for d in results):
        raise typer.Exit(1)


@app.command("approve")
def approve_cmd(action: Optional[str] = typer.Argument(None, help="Held action id or prefix."),
                all_: bool = typer.Option(False, "--all", help="Approve every held call."),
                by: Optional[str] = typer.Option(None, "--by", help="Who approves (default: the OS user)."),
                no_read: bool = typer.Option(False, "--no-read", help="Do not start servers to show the current state."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                as_json: bool = JsonOpt) -> None:
    """Approve a held call once (showing what it will change); the agent's identical retry within an hour goes through."""
    _decide(action, all_, by, None, True, manifest, journal, as_json, read=not no_read)


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
    """Close a run whose proxy was killed; its calls still in flight become of unknown outcome.

    Runs whose proxy is gone (the pid is dead, or belongs to a process started later) are
    closed by any command that writes to the journal; this closes one by hand.
    """
    from synartesis.errors import ConflictError
    with journal_for(manifest, journal) as j:
        if run is None and not any(r.status == "active" for r in j.list_runs()):
            console().print("no run is active: nothing to close")  # nothing to do is exit 1, not a usage error
            raise typer.Exit(1)
        target = j.find_run(run, status=("active",)) if run is None else j.find_run(run)
        if target.live and not force:
            raise ConflictError(f"run {target.id[:8]} is still being written by its proxy (pid {target.pid}); "
                                "stop the agent first, or add --force if that process is not a proxy")
        if target.status != "active" or not j.close_run(target.id, "closed by hand (synartesis close)"):
            gone = " (its proxy was gone, so the journal closed it already)" if target.end_note or target.stale else ""
            console().print(f"run {target.id[:8]} is not active: nothing to close{gone}")
            raise typer.Exit(1)
        closed = j.find_run(target.id)
    unknown = closed.unknown
    console().print(f"closed {target.id}" + (f" ({unknown} of unknown outcome)" if unknown else ""))


@app.command("audit")
def audit_cmd(run: Optional[str] = typer.Argument(None, help="Run id or prefix (default: every run)."),
              manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Verify each run's hash chain and say where it breaks (exit 1 if anything was edited)."""
    with journal_for(manifest, journal) as j:
        runs = [j.find_run(run)] if run else j.list_runs()
        results = [j.audit(r.id) for r in runs]
        if not run:  # every run: what is left of a run whose row is gone counts too
            results += j.audit_orphans()
    if as_json:
        print_json([{"run": a.run_id, "ok": a.ok, "events": a.events, "problems": a.problems} for a in results])
    else:
        out = console()
        for a in results:
            out.print(f"{a.run_id[:8]}  {'intact' if a.ok else 'BROKEN'}  ({a.events} events)")
            for p in a.problems:
                out.print(f"    {shown(p)}")
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
    # the approve command names the journal this was pointed at, as `gates` does
    tail = f" --journal {shlex.quote(str(path))}" if journal is not None or manifest is not None else ""
    j = None
    while j is None:
        try:
            j = open_journal(manifest, journal)
        except NoJournalError:
            if not live:  # one frame of nothing is the error the other commands give (exit 2; round 31, 10a)
                raise
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
                    out.print(f"[bold]watching[/] {path}  {len(runs)} run{'' if len(runs) == 1 else 's'}, {live_runs} live · "
                              f"{len(held)} awaiting approval" if held else
                              f"[bold]watching[/] {path}  {len(runs)} runs, {live_runs} live · nothing waiting")
                    if not actions:
                        out.print("No agent has done anything through this journal yet.")
                for a in sorted(actions, key=lambda a: a.updated_at):  # a log: oldest change first
                    if seen_states.get(a.id) != a.status:
                        seen_states[a.id] = a.status
                        label = "halted" if a.status == "unrecoverable" else a.label  # as show says it
                        out.print(f"{a.updated_at[11:19]} {CLASS_BADGE.get(a.cls, '?')} {label:<13} "
                                  f"{shown(a.qualified, line=True)}" + (f"  [dim]{shown(shorten(a.note or '', 80))}[/]" if a.note else ""))
                for a in held:
                    if a.id not in seen:
                        seen.add(a.id)
                        out.print(f"[bold]held[/] {a.id[:8]} {shown(a.qualified, line=True)}: approve with "
                                  f"`synartesis approve {a.id[:8]}{tail}`")
                first = False
                if not live:
                    return
                time.sleep(interval)
        except KeyboardInterrupt:
            return


@app.command("history")
def history_cmd(target: Optional[str] = typer.Argument(None, help="Session (s-…) or run id or prefix (default: everything)."),
                by: Optional[str] = typer.Option(None, "--by", help="Only what this person (or `saga`) did."),
                manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
                as_json: bool = JsonOpt) -> None:
    """Every undo, redo, approval and denial: who, when, each step, and the original call."""
    from synartesis.services.history import history
    by = given_actor(by)  # "" is no filter, as it is the OS user for approve (round 31, 9f)
    with journal_for(manifest, journal) as j:
        entries = history(j, target, by=by)
        jpath = j.path
    if as_json:
        print_json([e.as_json() for e in entries])
        return
    out = console()
    if not entries:
        out.print("nothing was undone, redone, approved or denied" + (f" in {shown(target)}" if target else "")
                  + (f" by {shown(by, line=True)}" if by else "")
                  + f" ({shown(journal_named(jpath, manifest, journal))})")
        return
    for e in entries:
        if e.kind in ("approved", "denied"):
            call = e.call or {}
            out.print(f"{e.at}  [bold]{e.kind}[/] by {shown(e.by, line=True)}  {shown(e.target, line=True)} {shown(shorten(call.get('args'), 120), line=True)}"
                      f"  [dim](run {str(call.get('run'))[:8]} seq {call.get('seq')})[/]")
            if e.reason:
                out.print(f"    reason: {shown(e.reason, line=True)}")
            continue
        out.print(f"{e.at}  [bold]{e.kind}[/] of {shown(e.target, line=True)} by {shown(e.by, line=True)}  → {shown(e.status or '-', line=True)}"
                  + (f"  (ended {e.ended_at})" if e.ended_at else ""))
        for s in e.steps:
            call = s.get("call") or {}
            what = f"{call.get('server')}.{call.get('tool')} {shorten(call.get('args'), 100)}" if call else "(pruned)"
            where = f"{str(s.get('run') or '')[:8]}:{s.get('seq')}"
            out.print(f"    {where:<12} {s.get('kind') or '':<16} {shown(s.get('outcome') or s.get('reason') or '')}")
            out.print(f"                 [dim]{shown(what)}[/]")
