"""`synartesis init`, `check` and `pin`: thin typer wrappers over
:mod:`synartesis.services.policy_checks` (they parse options, call the service, render).

Exit codes (DESIGN §9): 0 fine; 1 problems found / a server failed; 2 usage or policy error.
"""

from __future__ import annotations

from typing import List, Optional

import typer
from rich.console import Console
from rich.text import Text

from synartesis.cli.app import app
from synartesis.services.policy_checks import (
    CheckResult,
    check_policy,
    describe_provenance,
    init_server,
    pin_policy,
    write_pins,
)

__all__ = ["init", "check", "pin"]

_MANIFEST_HELP = ("The policy file (default: ./synartesis.yaml or the nearest one above, else "
                  "$SYNARTESIS_HOME/synartesis.yaml).")


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _proxy_hint(name: str, policy_path: str, argv: list[str]) -> str:
    import shlex

    from synartesis.proxy.payload import cli_command

    head = f"{cli_command()} proxy --server {shlex.quote(name)} --manifest {shlex.quote(policy_path)}"
    if "remote-relay" in argv[1:4]:  # a remote server (synartesis or python -m synartesis): the bridge's flags
        flags = list(argv[argv.index("remote-relay") + 1:])
        if flags[:1] == ["--server"]:
            flags = flags[2:]
        return f"{head} {shlex.join(flags)}"
    return f"{head} -- {shlex.join(argv)}"


@app.command(short_help="Start a server and write its policy: the shipped one if recognised, else a fail-closed draft.")
def init(
    name: str = typer.Argument(..., help="The server's name (the name your MCP client uses)."),
    command: Optional[List[str]] = typer.Argument(None, metavar="-- COMMAND [ARGS]...",
                                                  help="How to start the server, after `--`."),
    manifest: Optional[str] = typer.Option(None, "--manifest", help=_MANIFEST_HELP),
) -> None:
    """Start a server, then write its policy: the shipped one if it is recognised and every
    tool it names exists, else a fail-closed draft (readOnlyHint → readonly; the rest held
    with a TODO). Merged into the policy file; your comments and rules are kept.

    Example: synartesis init files -- npx -y @modelcontextprotocol/server-filesystem ~/notes
    """
    argv = list(command or [])
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        from synartesis.errors import UsageError

        raise UsageError("init needs a server name and a command, as: "
                         "synartesis init crm -- npx -y some-mcp-server")
    result = init_server(name, argv[0], argv[1:], manifest=manifest)
    plan = result.plan
    console = _console()
    verb = "WROTE" if result.created else "EXTENDED"
    console.print(Text(f"{verb} {result.policy_path}", style="bold"))
    info = result.server_info
    who = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    console.print(Text(f"{name}: {who}, {result.tool_count} tools"))
    if plan.source == "shipped":
        console.print(Text(f"Recognised as {plan.policy_id}: the shipped policy was used "
                           f"(provenance: {describe_provenance(plan.provenance)})."))
    else:
        console.print(Text(f"Drafted a fail-closed policy: {plan.reason}."))
    for line in plan.declared:  # what the server declared, drafted or refused and why
        console.print(Text(f"  declared by the server: {line}"))
    if plan.todo_count:
        console.print(Text(f"{plan.todo_count} rule(s) marked TODO are held for approval until "
                           f"you review them in {result.policy_path}."))
    console.print(Text("Run your MCP client's server through the proxy:"))
    console.print(Text("  " + _proxy_hint(name, result.policy_path, argv)))
    console.print(Text("  (or let `synartesis install` rewrite the client's config for you)"))


