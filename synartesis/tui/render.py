"""What the console shows, as rich ``Text``: session, run, action, held-call and client rows,
undo, redo and live-check reports, what a held call would change, the detail of one action, and the one plain frame printed when stdout is not
a terminal (issue 6 §3). Nothing here reads the journal or touches textual; callers pass rows in.

Colour is decoration only: every state is also a word or a glyph, so ``NO_COLOR`` (textual's
monochrome filter) and the plain frame lose nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from rich.text import Text

from synartesis.journal import RunRow
from synartesis.journal.rows import ACTS_ON_NOTHING_SHOWN, acts_on_nothing
from synartesis.printable import printable
from synartesis.services.runs import CLASS_BADGE, ActionView, class_words
from synartesis.undo.words import nothing_result, nothing_why, unverified_lines, unverified_why

__all__ = ["short", "when", "run_counts", "status_width", "run_line", "run_pane", "session_line", "session_pane", "action_lines",
           "action_pane", "held_lines", "held_pane", "preview_text", "client_lines", "client_pane", "undo_report_text",
           "undo_notice", "live_report_text", "live_notice", "detail_text", "plain_frame",
           "header_text", "prior_word", "inverse_text", "held_reason"]

RUN_STYLE = {"active": "bold", "complete": "", "rolled_back": "green", "partial": "yellow", "compensated": "yellow",
             "redone": "cyan"}
ACTION_STYLE = {"gated": "bold yellow", "unknown": "bold red", "pending": "yellow", "failed": "dim",
                "denied": "dim", "approved": "cyan", "used": "dim", "applied": "", "rolling_back": "yellow",
                "rolled_back": "green", "unrecoverable": "bold red"}
STEP_STYLE = {"revert": "green", "already-reverted": "green", "redo": "green", "already-redone": "green",
              "skip": "dim", "permanent": "yellow", "kept": "dim", "left": "dim", "halt": "bold red",
              "overwrite": "bold yellow"}
LIVE_STYLE = {"matches": "green", "reverted": "green", "drifted": "bold red", "unreadable": "yellow",
              "superseded": "dim", "unchecked": "dim"}


def short(value: Any, limit: int = 96) -> str:
    """Compact JSON (or the text itself) cut to ``limit`` characters with an ellipsis."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = printable(" ".join(text.split()))  # no newlines inside a row; ESC, bidi… shown, not obeyed
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def pretty(value: Any) -> str:
    """Indented JSON for the detail view (text is shown as it is, control characters made
    visible: :func:`~synartesis.printable.printable`)."""
    if isinstance(value, str):
        return printable(value, keep="\n\t")
    try:
        return printable(json.dumps(value, ensure_ascii=False, indent=2, default=str), keep="\n")
    except (TypeError, ValueError):
        return printable(repr(value))


def when(iso: str | None) -> str:
    """``2025-01-02T10:11:12.345Z`` → ``01-02 10:11:12`` in local time ("-" when missing/bad)."""
    if not iso:
        return "-"
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return iso[:19]
    return t.strftime("%m-%d %H:%M:%S")


def who(run: RunRow) -> str:
    """The agent a run belongs to: its label (client name from ``initialize``) or client."""
    return printable(run.label or run.client or "an agent")


def run_counts(run: Any) -> str:
    """``4 actions · 1 held · 1 unknown`` (held = awaiting approval, unknown = outcome unknown,
    in flight = sent by a live proxy, no answer yet) for a run or a session."""
    runs = getattr(run, "runs", None)
    rows = list(runs) if runs is not None else [run]
    total = sum(r.actions for r in rows)
    parts = [f"{total} action{'s' if total != 1 else ''}"]
    held = sum(r.counts.get("gated", 0) for r in rows)
    unknown = sum(r.unknown for r in rows)
    flight = sum(r.counts.get("pending", 0) for r in rows if r.live)
    back = sum(r.counts.get("rolled_back", 0) for r in rows)
    bad = sum(r.counts.get("unrecoverable", 0) + r.counts.get("rolling_back", 0) for r in rows)
    if held:
        parts.append(f"{held} held")
    if unknown:
        parts.append(f"{unknown} unknown")
    if flight:
        parts.append(f"{flight} in flight")
    if back:
        parts.append(f"{back} undone")
    if bad:
        parts.append(f"{bad} halted")  # as show says it (an undo halted on them, or was cut off)
    return " · ".join(parts)


