"""What the console shows, as rich ``Text``: run, action, held-call and client rows, undo and
live-check reports, the detail of one action, and the one plain frame printed when stdout is not
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
from synartesis.services.runs import CLASS_BADGE, ActionView

__all__ = ["short", "when", "run_counts", "run_line", "run_pane", "action_lines", "action_pane",
           "held_lines", "held_pane", "client_lines", "client_pane", "undo_report_text",
           "undo_notice", "live_report_text", "live_notice", "detail_text", "plain_frame",
           "header_text", "prior_word", "inverse_text", "held_reason"]

RUN_STYLE = {"active": "bold", "complete": "", "rolled_back": "green", "partial": "yellow"}
ACTION_STYLE = {"gated": "bold yellow", "unknown": "bold red", "pending": "yellow", "failed": "dim",
                "denied": "dim", "approved": "cyan", "used": "dim", "applied": "", "rolling_back": "yellow",
                "rolled_back": "green", "unrecoverable": "bold red"}
STEP_STYLE = {"revert": "green", "already-reverted": "green", "skip": "dim", "permanent": "yellow",
              "kept": "dim", "halt": "bold red", "overwrite": "bold yellow"}
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
    text = " ".join(text.split())  # no newlines inside a row
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def pretty(value: Any) -> str:
    """Indented JSON for the detail view (text is shown as it is)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return repr(value)


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
    return run.label or run.client or "an agent"


def run_counts(run: RunRow) -> str:
    """``4 actions · 1 held · 1 unknown`` (held = awaiting approval, unknown = outcome unknown)."""
    parts = [f"{run.actions} action{'s' if run.actions != 1 else ''}"]
    held = run.counts.get("gated", 0)
    unknown = run.counts.get("unknown", 0) + run.counts.get("pending", 0)
    back = run.counts.get("rolled_back", 0)
    bad = run.counts.get("unrecoverable", 0) + run.counts.get("rolling_back", 0)
    if held:
        parts.append(f"{held} held")
    if unknown:
        parts.append(f"{unknown} unknown")
    if back:
        parts.append(f"{back} undone")
    if bad:
        parts.append(f"{bad} stuck")
    return " · ".join(parts)


def run_line(run: RunRow) -> Text:
    """One row of the runs view: id, start, status, agent, counts."""
    t = Text()
    t.append(run.id[:8], "bold")
    t.append(f"  {when(run.started_at)}  ")
    t.append(f"{run.status:<11}", RUN_STYLE.get(run.status, ""))
    t.append(f" {short(who(run), 18):<18} ")
    t.append(run_counts(run), "yellow" if run.counts.get("gated") else "")
    return t


def run_pane(run: RunRow) -> list[Text]:
    """Two lines under the runs list about the selected run."""
    servers = ", ".join(sorted(run.servers)) or "-"
    first = Text(f"run {run.id} · servers {servers}")
    second = Text(f"started {when(run.started_at)}" + (f" · ended {when(run.ended_at)}" if run.ended_at else "")
                  + (f" · client {run.client}" if run.client and run.client != run.label else ""))
    return [first, second]


def prior_word(prior: str | None, cls: str) -> str:
    """Whether the state before the call was captured: ``captured``, ``absent`` (it did not exist)
    or ``none`` (no pre-read; readonly calls need none)."""
    if cls == "readonly":
        return "-"
    return {"captured": "captured", "absent": "absent"}.get(prior or "", "none")


def inverse_text(view: ActionView, limit: int = 160) -> str:
    """The resolved inverse as ``server.tool {args}`` (several joined by ``; ``), or why none."""
    if view.inverse:
        return "; ".join(f"{c.get('server')}.{c.get('tool')} {short(c.get('args'), limit)}" for c in view.inverse
                         if isinstance(c, dict))
    r = view.row
    if r.cls == "readonly":
        return "none needed (readonly)"
    if r.status in ("gated", "denied", "failed", "approved"):
        return "none (never applied)"
    return "none recorded (cannot be undone)"


def action_lines(view: ActionView) -> list[Text]:
    """Two rows of a run's timeline: seq, class badge, status, server.tool, class, prior state;
    then the resolved inverse."""
    r = view.row
    top = Text()
    top.append(f"{r.seq:>3} {CLASS_BADGE.get(r.cls, '?')} ")
    top.append(f"{r.label:<13}", ACTION_STYLE.get(r.label, ""))
    top.append(f" {short(r.qualified, 26):<26}", "bold")
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
        lines.append(Text(f"{verb} by {r.decided_by} at {when(r.decided_at)}"
                          + (f": {r.decision_note}" if r.status == "denied" and r.decision_note else "")))
    if r.note:
        lines.append(Text(f"note: {short(r.note, 300)}"))
    return lines


def held_reason(view: ActionView) -> str:
    """Why a call is held: the proxy's note, else "held by policy"."""
    return view.row.note or "held by policy"


def held_lines(view: ActionView) -> list[Text]:
    """Two rows of the held-calls view: id, run, server.tool and arguments; then the reason."""
    r = view.row
    top = Text()
    top.append(r.id[:8], "bold")
    top.append(f" run {r.run_id[:8]}  ")
    top.append(r.qualified, "bold yellow")
    top.append(f" {short(view.args, 200)}")
    bottom = Text("      why: ", "dim")
    bottom.append(short(held_reason(view), 300))
    return [top, bottom]


def held_pane(view: ActionView) -> list[Text]:
    r = view.row
    return [Text(f"held {when(r.created_at)} · {r.cls} · action {r.id}"),
            Text(f"args: {short(view.args, 300)}")]


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
        p = row.policy
        pol = p.get("source", "?") + (f" {p['policy_id']}" if p.get("policy_id") else "")
        if p.get("provenance"):
            pol += f", {p['provenance']}"
        bottom.append(f"policy {pol} · {p.get('todo', 0)} gated/TODO · {p.get('pins', 0)} pins")
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


