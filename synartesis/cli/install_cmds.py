"""`synartesis install`, `status`, `uninstall`: parse options, call the services, render.

Exit codes (DESIGN §9): 0 success; 1 a file was refused (changed meanwhile, could not be
written, an entry could not be edited safely), confirmation declined, or status found
something uncovered; 2 usage (unknown client, nobody to confirm with and no ``--yes``: see :func:`_confirm`) or
a client config that is not valid (it does not parse, or servers are not an object).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

from synartesis.cli.app import app
from synartesis.cli.common import console, err_console, print_json, shown
from synartesis.errors import UsageError
from synartesis.paths import Env
from synartesis.printable import printable

__all__ = ["install", "status", "uninstall"]

ClientOpt = typer.Option(None, "--client", help="Only this client: claude-code, claude-desktop, cursor, codex.",
                         metavar="NAME")
DryRunOpt = typer.Option(False, "--dry-run", help="Show a unified diff per file (secrets hidden); write nothing.")
YesOpt = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation (for scripts).")
JsonOpt = typer.Option(False, "--json", help="Machine-readable output.")


def _asks_on_stderr(yes: bool, json_out: bool, dry_run: bool = False) -> bool:
    """True when the question will be asked on stderr: stdout goes to a file or a pipe
    (``install > out.txt``) while a person is at stdin and stderr."""
    return (not (yes or json_out or dry_run) and sys.stdin.isatty() and not sys.stdout.isatty()
            and sys.stderr.isatty())


class _Tee:
    """Text for stdout that also goes to the terminal on stderr, so the plan a person is asked
    to confirm is on their screen as well as in the file stdout was sent to."""

    def __init__(self, *files: Any) -> None:
        self.files = files

    def write(self, text: str) -> int:
        for f in self.files:
            f.write(text)
        return len(text)

    def flush(self) -> None:
        for f in self.files:
            f.flush()

    def isatty(self) -> bool:
        return False


def _out(yes: bool, json_out: bool, dry_run: bool = False) -> Any:
    """The console for install/uninstall: stdout, teed to stderr when the question is asked there."""
    if not _asks_on_stderr(yes, json_out, dry_run):
        return console()
    from rich.console import Console

    return Console(file=_Tee(sys.stdout, sys.stderr), no_color=True, highlight=False, soft_wrap=True, width=4096)


def _confirm(question: str, yes: bool, json_out: bool) -> bool:
    """True to go ahead: ``--yes``, or a 'yes' typed on a terminal. The question is asked on
    stdout, or on stderr when only stdout is redirected (where :func:`_out` showed the plan too,
    as ``rm -i`` and ``git`` ask where the person sees it). Nobody to ask → refuse, naming why.

    Raises:
        UsageError: ``--json``, stdin not a terminal, or neither stdout nor stderr one (exit 2).
    """
    if yes:
        return True
    if json_out:
        raise UsageError("refusing to change client configs without confirmation: --json does not ask; "
                         "pass --yes (or --dry-run to look first)")
    if not sys.stdin.isatty():
        raise UsageError("refusing to change client configs without confirmation: stdin is not a terminal, "
                         "so there is no one to ask; pass --yes (or --dry-run to look first)")
    if not (sys.stdout.isatty() or sys.stderr.isatty()):
        raise UsageError("refusing to change client configs without confirmation: neither stdout nor stderr "
                         "is a terminal, so the question would not be seen; pass --yes (or --dry-run to look first)")
    import questionary

    kwargs: dict[str, Any] = {}
    if not sys.stdout.isatty():
        from prompt_toolkit.output import create_output

        kwargs["output"] = create_output(stdout=sys.stderr)
    answer = questionary.confirm(question, default=False, **kwargs).ask()
    return bool(answer)


class _Bar:
    """Rich progress bar for server starts (on stderr, only when it is a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.progress: RichProgress | None = None
        self.task: Any = None

    def start(self, total: int) -> None:
        if not self.enabled or total == 0:
            return
        self.progress = RichProgress(TextColumn("starting servers"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.description}"), TimeElapsedColumn(),
                                     console=err_console(), transient=True)
        self.progress.start()
        self.task = self.progress.add_task("", total=total)

    def advance(self, key: str, ok: bool) -> None:
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=f"{key} {'ok' if ok else 'failed'}")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _write_plain(text: str) -> None:
    """Diffs go straight to stdout: plain text, no markup, no wrapping."""
    sys.stdout.write(printable(text, keep="\n\t") + "\n")  # a config can hold ESC too
    sys.stdout.flush()