def _render_check(console: Console, result: CheckResult) -> None:
    console.print(Text(f"policy: {result.policy_path}", style="bold"))
    for s in result.servers:
        head = Text(f"{s.name}", style="bold")
        head.append(f"  provenance: {describe_provenance(s.provenance)}")
        console.print(head)
        if not s.started:
            console.print(Text(f"  ✗ not started: {s.error}", style="red"))
        else:
            who = f"{s.server_info.get('name', '?')} {s.server_info.get('version', '')}".strip()
            line = f"  server: {who}, {len(s.tools)} tools advertised"
            if s.recognised:
                line += f" (recognised as {s.recognised})"
            console.print(Text(line))
        for note in s.notes:
            console.print(Text(f"  ! {note}", style="yellow"))
        counts = ", ".join(f"{n} {c}" for c, n in sorted(s.class_counts.items())) or "no rules"
        console.print(Text(f"  rules: {counts}"))
        for m in s.missing:
            console.print(Text(f"  ✗ {m}", style="red"))
        for m in s.unmatched:
            console.print(Text(f"  ✗ rule {m} matches no tool {s.name} advertises", style="red"))
        if s.uncovered:
            console.print(Text(f"  ! no rule covers {', '.join(s.uncovered)}: held for approval at "
                               f"run time (irreversible)", style="yellow"))
        if s.pinned == 0:
            console.print(Text("  pins: none (tool shapes are not checked)"))
        elif s.pin_problems:
            console.print(Text(f"  ✗ pins: {len(s.pin_problems)} problem(s); the proxy refuses every "
                               f"call of {s.name}:", style="red"))
            for p in s.pin_problems:
                console.print(Text(f"      {p}", style="red"))
        elif s.started:
            console.print(Text(f"  pins: {s.pinned} pinned, all hold"))
    n, held = result.rule_count, result.guarded
    loose = sum(len(s.uncovered) for s in result.servers)
    console.print(Text(f"{n} rule{'s' if n != 1 else ''}, {held} of them hold{'s' if held == 1 else ''} calls for approval"
                       + (f"; {loose} tool{'s' if loose != 1 else ''} no rule covers {'are' if loose != 1 else 'is'} "
                          "held too" if loose else "; anything no rule covers is treated as irreversible and held")
                       + "."))
    # the "!" lines printed above: said at the end, so "No problems found." never follows them
    # (new user round 31, 10c); they are no problems, and the exit code stays 0
    warned = sum(len(s.notes) + bool(s.uncovered) for s in result.servers)
    if result.ok and warned:
        console.print(Text(f"{warned} warning{'s' if warned != 1 else ''} (the ! line{'s' if warned != 1 else ''} above), "
                           "no problems.", style="yellow"))
    elif result.ok:
        console.print(Text("No problems found.", style="green"))
    else:
        console.print(Text(f"{result.problems} problem(s) found.", style="bold red"))


@app.command(short_help="Load the policy, start its servers and report what does not match (exit 1 on problems).")
def check(
    server: Optional[List[str]] = typer.Option(None, "--server", help="Check only this server (repeat for several)."),
    manifest: Optional[str] = typer.Option(None, "--manifest", help=_MANIFEST_HELP),
) -> None:
    """Load the policy, start its servers and report: tools rules name that do not exist,
    rules that match nothing, tools no rule covers (held at run time), pins, provenance.
    Exit 1 when there are problems, 2 when the policy does not load."""
    result = check_policy(manifest, server)
    _render_check(_console(), result)
    raise typer.Exit(0 if result.ok else 1)


@app.command(short_help="Print a `pins:` block per server (sha256 of each tool's schema) to paste into the policy.")
def pin(
    server: Optional[List[str]] = typer.Option(None, "--server", help="Pin only this server (repeat for several)."),
    manifest: Optional[str] = typer.Option(None, "--manifest", help=_MANIFEST_HELP),
    write: bool = typer.Option(False, "--write", help="Write the pins into the policy (comments and layout kept) "
                               "instead of printing them."),
) -> None:
    """Start the server(s) and print a `pins:` block per server (sha256 of each tool's name,
    title, description, schemas and annotations) to paste into the policy; with --write, put
    them there (each server's pins: replaced)."""
    import sys

    result = pin_policy(manifest, server)
    for s in result.servers:
        if s.changed:
            sys.stderr.write(f"synartesis: {s.name}: {len(s.changed)} tool(s) differ from the pins in "
                             f"{result.policy_path}: {', '.join(s.changed)}"
                             + (" (replaced)" if write else "") + "\n")
    if write:
        write_pins(result)
        for s in result.servers:
            sys.stdout.write(f"pinned {len(s.pins)} tool(s) of {s.name} in {result.policy_path}\n")
        return
    sys.stdout.write(result.text)