def _status(run: Any) -> str:
    """A run's or session's status as every view shows it (``compensated (unverified: N)``;
    a run whose proxy is gone reads as ended)."""
    return run.shown_status


def status_width(rows: Iterable[Any]) -> int:
    """The status column's width for these runs and sessions: the widest status they show
    (``compensated (unverified: 12)``), at least 11, so piped rows keep their columns."""
    return max([11, *(len(_status(r)) for r in rows)])


def session_line(session: Any, width: int = 11) -> Text:
    """One row of the runs view for an agent session: id, last activity, status (``width``
    wide: :func:`status_width`), agent, runs and counts."""
    t = Text()
    t.append(session.id[:10], "bold")
    t.append(f" {when(session.session.last_at or session.session.started_at)}  ")
    t.append(f"{_status(session):<{width}}", RUN_STYLE.get(session.status, ""))
    t.append(f" {short(session.who, 12):<12} ")
    n = len(session.runs)
    if n != 1:  # one run is shown right below it
        t.append(f"{n} runs · ")
    t.append(run_counts(session), "yellow" if session.count("gated") else "")
    return t


def session_pane(session: Any) -> list[Text]:
    """Two lines under the runs list about the selected session."""
    servers = ", ".join(sorted({name for r in session.runs for name in r.servers})) or "-"
    s = session.session
    how = {"client": f"the client process {s.client_pid}", "explicit": f"SYNARTESIS_SESSION={s.name}",
           "run": "one run (recorded before sessions)"}.get(s.kind, s.kind)
    return [Text(f"session {s.id} · servers {servers}"),
            Text(f"started {when(s.started_at)} · grouped by {how} · u undoes every run of it, newest action first")]


def run_line(run: RunRow, indent: bool = False, width: int = 11) -> Text:
    """One row of the runs view: id, start, status (``width`` wide: :func:`status_width`),
    agent, counts (indented under its session)."""
    t = Text()
    if indent:
        t.append("└ ")
    t.append(run.id[:8], "bold")
    t.append(f"  {when(run.started_at)}  " if not indent else f" {when(run.started_at)}  ")
    t.append(f"{_status(run):<{width}}", RUN_STYLE.get(run.status, ""))
    what = ", ".join(sorted(run.servers)) if indent else who(run)
    width = 12 if indent else 18
    t.append(f" {short(what or who(run), width):<{width}} ")
    t.append(run_counts(run), "yellow" if run.counts.get("gated") else "")
    return t


def run_pane(run: Any) -> list[Text]:
    """Two lines under the runs list about the selected run (or session)."""
    if hasattr(run, "session"):
        return session_pane(run)
    servers = ", ".join(sorted(run.servers)) or "-"
    first = Text(f"run {run.id} · servers {servers}")
    second = Text(f"started {when(run.started_at)}" + (f" · ended {when(run.ended_at)}" if run.ended_at else "")
                  + (f" · client {run.client}" if run.client and run.client != run.label else "")
                  + (" · its proxy is gone (closed on the next write)" if run.stale else "")
                  + (f" · {run.end_note}" if run.end_note else ""))
    return [first, second]


def prior_word(prior: str | None, cls: str) -> str:
    """Whether the state before the call was captured: ``captured``, ``absent`` (it did not exist)
    or ``none`` (no pre-read; readonly calls need none)."""
    if cls == "readonly":
        return "-"
    return {"captured": "captured", "absent": "absent"}.get(prior or "", "none")


def inverse_text(view: ActionView, limit: int = 160) -> str:
    """The resolved inverse as ``server.tool {args}`` (several joined by ``; ``), or why none."""
    if acts_on_nothing(view.row):
        return ACTS_ON_NOTHING_SHOWN
    if view.inverse:
        return "; ".join(f"{c.get('server')}.{c.get('tool')} {short(c.get('args'), limit)}" for c in view.inverse
                         if isinstance(c, dict))
    r = view.row
    if r.cls == "readonly":
        return "none needed (readonly)"
    if r.status in ("gated", "denied", "failed", "approved"):
        return "none (never applied)"
    return "none recorded (cannot be undone)"