def header_text(path: Path | str, runs: list[RunRow] | None, held: int) -> Text:
    """The top line: journal path and counts (``N runs, L live · H awaiting approval``)."""
    t = Text()
    t.append("synartesis", "bold")
    if runs is None:
        t.append(f"  no journal yet · {path}")
        return t
    live = sum(1 for r in runs if r.status == "active")
    t.append(f"  {len(runs)} run{'s' if len(runs) != 1 else ''}, {live} live · ")
    t.append(f"{held} awaiting approval" if held else "nothing waiting", "bold yellow" if held else "")
    t.append(f" · {path}", "dim")
    return t


# -- reports -----------------------------------------------------------------------------

def undo_report_text(report: Any) -> Text:
    """An UndoReport as the CLI's ``undo`` prints it (plan for a dry run, outcome otherwise)."""
    t = Text()
    title = "DRY RUN (the real plan; nothing is sent or written)" if report.dry_run else "UNDO"
    t.append(f"{title}  run {report.run}\n", "bold")
    for w in report.warnings:
        t.append("warning: ", "yellow")
        t.append(f"{w}\n")
    main = [s for s in report.steps if s.kind != "kept"]
    kept = [s for s in report.steps if s.kind == "kept"]
    if not main:
        t.append("nothing in this run to undo\n", "dim")
    for s in main:
        t.append(f"{s.seq:>3}  ")
        t.append(f"{s.kind:<16}", STEP_STYLE.get(s.kind, ""))
        tag = "  [unverified]" if s.kind == "revert" and not s.verified and s.outcome != "would call" else ""
        t.append(f" {s.tool}  {s.reason}{tag}\n")
        for call in s.calls or []:
            verb = "would call" if s.outcome == "would call" or s.kind == "overwrite" else "called"
            prefix = "replanned, " if s.replanned else ""
            t.append(f"       {prefix}{verb} {call.get('server')}.{call.get('tool')} {short(call.get('args'), 120)}\n")
        if s.kind == "revert" and s.outcome and s.outcome != "would call":
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
        if not report.dry_run:
            t.append("Nothing older than this was touched. See `synartesis undo --help` for --replan and --force.\n")
    if report.left_in_place:
        n = len(report.left_in_place)
        t.append(f"\n{n} action{'s' if n != 1 else ''} could not be undone and "
                 f"{'were' if n != 1 else 'was'} left in place.\n")
    t.append(f"\nRESULT  {undo_notice(report)}\n", "bold")
    return t


def undo_notice(report: Any) -> str:
    """One line: dry ``N would be reverted · nothing was changed[ · halted: R]``; real
    ``STATUS · N reverted[ · halted: R]`` (reference-spec §7.3)."""
    n = sum(1 for s in report.steps if s.kind == "revert")
    halted = f" · halted at {report.halted.seq}: {report.halted.reason}" if report.halted else ""
    if report.dry_run:
        return f"{n} would be reverted · nothing was changed{halted}"
    return f"{report.status} · {n} reverted{halted}"


def live_report_text(report: Any) -> Text:
    """A LiveReport: per write, ``matches`` / ``drifted`` (with both values) / …"""
    t = Text()
    t.append(f"LIVE CHECK  run {report.run}  (reads only; nothing is written)\n", "bold")
    for w in report.warnings:
        t.append("warning: ", "yellow")
        t.append(f"{w}\n")
    if not report.items:
        t.append("this run wrote nothing\n", "dim")
    for item in report.items:
        t.append(f"{item.seq:>3}  ")
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
    t.append(f"action {r.seq}  {r.qualified}\n", "bold")
    t.append(f"id {r.id} · run {r.run_id}{' (' + who(run) + ')' if run else ''}\n")
    t.append(f"class {r.cls} · status {r.label} · rule {r.rule or '-'} · prior {prior_word(r.prior, r.cls)}\n")
    t.append(f"created {when(r.created_at)} · updated {when(r.updated_at)}\n")
    if r.decided_by:
        verb = "denied" if r.status == "denied" else "approved"
        t.append(f"{verb} by {r.decided_by} at {when(r.decided_at)}"
                 + (f": {r.decision_note}" if r.decision_note and r.status == "denied" else "") + "\n")
    if r.note:
        t.append(f"note: {r.note}\n")
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
                error: str | None = None, max_runs: int = 20, cli: str = "synartesis") -> str:
    """One still frame (no escape codes): header, runs newest first, every held call with its
    reason and arguments. ``runs`` None = there is no journal yet (``error`` says why)."""
    held = list(held)
    out: list[str] = [header_text(path, runs, len(held)).plain]
    if runs is None:
        out.append(error or f"no journal at {path} yet; it appears when the first proxy runs")
        return "\n".join(out) + "\n"
    out.append("")
    out.append("RUNS (newest first)")
    if not runs:
        out.append("  No agent has done anything through this journal yet.")
    for run in runs[:max_runs]:
        out.append("  " + run_line(run).plain)
    if len(runs) > max_runs:
        out.append(f"  … {len(runs) - max_runs} more (synartesis list)")
    out.append("")
    out.append("HELD CALLS (awaiting approval)")
    if not held:
        out.append("  Nothing is waiting for a decision.")
    for v in held:
        for line in held_lines(v):
            out.append("  " + line.plain)
    if held:
        first = held[0].row.id[:8]
        out.append(f"  approve: {cli} approve {first} · deny: {cli} deny {first} --reason \"…\"")
    out.append("")
    out.append(f"Run `{cli}` in a terminal for the interactive console.")
    return "\n".join(out) + "\n"