def _diff(path: str, old: bytes | None, new: bytes | None, client: str | None = None) -> str:
    """A unified diff with every secret hidden: a client file's text is shown through the
    redaction rules (``client`` given), the policy's (already redacted) through the backstop."""
    from synartesis.redact import redact_text
    from synartesis.services.install import shown_config_text

    if client is not None:
        a, b = shown_config_text(client, old).splitlines(), shown_config_text(client, new).splitlines()
    else:
        a = (old or b"").decode("utf-8", "replace").splitlines()
        b = (new or b"").decode("utf-8", "replace").splitlines()
    lines = difflib.unified_diff([x.rstrip("\r") for x in a], [x.rstrip("\r") for x in b],
                                 fromfile=f"{path} (now)", tofile=f"{path} (after)", lineterm="", n=2)
    return "\n".join(redact_text(line) for line in lines)


def _problem_code(files: Any) -> int:
    """0 when every file was fine; 2 when one is not a valid config; else 1."""
    codes = [getattr(f, "exit_code", 1) or 1 for f in files if f.status == "error"]
    return max(codes) if codes else 0


_ACTION_TEXT = {
    "wrap": "wrap", "shadow": "cover (local entry)", "ours": "already wrapped", "remote": "remote, left alone",
    "other-wrapper": "other wrapper, left alone", "uncovered": "not covered", "shadowed": "shadowed",
    "blocked": "blocked by policy, left alone", "invalid": "invalid, left alone", "skipped": "skipped",
}


_DONE_TEXT = {"wrap": "wrapped", "shadow": "covered (local entry added)"}


def _entry_line(e: Any, done: bool = False) -> str:
    where = e.scope + (f" {e.project}" if e.project and e.scope == "local" else "")
    key = f" → --server {e.policy_key}" if e.policy_key and e.action in ("wrap", "shadow") else ""
    what = (_DONE_TEXT if done else _ACTION_TEXT).get(e.action) or _ACTION_TEXT.get(e.action, e.action)
    # a reason that begins by saying the same is not said twice ("already wrapped — already
    # wrapped by synartesis": a new user's round 30, U9)
    why = f" — {e.reason}" if e.reason and not e.reason.startswith(what) else ""
    return f"{e.name} [{where}]: {what}{key}{why}"


def _at(path: Any, message: str) -> str:
    """``PATH: message``, or the message alone when it already starts with the path (a parse
    error reads ``PATH:LINE:COL: …``: said once, it stays the form editors jump to)."""
    said = message.startswith((f"{path}:", f"{path} "))
    return shown(message) if said else f"{shown(path)}: {shown(message)}"


def _file_line(fp: Any, done: dict[str, str] | None = None) -> str:
    if fp.status == "error":
        return f"[red]✗[/red] {_at(fp.path, fp.message)}"
    counts: dict[str, int] = {}
    for e in fp.entries:
        counts[e.action] = counts.get(e.action, 0) + 1
    what = ", ".join(f"{n} {_ACTION_TEXT.get(a, a)}" for a, n in counts.items()) or "no servers"
    shadows = sum(1 for c in fp.changes if type(c).__name__ == "AddShadow")
    if shadows:
        what += f", {shadows} local entr{'y' if shadows == 1 else 'ies'} added"
    mark = "•" if fp.status == "change" else "·"
    said = "unchanged"
    if fp.status == "change":
        outcome = None if done is None else done.get(str(fp.path))
        said = ("will change" if done is None else "changed" if outcome == "written"
                else f"not changed ({outcome or 'not written'}: see below)")
    if done is not None and fp.status == "change" and said != "changed":
        what = "nothing of it was written"
    elif done is not None and fp.status == "change":
        what = ", ".join(f"{n} {_DONE_TEXT.get(a) or _ACTION_TEXT.get(a, a)}" for a, n in counts.items()) or "no servers"
        if shadows:
            what += f", {shadows} local entr{'y' if shadows == 1 else 'ies'} added"
    return f"{mark} {shown(fp.path)} ({shown(fp.client_name)}): {said} — {what}"