def action_lines(view: ActionView, session: bool = False) -> list[Text]:
    """Two rows of a timeline: seq (``run:seq`` in a session's), class badge, status,
    server.tool, class, prior state; then the resolved inverse."""
    r = view.row
    top = Text()
    where = f"{r.run_id[:4]}:{r.seq:<3}" if session else f"{r.seq:>3}"  # in a session: its run, then seq
    width = 21 if session else 26
    top.append(f"{where} {CLASS_BADGE.get(r.cls, '?')} ")
    top.append(f"{r.label:<13}", ACTION_STYLE.get(r.label, ""))
    top.append(f" {short(r.qualified, width):<{width}}", "bold")
    top.append(f" {r.cls:<12} prior {prior_word(r.prior, r.cls)}")
    bottom = Text("      undo: ", "dim")
    bottom.append(inverse_text(view))
    return [top, bottom]


def action_pane(view: ActionView) -> list[Text]:
    """Lines under the timeline about the selected action (args, note, decision)."""
    r = view.row
    lines = [Text(f"args: {short(view.args, 300)}")]
    if r.decided_by:
        verb = "denied" if r.status == "denied" else "approved"
        lines.append(Text(f"{verb} by {printable(r.decided_by)} at {when(r.decided_at)}"
                          + (f": {short(r.decision_note, 300)}" if r.status == "denied" and r.decision_note else "")))
    if r.note:
        lines.append(Text(f"note: {short(r.note, 300)}"))
    return lines


def held_reason(view: ActionView) -> str:
    """Why a call is held: the proxy's note, else "held by policy"."""
    return view.row.note or "held by policy"


def held_lines(view: ActionView, production: list | None = None) -> list[Text]:
    """Two rows of the held-calls view: id, run, server.tool and arguments (``PRODUCTION`` first
    when they match the policy's ``production_patterns``); then the reason."""
    r = view.row
    top = Text()
    top.append(r.id[:8], "bold")
    if production:
        top.append(" PRODUCTION", "bold red")
    top.append(f" run {r.run_id[:8]}  ")
    top.append(printable(r.qualified), "bold yellow")
    top.append(f" {short(view.args, 200)}")
    bottom = Text("      why: ", "dim")
    bottom.append(short(held_reason(view), 300))
    return [top, bottom]


def held_pane(view: ActionView, production: list | None = None) -> list[Text]:
    r = view.row
    flag = "".join(f" · PRODUCTION: {h.where} matches {h.pattern}" for h in (production or [])[:1])
    return [Text(f"held {when(r.created_at)} · {class_words(r, bool(view.inverse))} · action {r.id}{flag}"),
            Text(f"args: {short(view.args, 300)} · f: what it would change")]


def preview_text(preview: Any) -> Text:
    """What a held call would change (a ``services.held.HeldPreview``): the current state
    beside the arguments, a unified diff where both are text, production matches."""
    t = Text()
    t.append("\n── what it would change\n", "bold")
    for h in preview.production:
        t.append("PRODUCTION: ", "bold red")
        t.append(f"{h.where} {short(h.value, 80)} matches {h.pattern} (production_patterns in the policy)\n")
    if preview.current is not None and preview.current.get("present") and preview.diffs:
        for arg, diff in preview.diffs:
            t.append(f"in {arg}:\n")
            for line in diff.rstrip("\n").split("\n"):  # newlines only: a CR in the text is shown
                line = printable(line, keep="\t")
                t.append(line + "\n", "green" if line.startswith("+") else "red" if line.startswith("-") else "")
    elif preview.current is not None and preview.current.get("present"):
        t.append("now: " + pretty(preview.current.get("value")) + "\n")
    else:
        t.append(f"now: {preview.note or 'unknown'}\n", "dim")
    return t


