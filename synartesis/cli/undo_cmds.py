"""`undo`, `redo`, `show --live` and `prune`."""

from __future__ import annotations

import re
import sys
from typing import Optional

import typer
from rich.control import strip_control_codes
from rich.markup import escape

from synartesis.cli.app import StdoutClosed, app
from synartesis.cli.common import (run_line, JournalOpt, JsonOpt, ManifestOpt, console, journal_for, journal_named,
                                    print_json, printable, shorten, shown)
from synartesis.errors import PolicyError, UsageError
from synartesis.policy import Policy, load_policy
from synartesis.services.context import default_actor, given_actor, where
from synartesis.undo import UndoOptions, UndoReport, live_check, undo_run
from synartesis.undo.words import nothing_result, nothing_why, unverified_lines, unverified_why

_KIND_STYLE = {"revert": "green", "already-reverted": "green", "redo": "green", "already-redone": "green",
               "skip": "dim", "permanent": "yellow", "kept": "dim", "left": "dim", "halt": "bold red",
               "overwrite": "bold yellow"}


def _policy(manifest: Optional[str]) -> Policy | None:
    path = where(manifest).policy
    if not path.exists():
        return None
    return load_policy(path)  # a malformed policy is a configuration error (exit 2)


#: ``RUN:SEQ`` as ``show`` prints a session's actions: a run id (or prefix) and a seq
_RUN_SEQ = re.compile(r"([0-9a-fA-F][0-9a-fA-F-]*):(.*)", re.S)
_SESSION_SEQ = re.compile(r"[sS]-[0-9a-fA-F-]+:.*", re.S)  # a session id with a seq after it
_RUN_ONLY = "`synartesis undo RUN --only SEQ`"


def _seq(text: str, what: str, run: str | None) -> int:
    """The seq in ``text`` (a whole number), else a usage error (``what`` says where it was
    given) naming ``undo RUN --only SEQ``."""
    if text.isascii() and text.isdigit():
        return int(text)
    form = f"`synartesis undo {run} --only SEQ`" if run else _RUN_ONLY
    hint = " (an option right after --only is taken as its value)" if text.startswith("-") else ""
    raise UsageError(f"{what} takes a seq of the run (a whole number, or RUN:SEQ as `show` prints it), not "
                     f"{text!r}{hint}: {form}")


def _run_and_only(j, target: Optional[str], only: Optional[str], to: Optional[int]) -> tuple[Optional[str], Optional[int]]:
    """(target, --only seq) with ``RUN:SEQ`` (as ``show`` prints it) taken as ``RUN --only SEQ``,
    in the target or in ``--only`` (a new user's round 31, #9c: "'8f92f9fe:2' is not a run id",
    and `--only 8f92f9fe:2` "Input should be a valid integer"). A target that is a session's
    ``SYNARTESIS_SESSION`` name is left as it is.

    Raises:
        UsageError: a seq that is not a whole number, a seq given twice, ``RUN:SEQ`` with
            ``--to``, or ``--only RUN:SEQ`` naming another run than the target.
    """
    if target is not None and _SESSION_SEQ.fullmatch(target):
        try:
            j.find_session(target)  # a session named so
        except UsageError:
            session = target.rsplit(":", 1)[0]
            raise UsageError(f"{target}: a seq belongs to a run, not to a session; `synartesis show {session}` lists "
                             "the session's calls as RUN:SEQ, and `synartesis undo RUN:SEQ` (or `synartesis undo "
                             "RUN --only SEQ`) puts back one of them") from None
    m = _RUN_SEQ.fullmatch(target or "")
    if m is not None and target is not None and not target.lower().startswith("s-"):
        try:
            j.find_session(target)
            m = None  # a session named so
        except UsageError:
            pass
    if m is not None:
        run = m.group(1)
        if not (m.group(2).isascii() and m.group(2).isdigit()):
            raise UsageError(f"{target!r}: after the run id comes a seq (a whole number: RUN:SEQ, as `show` prints "
                             f"it), not {m.group(2)!r}: `synartesis undo {run} --only SEQ`")
        seq = int(m.group(2))
        if only is not None:
            raise UsageError(f"{target} names seq {seq} already; give the seq once: `synartesis undo {run} --only {seq}`")
        if to is not None:
            raise UsageError(f"{target} names one seq and --to a range of them; seq {seq} alone: "
                             f"`synartesis undo {run} --only {seq}`; {to} and up: `synartesis undo {run} --to {to}`")
        return run, seq
    if only is None:
        return target, None
    m = _RUN_SEQ.fullmatch(only)
    if m is None:
        return target, _seq(only, "--only", target if target and not target.lower().startswith("s-") else None)
    run = m.group(1)
    if not (m.group(2).isascii() and m.group(2).isdigit()):
        raise UsageError(f"--only {only!r}: after the run id comes a seq (a whole number: RUN:SEQ, as `show` prints "
                         f"it), not {m.group(2)!r}: `synartesis undo {run} --only SEQ`")
    seq = int(m.group(2))
    if target is not None and not (target.lower().startswith(run.lower()) or run.lower().startswith(target.lower())):
        raise UsageError(f"--only {only} names run {run}, and the target is {target}; name the run once: "
                         f"`synartesis undo {run} --only {seq}`")
    return (target if target is not None and len(target) > len(run) else run), seq