def _plan_json(plan: Any) -> dict[str, Any]:
    return {
        "proxy": plan.proxy_path,
        "files": [{"client": f.client, "file": str(f.path), "scope": f.scope, "status": f.status,
                   "message": f.message,
                   "entries": [{"name": e.name, "scope": e.scope, "project": e.project, "action": e.action,
                                "reason": e.reason, "policy_key": e.policy_key} for e in f.entries]}
                  for f in plan.files],
        "policy": {"path": str(plan.policy_path), "changed": plan.policy_new is not None,
                   "servers": [{"name": p.name, "source": p.source, "policy_id": p.policy_id,
                                "provenance": p.provenance, "checked": p.checked, "todo": p.todo_count,
                                "reason": p.reason} for p in plan.policy_plans]},
        "start_errors": plan.start_errors,
        "forgotten": [{"file": r.get("file"), "name": r.get("name")} for r in plan.forget],
        "warnings": plan.warnings,
        "restart": plan.restart,
        "logins": plan.logins,
        "looked_in": plan.looked_in,
    }


def _show_install_plan(out: Any, plan: Any, done: dict[str, str] | None) -> None:
    """The plan, file by file; ``done`` (path → outcome status) once written: past tense."""
    for w in plan.warnings:
        out.print(f"[yellow]![/yellow] {shown(w)}")
    if not plan.files:
        out.print(_none_found(plan.looked_in))
    for fp in plan.files:
        out.print(_file_line(fp, done))
        for e in fp.entries:
            out.print("    " + _entry_line(e, done is not None and done.get(str(fp.path)) == "written"),
                      markup=False, highlight=False)
    for key, err in plan.start_errors.items():
        out.print(f"[yellow]![/yellow] {shown(key)} did not start ({shown(err)}); it gets a catch-all gated draft")
    if plan.start_errors:
        out.print("  (a server that is slow to start the first time, such as `npx -y …`: try again with "
                  "`--timeout 60`; `--no-start` adopts shipped policies without starting servers)")
    for p in plan.policy_plans:
        prov = f", provenance {p.provenance}" if p.provenance else ""
        out.print(f"  policy {shown(p.name)}: {shown(p.source)}{shown(prov)} — {shown(p.reason)}")
    for r in plan.forget:
        out.print(f"  forget: {shown(r.get('name'))} in {shown(r.get('file'))} (removed since install)")