def client_lines(row: Any) -> list[Text]:
    """Two rows per server entry of ``synartesis status`` (a StatusRow): covered mark, client,
    scope, server, state; then policy source, provenance, TODO count, pins and drift count."""
    top = Text()
    top.append("✓ " if row.covered else "✗ ", "green" if row.covered else "bold red")
    scope = row.scope + (f" {row.project}" if row.project and row.scope in ("local", "project") else "")
    name = row.name + (f" → {row.policy_key}" if row.policy_key and row.policy_key != row.name else "")
    top.append(f"{short(row.client_name, 16):<16} ")
    top.append(f"{short(name, 24):<24}", "bold")
    top.append(f" {row.state:<13} [{short(scope, 30)}]")
    bottom = Text("      ")
    if row.policy:
        from synartesis.services.status import policy_summary
        bottom.append(policy_summary(row.policy))
    else:
        bottom.append(short(row.reason or "no policy", 120), "dim")
    if row.drift:
        bottom.append(f" · {len(row.drift)} drift", "bold red")
    return [top, bottom]


def client_pane(row: Any) -> list[Text]:
    lines = [Text(f"{row.file}")]
    if row.reason:
        lines.append(Text(row.reason))
    for d in row.drift:
        lines.append(Text(f"drift: {d}", "bold red"))
    return lines


def header_text(path: Path | str, runs: list[RunRow] | None, held: int, sessions: int | None = None) -> Text:
    """The top line: journal path and counts (``S sessions, N runs, L live · H awaiting approval``)."""
    t = Text()
    t.append("synartesis", "bold")
    if runs is None:
        t.append(f"  no journal yet · {path}")
        return t
    live = sum(1 for r in runs if r.live)
    if sessions is not None:
        t.append(f"  {sessions} session{'s' if sessions != 1 else ''},")
    t.append(f"  {len(runs)} run{'s' if len(runs) != 1 else ''}, {live} live · ")
    t.append(f"{held} awaiting approval" if held else "nothing waiting", "bold yellow" if held else "")
    t.append(f" · {path}", "dim")
    return t


# -- reports -----------------------------------------------------------------------------

def undo_report_text(report: Any) -> Text:
    """An UndoReport (undo or redo) as the CLI prints it (plan for a dry run, outcome otherwise)."""
    t = Text()
    kind = "REDO" if getattr(report, "kind", "undo") == "redo" else "UNDO"
    title = "DRY RUN (the real plan; nothing is sent or written)" if report.dry_run else kind
    name = getattr(report, "target_name", "") or f"run {report.run}"
    t.append(f"{title}  {name}\n", "bold")
    if getattr(report, "picked", None):
        t.append(f"picked: {report.picked}\n", "dim")
    for w in report.warnings:
        t.append("warning: ", "yellow")
        t.append(f"{w}\n")
    main = [s for s in report.steps if s.kind not in ("kept", "left")]
    kept = [s for s in report.steps if s.kind in ("kept", "left")]
    if report.status == "nothing":
        t.append(f"{nothing_why(report)}\n", "dim")
    elif not main:
        t.append("nothing in this run to undo\n", "dim")
    session = getattr(report, "target", "run") == "session"
    for s in main:
        where = f"{(s.run or '')[:8]}:{s.seq:<3}" if session else f"{s.seq:>3}"
        t.append(f"{where}  ")
        t.append(f"{s.kind:<16}", STEP_STYLE.get(s.kind, ""))
        why = unverified_why(report, s)
        tag = "" if why is None else f"  [unverified{': ' + why if why else ''}]"
        t.append(f" {s.tool}  {s.reason}{tag}\n")
        for call in s.calls or []:
            verb = "would call" if s.outcome == "would call" or s.kind == "overwrite" else "called"
            prefix = "replanned, " if s.replanned else ""
            t.append(f"       {prefix}{verb} {call.get('server')}.{call.get('tool')} {short(call.get('args'), 120)}\n")
        if s.kind in ("revert", "redo") and s.outcome and s.outcome != "would call":
            t.append(f"       → {s.outcome}\n")
        if s.kind == "overwrite" and s.expected is not None:
            t.append(f"       expected: {short(s.expected, 200)}\n")
            t.append(f"       actual:   {short(s.actual, 200)}\n")
    if kept:
        t.append("left alone\n", "dim")
        for s in kept:
            t.append(f"{s.seq:>3}  {s.kind:<16} {s.tool}  {s.reason}\n", "dim")
    if report.halted:
        h = report.halted
        t.append(f"\nhalted at sequence {h.seq}: ", "bold red")
        t.append(f"{h.reason}\n")
        for line in (h.detail or "").splitlines():
            t.append(f"  {line}\n")
        if not report.dry_run and getattr(h, "cause", None) == "launch":
            t.append("The server was not started, for the reason above: do what it says, then try again.\n")
        elif not report.dry_run:
            t.append("Nothing older than this was touched. See `synartesis undo --help` for --replan and --force.\n")
    if report.left_in_place:
        n = len(report.left_in_place)
        if report.dry_run:
            t.append(f"\n{n} action{'s' if n != 1 else ''} cannot be undone and would be left in place.\n")
        else:
            t.append(f"\n{n} action{'s' if n != 1 else ''} could not be undone and "
                     f"{'were' if n != 1 else 'was'} left in place.\n")
    if (report.status == "compensated" or getattr(report, "kind", "undo") == "redo") and not report.dry_run:
        for line in unverified_lines(report):  # what the CLI says of them, word for word (stop 19 left it out)
            t.append(f"\n{line}\n", "yellow")
    waiting = getattr(report, "waiting", None) or []
    if waiting:  # approved after the undo, the agent's retry would make the change after all
        n = len(waiting)
        t.append(f"\n{n} call{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} still waiting for approval; undo "
                 f"leaves {'them' if n != 1 else 'it'} held. To refuse: " + ", ".join(
                     f"synartesis deny {w['action'][:8]}" for w in waiting) + " (or d in the held view)\n", "yellow")
    t.append(f"\nRESULT  {undo_notice(report)}\n", "bold")
    return t