def _no_seq(j, target: Optional[str]) -> None:
    """``redo RUN:SEQ`` (after ``undo RUN:SEQ``): redo takes whole runs; a usage error naming
    ``redo RUN`` instead of "is not a run id" (adversarial review 31b). A session named so is
    left to the lookup."""
    m = _RUN_SEQ.fullmatch(target or "")
    if m is None or target is None or target.lower().startswith("s-"):
        return
    try:
        j.find_session(target)
        return
    except UsageError:
        pass
    run = m.group(1)
    raise UsageError(f"{target!r}: redo re-applies what the last undo of a run reverted, the whole run (it takes "
                     f"no seq): `synartesis redo {run}` (`--dry-run` first shows what it would re-apply)")


@app.command("undo")
def undo_cmd(target: Optional[str] = typer.Argument(None, help="Session (s-…) or run id or prefix (default: the newest session with something to undo); RUN:SEQ, as `show` prints it, is RUN --only SEQ."),
             to: Optional[int] = typer.Option(None, "--to", help="Undo a run down to this seq only (newer actions first).", metavar="SEQ"),
             only: Optional[str] = typer.Option(None, "--only", help="Undo this one seq of the run (SEQ, or RUN:SEQ as `show` prints it).", metavar="SEQ"),
             dry_run: bool = typer.Option(False, "--dry-run", help="Show the real plan (reads current state); send and write nothing."),
             replan: bool = typer.Option(False, "--replan", help="Rebuild inverses and reads from the current policy using the captured state."),
             force: bool = typer.Option(False, "--force", help="Undo a live run / list what would be overwritten despite drift; with --yes, do it."),
             yes: bool = typer.Option(False, "--yes", "-y", help="With --force: go ahead and overwrite. Alone it changes nothing: undo and redo never ask."),
             by: Optional[str] = typer.Option(None, "--by", help="Who is undoing (default: the OS user)."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Put back what an agent session (or one run) changed, newest first; stop at the first sign the world moved on."""
    if to is not None and only is not None:
        raise typer.BadParameter("--to and --only do not go together", param_hint="--only")
    opts = _options(target, manifest, dry_run=dry_run, replan=replan, force=force, yes=yes, by=by, journal=journal)
    with journal_for(manifest, journal) as j:
        opts.run, opts.only = _run_and_only(j, target, only, to)
        opts.to = to
        report = undo_run(j, opts)
        jpath = j.path
    if as_json:
        print_json(report.as_json())
    else:
        render_undo(report, journal_named(jpath, manifest, journal))
    raise typer.Exit(0 if report.ok else 1)


@app.command("redo")
def redo_cmd(target: Optional[str] = typer.Argument(None, help="Session (s-…) or run id or prefix (default: what the newest undo reverted)."),
             dry_run: bool = typer.Option(False, "--dry-run", help="Show the real plan (reads current state); send and write nothing."),
             force: bool = typer.Option(False, "--force", help="Redo a live run / list what would be overwritten despite drift; with --yes, do it."),
             yes: bool = typer.Option(False, "--yes", "-y", help="With --force: go ahead and overwrite. Alone it changes nothing: undo and redo never ask."),
             by: Optional[str] = typer.Option(None, "--by", help="Who is redoing (default: the OS user)."),
             manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
             as_json: bool = JsonOpt) -> None:
    """Re-apply what the last undo reverted, oldest first; irreversible calls are never re-sent."""
    from synartesis.undo import redo
    opts = _options(target, manifest, dry_run=dry_run, replan=False, force=force, yes=yes, by=by, journal=journal)
    with journal_for(manifest, journal) as j:
        _no_seq(j, target)
        report = redo(j, opts)
        jpath = j.path
    if as_json:
        print_json(report.as_json())
    else:
        render_undo(report, journal_named(jpath, manifest, journal))
    raise typer.Exit(0 if report.ok else 1)


def _options(target: Optional[str], manifest: Optional[str], **kw) -> UndoOptions:
    from synartesis.services.launch_env import entry_env
    policy = _policy(manifest)
    if kw.get("replan") and policy is None:
        raise PolicyError(f"--replan needs the current policy, and there is none at {where(manifest).policy}")
    journal = kw.pop("journal", None)
    by = given_actor(kw.pop("by")) or default_actor(where(manifest, journal).journal)
    return UndoOptions(run=target, by=by, policy=policy, entry_env=entry_env, **kw)


_TITLES = {"undo": "U N D O", "redo": "R E D O", "saga": "S A G A"}


def _where(report: UndoReport, s) -> str:
    """A step's place: its seq in a run, ``run:seq`` in a session."""
    if report.target == "session" and s.run:
        return f"{s.run[:8]}:{s.seq:<3}"
    return f"{s.seq:>3}"


class _Report:
    """Where a report's lines go: rich (styles) on a terminal; otherwise plain lines, the
    markup stripped and written at once (rich lays out every line, about 3 ms each in a
    200-step undo). Either way what the encoding cannot carry is escaped (a lone surrogate)."""

    def __init__(self) -> None:
        self.console = console() if sys.stdout.isatty() else None
        self.lines: list[str] = []

    def print(self, text: str = "") -> None:
        # the report's own line breaks stay; the data in it was escaped by shown()
        text = printable(text, keep="\n")
        if self.console is not None:
            self.console.print(text)
        else:
            self.lines.append(plain_markup(text))

    def close(self) -> None:
        if self.lines:
            sys.stdout.write("\n".join(self.lines) + "\n")
            sys.stdout.flush()
            self.lines = []


# rich's markup tag (rich.markup.RE_TAGS): an odd number of backslashes before it escapes it
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")


def plain_markup(markup: str) -> str:
    """``rich.markup.render(markup).plain`` without building styled text (a 200-step report
    is 1,000 lines): tags dropped; each piece of text as rich makes it (an escaped bracket
    unescaped, emoji codes replaced, the control codes rich drops dropped)."""
    if "[" not in markup:
        return strip_control_codes(_emoji(markup))
    out: list[str] = []
    position = 0
    for m in _TAG.finditer(markup):
        start, end = m.span()
        if start > position:
            out.append(_piece(markup[position:start]))
        backslashes, escaped = divmod(len(m.group(1)), 2)
        out.append("\\" * backslashes)
        if escaped:
            out.append(_piece(m.group(0)[len(m.group(1)):]))
        position = end
    out.append(_piece(markup[position:]))
    return strip_control_codes("".join(out))


def _piece(text: str) -> str:
    return _emoji(text.replace("\\[", "["))


def _emoji(text: str) -> str:
    if ":" not in text:
        return text
    try:
        from rich._emoji_replace import _emoji_replace  # what render() applies to each piece of text
    except ImportError:  # another rich: its own render of the piece
        from rich.markup import render
        return render(escape(text)).plain
    return _emoji_replace(text)


def render_undo(report: UndoReport, journal: str | None = None) -> None:
    """Print an undo or redo report (used by the CLI, the demo and the console); ``journal``:
    the line naming the journal it worked on (:func:`journal_named`), printed last."""
    out = _Report()
    try:
        _render_undo(out, report)
        if journal:
            out.print(f"  [dim]{shown(journal)}[/]")
    finally:
        try:
            out.close()
        except StdoutClosed:  # `undo | head -1`: the work is done; its exit code still says how it ended
            pass


def _render_undo(out: _Report, report: UndoReport) -> None:
    redo = report.kind == "redo"
    if report.picked:
        out.print(f"\n  picked {shown(report.target_name)}: {shown(report.picked)}")
    for line in report.skipped:
        out.print(f"  [dim]{shown(line)}[/]")
    if report.status == "nothing":
        out.print(f"\n  {shown(nothing_why(report))}")
        _waiting(out, report)
        out.print(f"\n  [bold]R E S U L T[/]  {nothing_result(report)}\n")
        return
    title = "F O R C E   P R E V I E W" if report.preview_force else ("D R Y   R U N" if report.dry_run else _TITLES.get(report.kind, "U N D O"))
    out.print(f"\n  [bold]{title}[/]  {shown(report.target_name or report.run)}")
    for w in report.warnings:
        out.print(f"  [yellow]warning:[/] {shown(w)}")
    main = [s for s in report.steps if s.kind not in ("kept", "left")]
    aside = [s for s in report.steps if s.kind in ("kept", "left")]
    for s in main:
        style = _KIND_STYLE.get(s.kind, "")
        why = unverified_why(report, s)
        tag = "" if why is None else f"  \\[unverified{': ' + why if why else ''}]"
        out.print(f"  {_where(report, s)}  [{style}]{s.kind:<16}[/] {shown(s.tool, line=True)}  {shown(s.reason)}{tag}")
        for call in s.calls or []:
            verb = "would call" if s.outcome == "would call" or s.kind == "overwrite" else "called"
            prefix = "replanned, " if s.replanned else ""
            out.print(f"         {prefix}{verb} {shown(call['server'], line=True)}.{shown(call['tool'], line=True)} {shown(shorten(call['args'], 120))}")
        if s.kind in ("revert", "redo") and s.outcome and s.outcome != "would call":
            out.print(f"         → {shown(s.outcome)}")
            if not s.verified and s.after is not None:
                seen = "absent" if not s.after.get("present") else shorten(s.after.get("value"), 120)
                out.print(f"           read back now: {shown(seen)}")
        if s.kind == "redo" and s.detail:
            out.print(f"         [yellow]{shown(s.detail)}[/]")
        if s.kind == "overwrite" and s.detail:
            for line in s.detail.splitlines()[1:]:
                out.print(f"         {shown(line.strip())}")
    if aside:
        out.print("\n  left alone")
        for s in aside:
            out.print(f"  {_where(report, s)}  [dim]{s.kind:<16}[/] {shown(s.tool, line=True)}  {shown(s.reason)}")
            if s.kind == "left" and s.detail:  # what an undo's overwrite removed of it, and whether redo restored it
                for line in s.detail.splitlines():
                    out.print(f"         [yellow]{shown(line.strip())}[/]")
    if report.halted:
        h = report.halted
        out.print(f"\n  [bold red]halted at sequence {h.seq}[/]" + (f" of run {h.run[:8]}" if report.target == "session" and h.run else "")
                  + f"  {shown(h.reason)}")
        for line in (h.detail or "").splitlines():
            out.print(f"  {shown(line)}")
        if report.dry_run and not report.preview_force and h.reason == "drift detected":
            tid = report.run if report.target == "session" else report.run[:8]
            verb = "redo" if redo else "undo"
            out.print(f"\n  The real {verb} would stop here too. Before running it: put the resource back the way "
                      f"{'the undo' if redo else 'the run'} left it, or run `synartesis {verb} {shown(tid)} --force` to see "
                      "what would be overwritten.")
        if not report.dry_run:
            # the target by id: a bare `undo` picks the newest session, which may be another one
            # (a new user followed `undo --force` and got a plan for a newer session)
            tid = report.run if report.target == "session" else report.run[:8]
            if h.cause == "launch":
                # a launch refusal names its own way on (set the variable, fix the entry); the
                # drift menu would send the user to --force (adversarial review 8, round 7)
                again = f"`synartesis {'redo' if redo else 'undo'} {shown(tid)}` again"
                out.print(f"\n  Nothing {'after this was re-sent' if redo else 'older than this was touched'}: the server "
                          f"was not started, for the reason above. Do what it says, then run {again}.")
            elif h.reason.startswith("outcome unknown"):
                # no "way the run left it" is known here: offer what can be done (adversarial review 10)
                _unknown_ways(out, report, h, shown(tid), redo)
            elif h.reason not in _DRIFT_HALTS:
                # the lines above say what stopped it and the way on (a server still running,
                # another session's write, a read that failed): the drift menu fits none of
                # them (a new user's round 17, #3: "put the resource back" after a live server)
                verb = "redo" if redo else "undo"
                out.print(f"\n  Nothing {'after this was re-sent' if redo else 'older than this was touched'}"
                          + ("" if not report.sent else " (a call was sent; see above)")
                          + f". Once what stopped it (above) is dealt with, run `synartesis {verb} {shown(tid)}` again.")
            elif redo:
                out.print("\n  Nothing after this was re-sent. Three ways on:")
                out.print("    1. leave it as it is" + (" (what was redone stays redone);" if report.changed else " (nothing was sent);"))
                out.print(f"    2. put the resource back the way the undo left it, then run `synartesis redo {shown(tid)}` again;")
                out.print(f"    3. `synartesis redo {shown(tid)} --force` to see what would be overwritten, then `--force --yes` "
                          "to send it anyway.")
            else:
                out.print("\n  Nothing older than this was touched. Three ways on:")
                out.print("    1. leave it as it is" + (" (the newer actions stay undone);" if report.changed
                                                         else " (nothing was sent);" if not report.sent
                                                         else " (an inverse was sent; see above);"))
                if "changed after it by another" in (h.detail or ""):
                    # putting it back leaves that run's write in effect, and the undo halts on it
                    # again (a new user's round 19, #3): its run is what to undo first
                    out.print(f"    2. undo the other run named above first, then run `synartesis undo {shown(tid)}` again;")
                else:
                    # the next undo reads it again (a halt does not stick: new user round 31, #1)
                    out.print(f"    2. put the resource back the way the run left it, then run `synartesis undo {shown(tid)}` again;")
                out.print(f"    3. `synartesis undo {shown(tid)} --force` to see what would be overwritten, then `--force --yes` "
                          "to overwrite it.")
    if report.left_in_place:
        n = len(report.left_in_place)
        left = "would be" if report.dry_run else "were" if n != 1 else "was"
        out.print(f"\n  {n} action{'s' if n != 1 else ''} cannot be undone and {left} left in place." if report.dry_run
                  else f"\n  {n} action{'s' if n != 1 else ''} could not be undone and {left} left in place.")
    if (report.status == "compensated" or redo) and not report.dry_run:
        for line in unverified_lines(report):
            out.print(f"\n  {shown(line)}")
    _waiting(out, report)
    if report.preview_force:
        if report.halted:
            # --force steps over drift, not over this halt (a new user's round 7: "nothing has drifted")
            at = _where(report, report.halted).strip()
            over = (f" after overwriting {len(report.overwrites)} drifted resource(s) shown above"
                    if report.overwrites else "")
            out.print(f"\n  --force --yes would halt at sequence {at} too{over}: {shown(report.halted.reason)} "
                      "(--force sends past drift, not past this). Nothing was sent.")
        elif report.overwrites:
            out.print(f"\n  --force --yes would overwrite {len(report.overwrites)} drifted resource(s) shown above. Nothing was sent.")
        elif report.deferred_checks:
            out.print("\n  nothing this preview could check has drifted; --force --yes would also overwrite whatever the "
                      "steps checked only during the real " + report.kind + " hold. Nothing was sent.")
        elif report.left_in_place and report.kind != "redo":
            # it exits 1: say why (adversarial review 20, F14: "nothing has drifted", exit 1)
            n = len(report.left_in_place)
            out.print(f"\n  nothing has drifted; --force --yes would leave {n} action{'s' if n != 1 else ''} in place "
                      "(shown above: it cannot undo them) and do the rest of the plan. Nothing was sent.")
        else:
            out.print("\n  nothing has drifted; --force --yes would do what the plan above shows. Nothing was sent.")
    elif report.dry_run:
        n = sum(1 for s in report.steps if s.kind in ("revert", "redo"))
        later = len(report.deferred_checks)
        checked = f" ({later} of them if no drift is found when the real {report.kind} reads it)" if later else ""
        out.print(f"\n  {n} would be {'redone' if redo else 'reverted'}{checked} · nothing was sent")
    out.print(f"\n  [bold]R E S U L T[/]  {result_line(report)}\n")


#: halts whose resource is readable and not as expected: the three ways on (leave it, put it
#: back and run again, --force) fit them
_DRIFT_HALTS = frozenset({"drift detected", "the inverse did not restore the captured state"})


def _unknown_ways(out: _Report, report: UndoReport, h, tid: str, redo: bool) -> None:
    """The ways on from a halt on an outcome nobody recorded: what a person can do, since the
    state the call left is exactly what is not known (no "put it back the way the run left it")."""
    if redo:
        out.print("\n  Nothing after this was re-sent. Redo never sends this call again (whether the earlier "
                  "redo applied it is unknown). Two ways on:")
        out.print("    1. leave it as it is;")
        out.print(f"    2. check the resource by hand; `synartesis undo {tid} --force` then steps over this action "
                  "(leaving whatever it did) and undoes what was redone before it.")
        return
    lead = " (the newer actions stay undone);" if report.changed else " (nothing was sent);" if not report.sent else ";"
    if "before the call:" in (h.detail or "") and "before the call:  not captured" not in (h.detail or ""):
        # a read settles it: found as it was before the call, there is nothing left to undo there
        out.print("\n  Nothing older than this was touched. Three ways on:")
        out.print("    1. leave it as it is" + lead)
        out.print("    2. put the resource back as it was before the call (shown above), then run "
                  f"`synartesis undo {tid}` again: it then finds nothing to undo here and undoes the older actions;")
        out.print(f"    3. `synartesis undo {tid} --force` to see the plan, then `--force --yes` to step over this action "
                  "(leaving whatever it did) and undo the older ones.")
        return
    if "a read to settle it failed" in (h.detail or ""):
        out.print("\n  Nothing older than this was touched. Three ways on:")
        out.print("    1. leave it as it is" + lead)
        out.print(f"    2. once the read can work (its error is above), run `synartesis undo {tid}` again: the read may "
                  "settle it;")
        out.print(f"    3. check the resource by hand, then `synartesis undo {tid} --force` to see the plan and "
                  "`--force --yes` to step over this action (leaving whatever it did) and undo the older ones.")
        return
    out.print("\n  Nothing older than this was touched. No read can settle this outcome. Two ways on:")
    out.print("    1. leave it as it is" + lead)
    out.print(f"    2. check the resource by hand, then `synartesis undo {tid} --force` to see the plan and "
              "`--force --yes` to step over this action (leaving whatever it did) and undo the older ones.")


def _waiting(out: _Report, report: UndoReport) -> None:
    """The target's calls still held for a person: undo leaves them as they are, and one
    approved afterwards would let the agent's retry make the change after all."""
    if not report.waiting:
        return
    n = len(report.waiting)
    whole = "session" if report.target == "session" else "run"
    out.print(f"\n  [yellow]{n} call{'s' if n != 1 else ''} of this {whole} {'are' if n != 1 else 'is'} still waiting "
              f"for approval[/]: undo leaves {'them' if n != 1 else 'it'} held, and approved later the agent's retry "
              "would go through. To refuse:")
    for w in report.waiting:
        at = f"{w['run'][:8]}:{w['seq']}" if report.target == "session" else f"seq {w['seq']}"
        out.print(f"    synartesis deny {w['action'][:8]}    ({at} {shown(w['tool'], line=True)})")


def _sent_words(report: UndoReport) -> str:
    """What a halt that put nothing back sent: a call whose outcome is unknown (the server died
    or timed out on it: it may have taken the resource back, and the next attempt reads it
    again), or one that did not take the resource back (adversarial review 31, F2: an unknown
    outcome was said to have not taken the resource back)."""
    what = "a call was sent" if report.kind == "redo" else "an inverse was sent"
    if report.halted is not None and "outcome is unknown" in (report.halted.reason or ""):
        return f"{what} and its outcome is unknown"
    return f"{what} but did not take the resource back"


def result_line(report: UndoReport) -> str:
    """The RESULT line: what the run (or session) is afterwards, or would be (a dry run or a
    ``--force`` preview: ``would end STATUS (dry run)``; one that would halt before changing
    anything says the status the run keeps, as the real halt leaves it; one with steps checked
    only during the real undo says the status holds only if those find no drift)."""
    status = report.shown_status
    whole = "session" if report.target == "session" else "run"
    if report.halted and report.stays is not None and (report.dry_run or not report.changed):
        if report.dry_run:
            at = _where(report, report.halted).strip()
            return f"would halt at sequence {at}: nothing would be sent, the {whole} stays {report.stays} (dry run)"
        if report.sent:
            return f"halted — {_sent_words(report)}; the {whole} is {report.stays}"
        return f"halted — nothing was sent; the {whole} stays {report.stays}"
    if report.halted and not report.dry_run and not report.changed:
        return "halted — nothing was sent" if not report.sent else f"halted — {_sent_words(report)}"
    if report.dry_run:
        if report.halted:
            return f"would halt at sequence {_where(report, report.halted).strip()} and end {status} (dry run)"
        if report.deferred_checks:
            # the plan cannot promise the status: the real undo may halt at one of these
            later = report.deferred_checks
            where = ", ".join(f"{s.run[:8]}:{s.seq}" if report.target == "session" and s.run else str(s.seq) for s in later)
            sent = sum(1 for s in report.steps[:report.steps.index(later[0])] if s.kind in ("revert", "overwrite", "redo"))
            then = ("it halts there and nothing is sent" if not sent else
                    f"it halts there after {sent} other step{'s' if sent != 1 else ''} {'were' if sent != 1 else 'was'} "
                    f"sent, and the {whole} ends partial")
            return (f"would end {status} if the real {report.kind} finds no drift at sequence{'s' if len(later) != 1 else ''} "
                    f"{where} (checked only then); if it finds drift, {then} (dry run)")
        if report.kind == "redo" and report.asked_for_part and report.still_undone:
            return f"would end {status} (dry run){_earlier_undone(report, whole, 'would still be')}"
        return f"would end {status} (dry run)"
    if report.removed_left and not report.halted:
        n = report.removed_left
        return (f"{status} — what {n} call{'s' if n != 1 else ''} the undo left in place did "
                f"{'stays' if not report.dry_run else 'would stay'} removed (see above)") + _still_open(report)
    if report.asked_for_part:
        if report.kind == "redo":  # redo takes one undo at a time, newest first (a new user's finding)
            return (f"{status} — what the last undo reverted is redone"
                    f"{_earlier_undone(report, whole, 'is still')}") + _still_open(report)
        return f"{status} — everything asked for was undone; the rest of the {whole} is still in effect" + _still_open(report)
    return status + _still_open(report)


def _earlier_undone(report: UndoReport, whole: str, verb: str) -> str:
    """``; what an earlier undo of this run reverted (steps 3 write_file, …) is still undone:
    `synartesis redo RUN` redoes it`` (``verb``: "is still", or a preview's "would still be")."""
    steps = report.still_undone
    named = (f" (step{'s' if len(steps) != 1 else ''} {', '.join(steps[:5])}"
             f"{f' and {len(steps) - 5} more' if len(steps) > 5 else ''})") if steps else ""
    again = report.run[:8] if report.target == "run" else report.run
    return (f"; what an earlier undo of this {whole} reverted{named} {verb} undone: "
            + (f"`synartesis redo {again}` redoes it" if verb == "is still" else
               f"a second `synartesis redo {again}` redoes it"))


def _still_open(report: UndoReport) -> str:
    """A forced undo or redo of a live run: it is left active (its proxy goes on journalling)."""
    if not report.open_runs or report.dry_run:
        return ""
    runs = ", ".join(r[:8] for r in report.open_runs)
    many = len(report.open_runs) != 1
    return (f" (so far: run{'s' if many else ''} {runs} {'are' if many else 'is'} still active and left open; "
            "what its agent does next is journalled there)")


def show_live(run: Optional[str], manifest: Optional[str], journal: Optional[str], as_json: bool) -> int:
    """`show RUN --live`; returns the exit code (1 when anything drifted or is unreadable)."""
    policy = _policy(manifest)
    with journal_for(manifest, journal) as j:
        from synartesis.services.launch_env import entry_env
        report = live_check(j, run, policy, entry_env=entry_env)
    if as_json:
        print_json(report.as_json())
    else:
        out = console()
        out.print(f"[bold]live check of {shown(report.name or 'run ' + report.run)}[/] (nothing is written)")
        for w in report.warnings:
            out.print(f"  [yellow]warning:[/] {shown(w)}")
        width = max((len(i.where) for i in report.items), default=3)
        for item in report.items:
            out.print(f"  {(item.where or str(item.seq)):>{width}}  {item.state:<11} {shown(item.tool, line=True)}  {shown(item.detail)}")
            if item.state == "drifted":
                out.print(f"         expected: {shown(shorten(item.expected, 200))}")
                out.print(f"         actual:   {shown(shorten(item.actual, 200))}")
        if not report.items:
            out.print(f"  this {report.target} wrote nothing")
    bad = any(i.state in ("drifted", "unreadable") for i in report.items)
    return 1 if bad else 0


@app.command("prune")
def prune_cmd(runs: Optional[list[str]] = typer.Argument(None, help="Runs to delete (ids or prefixes)."),
              older_than: Optional[float] = typer.Option(None, "--older-than", help="Delete runs started more than DAYS ago (fractions allowed; 0: every run prune may delete).", metavar="DAYS"),
              yes: bool = typer.Option(False, "--yes", "-y", help="Do it (otherwise show what would go)."),
              manifest: Optional[str] = ManifestOpt, journal: Optional[str] = JournalOpt,
              as_json: bool = JsonOpt) -> None:
    """Delete whole runs and shrink the journal; never an active run, one holding a call, or one whose undo halted."""
    from synartesis.services.prune import apply_prune, plan_prune
    with journal_for(manifest, journal) as j:
        plan = plan_prune(j, list(runs or []), older_than)
        after = apply_prune(j, plan) if yes else plan.bytes_before
    if as_json:
        print_json({"deleted" if yes else "wouldDelete": [r.id for r in plan.delete],
                    "kept": [{"run": r.id, "why": why} for r, why in plan.kept],
                    "bytesBefore": plan.bytes_before, "bytesAfter": after})
    else:
        out = console()
        verb = "deleted" if yes else "would delete"
        for r in plan.delete:
            out.print(f"{verb} {run_line(r)}")
        for r, why in plan.kept:
            out.print(f"kept {r.id[:8]}: {why}")
        if yes:
            out.print(f"journal {plan.bytes_before:,} → {after:,} bytes")
        elif plan.delete:
            out.print("nothing was deleted; add --yes to do it")
    if plan.kept and not plan.delete:
        raise typer.Exit(1)