@app.command()
def install(
    client: Optional[str] = ClientOpt,
    dry_run: bool = DryRunOpt,
    yes: bool = YesOpt,
    json_out: bool = JsonOpt,
    no_start: bool = typer.Option(False, "--no-start", help="Do not start servers to read their tools; "
                                  "known servers adopt their shipped policy unchecked, others a catch-all gated draft."),
    include_project_files: bool = typer.Option(False, "--include-project-files",
                                               help="Also edit shared project files (.cursor/mcp.json, .codex/config.toml)."),
    include_oauth: bool = typer.Option(False, "--include-oauth",
                                       help="Also wrap remote servers the client signs in to with OAuth "
                                            "(then run the `synartesis login NAME` commands it lists)."),
    timeout: float = typer.Option(20.0, "--timeout", help="Seconds to wait for each server to start.", metavar="S"),
    proxy_path: Optional[str] = typer.Option(None, "--proxy-path", hidden=True,
                                             help="Absolute path of the synartesis executable to write."),
) -> None:
    """Wrap every MCP server of Claude Code, Claude Desktop, Cursor and Codex so it runs through synartesis.

    Each stdio entry keeps its name and every key; only command/args change to
    `<synartesis> proxy --server NAME -- <original command and args>`. A remote entry (url) is
    bridged: it runs `<synartesis> proxy --server NAME --url URL …`, its credentials passed by
    reference; one the client signs in to with OAuth only with --include-oauth. Entries wrapped
    by another tool are reported, not touched. Each file is backed up first
    ($SYNARTESIS_HOME/backups), written atomically, and refused if the client changed it meanwhile.
    The user policy $SYNARTESIS_HOME/synartesis.yaml gets a policy per new server.
    Claude Desktop and Codex must be restarted afterwards. --dry-run still starts servers to
    draft their policies; add --no-start to run nothing.
    """
    from synartesis.services.install import InstallOptions, apply_install, plan_install

    env = Env.current()
    out = _out(yes, json_out, dry_run)
    bar = _Bar(enabled=not json_out)
    if dry_run and not no_start and not json_out:
        # said before any server starts (a new user's round 21: only the slow-server hint named --no-start)
        out.print("dry run: nothing is written, but each server that needs a policy is started once to read its "
                  "tools (`npx -y …` may download it first); add --no-start to start none")
    try:
        plan = plan_install(env, InstallOptions(client=client, include_project_files=include_project_files,
                                                include_oauth=include_oauth, start=not no_start, timeout=timeout,
                                                proxy_path=proxy_path),
                            progress=bar)
    finally:
        bar.stop()
    problems = _problem_code(plan.files)
    if json_out and (dry_run or not plan.changes):
        doc = _plan_json(plan)
        doc.update(dry_run=dry_run, result=None)
        if dry_run:
            doc["diffs"] = {str(f.path): _diff(str(f.path), f.old, f.new, f.client)
                            for f in plan.files if f.status == "change"}
        print_json(doc)
        raise typer.Exit(problems)
    # with --yes nothing is asked: the plan is shown once written, saying what was done (a new
    # user's round 31, #9g: "will change" after the file was written); a dry run or a question
    # shows it first, as what will be done
    after = yes and not dry_run and not json_out and plan.changes
    if not json_out and not after:
        _show_install_plan(out, plan, None)
    if dry_run:
        if not json_out:
            out.file.flush()
            for fp in plan.files:
                if fp.status == "change":
                    _write_plain(_diff(str(fp.path), fp.old, fp.new, fp.client))
            if plan.policy_new is not None:
                old = plan.policy_old.encode() if plan.policy_old is not None else None
                _write_plain(_diff(str(plan.policy_path), old, plan.policy_new.encode()))
            for hint in plan.restart:
                out.print(f"  after installing: {shown(hint)}")
            for cmd in plan.logins:
                out.print(f"  after installing, sign in: {shown(cmd)}")
            out.print("dry run: nothing was written")
        raise typer.Exit(problems)
    if not plan.changes:
        out.print(_nothing_to_change(plan))
        raise typer.Exit(problems)
    if not _confirm("Write these changes?", yes, json_out):
        out.print("Nothing was written.")
        raise typer.Exit(1)
    try:
        result = apply_install(env, plan)
    except BaseException:
        if after:  # the plan is still shown, as not written
            _show_install_plan(out, plan, {})
        raise
    if after:
        _show_install_plan(out, plan, {o.path: o.status for o in result.files})
    if json_out:
        doc = _plan_json(plan)
        doc.update(dry_run=False, result={
            "policy_written": result.policy_written,
            "files": [{"file": o.path, "client": o.client, "status": o.status, "message": o.message,
                       "backup": o.backup} for o in result.files]})
        print_json(doc)
    else:
        _print_outcomes(out, result.files)
        if result.policy_written:
            out.print(f"✓ policy written: {shown(result.policy_path)}")
        for hint in result.restart:
            out.print(f"[bold]restart needed[/bold] — {shown(hint)}")
        if plan.logins:
            out.print("[bold]sign in[/bold] — these remote servers use OAuth; sign the bridge in, once each:")
            for cmd in plan.logins:
                out.print(f"  {cmd}", markup=False, highlight=False)
    raise typer.Exit(problems or (0 if result.ok else 1))


def _nothing_to_change(plan: Any) -> str:
    """The closing line when install writes nothing: never "all covered" when it is not."""
    bad = [f for f in plan.files if f.status == "error"]
    left = [e for e in plan.entries if e.action in ("skipped", "invalid", "blocked", "uncovered")]
    if bad or left:
        parts = []
        if bad:
            parts.append(f"{len(bad)} file{'s' if len(bad) != 1 else ''} could not be edited")
        if left:
            parts.append(f"{len(left)} server entr{'ies' if len(left) != 1 else 'y'} not wrapped")
        return f"Nothing was changed: {' and '.join(parts)} (the reasons are listed above)."
    if not plan.files:  # said above, with where it looked (a new user's round 31, #7)
        return "Nothing was written."
    if not plan.entries:
        return "Nothing to change: no client config found lists an MCP server."
    return "Nothing to change: every server that can be wrapped already is."