def undo_notice(report: Any) -> str:
    """One line: dry ``N would be reverted · nothing was changed[ · M checked only during the
    real undo][ · would end STATUS | · halted: R]``; real
    ``STATUS · N reverted[ · halted: R]`` (reference-spec §7.3); ``compensated (unverified: N)``
    says so."""
    redo = getattr(report, "kind", "undo") == "redo"
    n = sum(1 for s in report.steps if s.kind in ("revert", "redo"))
    halted = f" · halted at {report.halted.seq}: {report.halted.reason}" if report.halted else ""
    if report.status == "nothing":
        return nothing_result(report)  # the CLI's RESULT line
    if report.dry_run:
        later = len(getattr(report, "deferred_checks", []))
        checked = f" · {later} checked only during the real {'redo' if redo else 'undo'}" if later else ""
        status = getattr(report, "shown_status", report.status)
        end = "" if report.halted else f" · would end {status}"  # as the CLI's RESULT line says it
        return f"{n} would be {'redone' if redo else 'reverted'} · nothing was changed{checked}{end}{halted}"
    status = getattr(report, "shown_status", report.status)
    return f"{status} · {n} {'redone' if redo else 'reverted'}{halted}"


def live_report_text(report: Any) -> Text:
    """A LiveReport: per write, ``matches`` / ``drifted`` (with both values) / …"""
    t = Text()
    t.append(f"LIVE CHECK  {getattr(report, 'name', '') or 'run ' + report.run}  (reads only; nothing is written)\n", "bold")
    for w in report.warnings:
        t.append("warning: ", "yellow")
        t.append(f"{w}\n")
    if not report.items:
        t.append("this run wrote nothing\n", "dim")
    for item in report.items:
        t.append(f"{getattr(item, 'where', '') or item.seq:>3}  ")
        t.append(f"{item.state:<11}", LIVE_STYLE.get(item.state, ""))
        t.append(f" {item.tool}  {item.detail}\n")
        if item.state == "drifted":
            t.append(f"       expected: {short(item.expected, 300)}\n")
            t.append(f"       actual:   {short(item.actual, 300)}\n")
    t.append(f"\nRESULT  {live_notice(report)}\n", "bold")
    return t