def _none_found(looked: list[str]) -> str:
    """The line for no client config at all, naming every place looked in."""
    return ("No MCP client config found; looked in: " + ", ".join(shown(p, line=True) for p in looked)
            + " (and for project files — .mcp.json, .cursor/mcp.json, .codex/config.toml — from this folder up)")


def _status_line(r: Any) -> str:
    where = r.scope + (f" {r.project}" if r.project and r.scope == "local" else "")
    name = r.name + (f" → {r.policy_key}" if r.policy_key and r.policy_key != r.name else "")
    # covered but drifted is not a plain tick (a new user's round 19, #8: ✓ above a drift line)
    mark = ("!" if getattr(r, "drift", None) else "✓") if r.covered else "✗"
    line = f"{mark} {name} [{where}] {r.state}"
    if r.reason:
        line += f" — {r.reason}"
    if r.policy:
        from synartesis.services.status import policy_summary
        line += f" · {policy_summary(r.policy)}"
    if getattr(r, "sign_in", None):  # a bridged remote server
        line += f" · sign-in: {r.sign_in}"
    return line


def _print_outcomes(out: Any, outcomes: list[Any]) -> None:
    for o in outcomes:
        if o.status == "written":
            out.print(f"✓ {shown(o.path)}: written (backup {shown(o.backup)})")
        elif o.status == "unchanged":
            out.print(f"· {shown(o.path)}: unchanged")
        elif o.status == "gone":
            out.print(f"· {_at(o.path, o.message)}")
        elif o.status == "conflict":
            out.print(f"[red]✗[/red] {shown(o.path)}: refused — {shown(o.message)}")
        else:
            out.print(f"[red]✗[/red] {_at(o.path, o.message)}")