def live_notice(report: Any) -> str:
    """``N writes: 2 matches, 1 drifted``."""
    counts: dict[str, int] = {}
    for item in report.items:
        counts[item.state] = counts.get(item.state, 0) + 1
    if not counts:
        return "this run wrote nothing"
    n = len(report.items)
    return f"{n} write{'s' if n != 1 else ''}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def detail_text(view: ActionView, run: RunRow | None = None) -> Text:
    """Everything recorded about one action (``f``): arguments, result, snapshot, post-state,
    verify read, inverse, notes and decision."""
    r = view.row
    t = Text()
    t.append(f"action {r.seq}  {printable(r.qualified)}\n", "bold")
    t.append(f"id {r.id} · run {r.run_id}{' (' + who(run) + ')' if run else ''}\n")
    t.append(f"class {r.cls} · status {r.label} · rule {printable(r.rule or '-')} · prior {prior_word(r.prior, r.cls)}\n")
    t.append(f"created {when(r.created_at)} · updated {when(r.updated_at)}\n")
    if r.decided_by:
        verb = "denied" if r.status == "denied" else "approved"
        # who decided, why, and the note (which quotes tool names and server text): shown, not
        # obeyed (adversarial review 31b: an escape in them reached the terminal)
        t.append(f"{verb} by {printable(r.decided_by)} at {when(r.decided_at)}"
                 + (f": {pretty(r.decision_note)}" if r.decision_note and r.status == "denied" else "") + "\n")
    if r.note:
        t.append(f"note: {pretty(r.note)}\n")
    sections: list[tuple[str, Any, bool]] = [
        ("arguments", view.args, True),
        ("result", view.result, r.result_ref is not None),
        ("snapshot (the state before the call)", view.snapshot, r.prior == "captured"),
        ("post-state (read after the call)", view.post, r.post_ref is not None),
        ("verify read", view.verify, r.verify_ref is not None),
        ("inverse (what undo sends)", view.inverse, view.inverse is not None),
    ]
    for title, value, present in sections:
        t.append(f"\n── {title}\n", "bold")
        if not present:
            if title.startswith("snapshot") and r.prior == "absent":
                t.append("(the resource did not exist before the call)\n", "dim")
            else:
                t.append("(none recorded)\n", "dim")
            continue
        t.append(pretty(value) + "\n")
    return t


# -- the piped frame ---------------------------------------------------------------------

def plain_frame(path: Path | str, runs: list[RunRow] | None, held: Iterable[ActionView],
                error: str | None = None, max_runs: int = 20, cli: str = "synartesis",
                sessions: list[Any] | None = None, production: dict | None = None) -> str:
    """One still frame (no escape codes): header, agent sessions newest first with their runs
    (``sessions``; else the runs alone), every held call with its reason and arguments.
    ``runs`` None = there is no journal yet (``error`` says why)."""
    held = list(held)
    production = production or {}
    out: list[str] = [header_text(path, runs, len(held), len(sessions) if sessions is not None else None).plain]
    if runs is None:
        out.append(error or f"no journal at {path} yet; it appears at the first tool call made through a wrapped server")
        return "\n".join(out) + "\n"
    out.append("")
    if sessions is not None:
        out.append("SESSIONS (newest first), each with its runs")
        width = status_width([*sessions, *(r for s in sessions for r in s.runs)])
        shown = 0
        for s in sessions:
            if shown >= max_runs:
                break
            out.append("  " + session_line(s, width).plain)
            for run in s.runs:
                out.append("  " + run_line(run, indent=True, width=width).plain)
            shown += 1 + len(s.runs)
        if not sessions:
            out.append("  No agent has done anything through this journal yet.")
        elif len(sessions) > max_runs:
            out.append("  … more (synartesis list)")
    else:
        out.append("RUNS (newest first)")
        if not runs:
            out.append("  No agent has done anything through this journal yet.")
        width = status_width(runs[:max_runs])
        for run in runs[:max_runs]:
            out.append("  " + run_line(run, width=width).plain)
        if len(runs) > max_runs:
            out.append(f"  … {len(runs) - max_runs} more (synartesis list)")
    out.append("")
    out.append("HELD CALLS (awaiting approval)")
    if not held:
        out.append("  Nothing is waiting for a decision.")
    for v in held:
        for line in held_lines(v, production.get(v.row.id)):
            out.append("  " + line.plain)
    if held:
        first = held[0].row.id[:8]
        out.append(f"  approve: {cli} approve {first} · deny: {cli} deny {first} --reason \"…\"")
    out.append("")
    out.append(f"Run `{cli}` in a terminal for the interactive console.")
    return "\n".join(out) + "\n"