@app.command()
def status(
    client: Optional[str] = ClientOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Show, per client, scope and server, whether it runs through synartesis, with which policy, and what drifted.

    Exit 0 when every server is covered and nothing drifted, 2 when a client config is not
    valid or the policy does not load, 1 otherwise.
    """
    from synartesis.services.status import collect_status

    env = Env.current()
    report = collect_status(env, client)
    if json_out:
        print_json(report.to_json())
        raise typer.Exit(report.exit_code)
    out = console()
    for w in report.warnings:
        out.print(f"[yellow]![/yellow] {shown(w)}")
    for f in report.files:
        if f["status"] != "ok":
            out.print(f"[red]✗[/red] {shown(f['message'])}")
    if report.policy_error:
        out.print(f"[red]✗[/red] the policy does not load: {shown(report.policy_error)}")
        out.print("  Every wrapped server's proxy refuses to start until it loads "
                  "(`synartesis check` says the same).")
    if not report.files:
        out.print(_none_found(report.looked_in))
    elif not report.rows:
        out.print("No MCP server is listed in any client config found.")
    current = None
    for r in report.rows:
        head = f"{r.client_name} — {r.file}"
        if head != current:
            out.print(head, markup=False, highlight=False)
            current = head
        out.print("  " + _status_line(r), markup=False, highlight=False)
        for d in r.drift:
            out.print(f"      drift: {d}", markup=False, highlight=False)
    if report.unlaunched:
        from synartesis.services.status import policy_summary
        out.print("In the policy, launched through synartesis by no client config:", markup=False, highlight=False)
        for u in report.unlaunched:
            summary = f" · {policy_summary(u['policy'])}" if u["policy"] else ""
            out.print(f"  {u['name']}{summary}", markup=False, highlight=False)
    covered = sum(1 for r in report.rows if r.covered)
    out.print(f"{covered} of {len(report.rows)} server entries covered"
              + (" (the policy does not load)" if report.policy_error else "")
              + (f"; policy: {shown(report.policy_path)}" if report.policy_exists
                 else f"; no policy yet (`synartesis install` writes {shown(report.policy_path)})"
                 if report.install_would_add
                 else f"; no policy yet ({shown(report.policy_path)}: install writes it once a client config lists "
                      "a server to wrap)"))
    raise typer.Exit(report.exit_code)


def _purge_what(path: Path, holds: dict[str, int] | None = None) -> str:
    """What a file ``uninstall --purge`` deletes is, for the line that lists it; the journal's
    with what it holds (``holds``: :attr:`UninstallPlan.journal_holds`)."""
    name = path.name
    if name == "journal.db" and holds is not None:
        def n(k: int, one: str, many: str) -> str:
            return f"{k} {one if k == 1 else many}"
        held = f", {n(holds['held'], 'held call', 'held calls')} waiting for approval" if holds["held"] else ""
        return (f" (the journal: {n(holds['runs'], 'run', 'runs')}, {n(holds['actions'], 'action', 'actions')}{held}; "
                "their undo history and held calls go with it)")
    if name == "installed.json":
        return " (the install record)"
    if name.startswith("policy-") and name.endswith(".json"):
        return " (the compiled policy cache: it holds every server's command line)"
    return ""


def _kept_why(path: str) -> str:
    name = Path(path).name
    if name == "installed.json":
        return " (it still records entries this run did not put back)"
    if name == "backups":
        return " (backups are always kept)"
    return ""


def _backups(env: Env) -> Path | None:
    """synartesis's backups folder, which ``uninstall --purge`` always keeps, when it exists."""
    from synartesis.paths import synartesis_home
    path = synartesis_home(env) / "backups"
    return path if path.exists() else None


@app.command()
def uninstall(
    client: Optional[str] = ClientOpt,
    dry_run: bool = DryRunOpt,
    yes: bool = YesOpt,
    json_out: bool = JsonOpt,
    purge: bool = typer.Option(False, "--purge", help="Also delete the user policy, the journal, "
                                                      "the compiled policy caches and the install record "
                                                      "(backups are kept)."),
    from_backup: Optional[Path] = typer.Option(None, "--from-backup", metavar="FILE",
                                               help="Explicit recovery: put a whole file back from one of "
                                                    "synartesis's backups (the current file is backed up first)."),
) -> None:
    """Put back every entry synartesis wrapped, if it is still what synartesis wrote.

    An entry whose only change since is its env gets its original back, keeping that edit; other
    entries you or the client changed since are reported and left alone; an entry that was
    deleted is not brought back. The user policy and the journal are kept unless --purge.
    """
    from synartesis.services.install import apply_uninstall, plan_uninstall, restore_from_backup

    env = Env.current()
    out = _out(yes, json_out, dry_run)
    if from_backup is not None:
        check = restore_from_backup(env, from_backup, dry_run=True)  # refuses what the real run refuses
        if dry_run:
            out.print(f"dry run: would put {shown(check.path)} back from {shown(check.backup)}; nothing was written")
            raise typer.Exit(0)
        if not _confirm(f"Replace {check.path} with the backup {from_backup}?", yes, json_out):
            out.print("Nothing was written.")
            raise typer.Exit(1)
        res = restore_from_backup(env, from_backup)
        if json_out:
            print_json({"restored": res.path, "backup": res.backup, "previous_backup": res.previous_backup,
                        "forgotten_records": res.forgotten})
        else:
            out.print(f"✓ {shown(res.path)}: restored from {shown(res.backup)}"
                      + (f" (its previous content is in {shown(res.previous_backup)})" if res.previous_backup else ""))
        raise typer.Exit(0)
    plan = plan_uninstall(env, client, purge)

    def plan_doc() -> dict[str, Any]:
        return {"files": [{"client": f.client, "file": str(f.path), "status": f.status, "message": f.message,
                           "entries": [{"name": e.name, "scope": e.scope, "project": e.project,
                                        "action": e.action, "reason": e.reason} for e in f.entries]}
                          for f in plan.files],
                "purge": [str(p) for p in plan.purge_paths], "journalHolds": plan.journal_holds, "restart": plan.restart,
                "keep": [str(b)] if purge and (b := _backups(env)) is not None else [],
                "warnings": plan.warnings}

    def show(done: dict[str, str] | None) -> None:
        """The plan; ``done`` (path → outcome status) once written: what was done."""
        for w in plan.warnings:
            out.print(f"[yellow]![/yellow] {shown(w)}", markup=True, highlight=False)
        if not plan.files:
            out.print("No wrapped entry to put back: the install record lists none." if plan.has_record
                      else "synartesis has not changed any client config (no install record).")
        for f in plan.files:
            mark = "[red]✗[/red]" if f.status == "error" else "•" if f.status == "change" else "·"
            partly = any(e.action != "restore" for e in f.entries)
            if done is None:
                said = "will be partly restored" if partly else "will be restored"
            elif done.get(str(f.path)) == "written":
                said = "partly restored" if partly else "restored"
            else:
                said = f"not restored ({done.get(str(f.path)) or 'not written'}: see below)"
            out.print(f"{mark} {_at(f.path, f.message or (said if f.status == 'change' else f.status))}")
            for e in f.entries:
                out.print(f"    {shown(e.name)} ({shown(e.scope)}): {shown(e.reason)}")
        if done is None:  # once written, the deleted and kept files are listed below
            for p in plan.purge_paths:
                out.print(f"  will delete {shown(p)}{_purge_what(p, plan.journal_holds)}")
            if purge and (backups := _backups(env)) is not None:  # new user round 10, #7: the plan did not say
                out.print(f"  will keep {shown(backups)}{_kept_why(str(backups))}")

    # with --yes nothing is asked: the plan is shown once written (a new user's round 31, #9g)
    after = yes and not dry_run and not json_out and plan.changes
    if not json_out and not after:
        show(None)
    problems = _problem_code(plan.files)
    # an entry the client or a person changed after install stays as it is, still launched
    # through synartesis: not a success to report with exit 0 (adversarial review 16, F9)
    left = [e for f in plan.files for e in f.entries if e.action == "edited"]
    if dry_run:
        if json_out:
            doc = plan_doc()
            doc["diffs"] = {str(f.path): _diff(str(f.path), f.old, f.new, f.client)
                            for f in plan.files if f.status == "change"}
            print_json(doc)
        else:
            out.file.flush()
            for f in plan.files:
                if f.status == "change":
                    _write_plain(_diff(str(f.path), f.old, f.new, f.client))
            out.print("dry run: nothing was written")
        # the real uninstall's exit code (a new user's round 19, #7: 0 here, 1 there)
        raise typer.Exit(problems or (1 if left or plan.purge_waits else 0))
    if not plan.changes:
        if json_out:
            print_json(dict(plan_doc(), result=None))
        else:
            out.print("Nothing to restore." + (_left_line(left) if left else ""))
        raise typer.Exit(problems or (1 if left or plan.purge_waits else 0))
    if not _confirm("Restore these entries?", yes, json_out):
        out.print("Nothing was written.")
        raise typer.Exit(1)
    try:
        result = apply_uninstall(env, plan)
    except BaseException:
        if after:
            show({})
        raise
    if after:
        show({o.path: o.status for o in result.files})
    if json_out:
        print_json(dict(plan_doc(), result={
            "files": [{"file": o.path, "status": o.status, "message": o.message, "backup": o.backup}
                      for o in result.files], "purged": result.purged, "kept": result.kept}))
    else:
        _print_outcomes(out, result.files)
        for p in result.purged:
            out.print(f"✓ deleted {shown(p)}{_purge_what(Path(p), plan.journal_holds) if after else ''}")
        for p in result.kept:
            out.print(f"· kept {shown(p)}{_kept_why(p)}")
        for hint in result.restart:
            out.print(f"[bold]restart needed[/bold] — {shown(hint)}")
        if left:
            out.print(_left_line(left).strip())
    raise typer.Exit(problems or (0 if result.ok and not left and not plan.purge_waits else 1))


def _left_line(left: list) -> str:
    """The closing words when entries changed since install stay wrapped (exit 1)."""
    names = ", ".join(shown(e.name, line=True) for e in left)
    # not "changed since install": an entry can be left because install has no record of it
    # (renamed, copied or moved), which its own line says (a new user's round 30, U10)
    return (f" {len(left)} entr{'ies' if len(left) != 1 else 'y'} still "
            f"run{'' if len(left) != 1 else 's'} through synartesis and {'were' if len(left) != 1 else 'was'} "
            f"left as {'they are' if len(left) != 1 else 'it is'} ({names}): why is said above")
