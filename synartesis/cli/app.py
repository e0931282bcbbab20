"""The typer application; command modules register themselves on :data:`app`."""

from __future__ import annotations

import importlib
import inspect
import os
import sys

import typer

from synartesis.errors import SynartesisError

__all__ = ["app", "run", "COMMAND_MODULES", "StdoutClosed"]

def _hide_flag_types() -> None:
    """typer 0.29 prints a type column for every option, ``<bool>`` for flags too, which reads
    as if ``--dry-run`` took a value. Flags show no type; options with values keep theirs."""
    option = getattr(typer.core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "_synartesis", False):
        return

    def display_type_rich(self, ctx):  # type: ignore[no-untyped-def]
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._synartesis = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich
    argument = getattr(typer.core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "display_type_rich"):
        # an argument's name column says what it is (TARGET, RUNS...): its `<str>` beside it
        # read as a second value (new user round 14)
        argument.display_type_rich = lambda self, ctx: None


_hide_flag_types()

app = typer.Typer(
    name="synartesis",
    help=(
        "An undo layer for AI agents. Every MCP tool call is journalled with the state it "
        "replaced; `undo` puts it back; calls that cannot be undone wait for `approve`.\n\n"
        "The policy is ./synartesis.yaml (or the nearest one above), else "
        "$SYNARTESIS_HOME/synartesis.yaml (default ~/.synartesis); the journal is journal.db beside it."
    ),
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Each module defines typer commands on `app` at import time.
COMMAND_MODULES = (
    "synartesis.cli.journal_cmds",
    "synartesis.cli.undo_cmds",
    "synartesis.cli.install_cmds",
    "synartesis.cli.policy_cmds",
    "synartesis.cli.demo_cmds",
    "synartesis.cli.tui_cmds",
    "synartesis.cli.remote_cmds",
    "synartesis.cli.desktop_cmds",
    "synartesis.cli.team_cmds",
)


# Which module defines each command: a command line imports only its own module, so
# `synartesis install` does not pay for the undo engine, the TUI or the policy tools.
COMMAND_INDEX = {
    "list": "journal_cmds", "show": "journal_cmds", "gates": "journal_cmds", "approve": "journal_cmds",
    "deny": "journal_cmds", "close": "journal_cmds", "audit": "journal_cmds", "watch": "journal_cmds",
    "history": "journal_cmds", "undo": "undo_cmds", "redo": "undo_cmds", "prune": "undo_cmds",
    "install": "install_cmds", "status": "install_cmds", "uninstall": "install_cmds",
    "init": "policy_cmds", "check": "policy_cmds", "pin": "policy_cmds",
    "demo": "demo_cmds",
    "login": "remote_cmds", "logout": "remote_cmds", "serve": "remote_cmds",
    "desktop": "desktop_cmds", "console": "tui_cmds",
    "journal": "team_cmds", "team": "team_cmds",
}


# words a person types for a command under another name, answered with where to look (a new
# user's round 22, #10: `synartesis log` was answered "Did you mean 'login', 'logout'?")
_LOOK_INSTEAD = {
    "log": "what the agent did is in `synartesis show` (each call of the newest session) and `synartesis list` "
           "(every session); undos, redos and approvals are in `synartesis history`",
    "rollback": "`synartesis undo` puts back what the newest session changed (`--dry-run` first shows what it would do)",
    "revert": "`synartesis undo` puts back what the newest session changed (`--dry-run` first shows what it would do)",
}
_LOOK_INSTEAD["logs"] = _LOOK_INSTEAD["log"]
_LOOK_INSTEAD["sessions"] = ("agent sessions are what `synartesis list` shows (each with its runs; `--runs`: one run a "
                              "line); `synartesis show SESSION` lists one session's calls, `synartesis undo SESSION` "
                              "puts back what it changed")
_LOOK_INSTEAD["session"] = _LOOK_INSTEAD["sessions"]
_LOOK_INSTEAD["runs"] = ("`synartesis list --runs` lists the runs (one proxy process each), one a line; "
                         "`synartesis show RUN` lists one run's calls")
_LOOK_INSTEAD["run"] = _LOOK_INSTEAD["runs"]
_LOOK_INSTEAD["actions"] = ("the calls (actions) of the newest session are what `synartesis show` lists; `synartesis "
                            "show SESSION` or `synartesis show RUN` those of one")
_LOOK_INSTEAD["calls"] = _LOOK_INSTEAD["actions"]


def _as_flags(argv: list[str]) -> list[str]:
    """``synartesis version`` as ``--version``, ``synartesis help [CMD…]`` as ``[CMD…] --help``
    (new user round 31, 9h: both were "No such command")."""
    if argv[:1] == ["version"] and "version" not in COMMAND_INDEX:  # `version --json`, `version --help` too
        return ["--version"]
    if argv[:1] == ["help"] and "help" not in COMMAND_INDEX:
        return [*argv[1:], "--help"]
    return argv


def _look_instead(argv: list[str]) -> str | None:
    """The line for ``synartesis WORD`` when WORD is no command but names one (:data:`_LOOK_INSTEAD`), else None."""
    if argv and argv[0] in _LOOK_INSTEAD and argv[0] not in COMMAND_INDEX:
        return f"no command '{argv[0]}': {_LOOK_INSTEAD[argv[0]]}"
    return None


# the form that works, for an option whose value a user is likely to leave out
_VALUE_HINTS = {("undo", "--only"): "to undo one action: `synartesis undo RUN --only SEQ` (or `synartesis undo RUN:SEQ`)"}


def _value_is_an_option(argv: list[str]) -> str | None:
    """The line for an option that takes a value followed by another of its command's options
    (``undo RUN --only --dry-run``: click takes ``--dry-run`` as the seq and says "Input should
    be a valid integer"; new user round 31, 9d), else None. Call after :func:`_load_commands`."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    if not words or words[0] not in COMMAND_INDEX or not any(
            a.startswith("--") and b.startswith("-") for a, b in zip(words, words[1:])):
        return None  # the common case: nothing to look up
    cmd = typer.main.get_command(app)
    rest = words
    while isinstance(getattr(cmd, "commands", None), dict) and rest and rest[0] in cmd.commands:
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    # typer 0.29 carries its own click: its options are told apart by what they have
    options = [p for p in cmd.params if hasattr(p, "is_flag") and getattr(p, "opts", None)]
    names = {o for p in options for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}
    takes = {o: p for p in options if not p.is_flag and not getattr(p, "count", False) for o in p.opts}
    for flag, after in zip(rest, rest[1:]):
        if flag in takes and after in names:
            p = takes[flag]
            shown = p.metavar or _METAVARS.get(flag, flag.lstrip("-").upper().replace("-", "_"))
            hint = _VALUE_HINTS.get((words[0], flag))
            return (f"{flag} needs a value ({shown}), and what follows it is the option {after}"
                    + (f"; {hint}" if hint else ""))
    return None


def _load_commands(argv: list[str] | None = None) -> None:
    first = next((a for a in argv or [] if not a.startswith("-")), None)
    if first in COMMAND_INDEX and not any(a in ("-h", "--help") for a in (argv or [])[:1]):
        importlib.import_module(f"synartesis.cli.{COMMAND_INDEX[first]}")
        return
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command module not written yet
            if exc.name != name:
                raise


def _reflowed(doc: str) -> str:
    """``doc`` (a command's docstring) with each paragraph's line breaks made spaces, so
    ``--help`` wraps it to the terminal: typer keeps a docstring's breaks after its first
    paragraph, and at 80 columns its ~88-column lines broke in two (new user round 10, #10).
    A paragraph that starts with ``\\b`` (click's "keep as written") is kept."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


#: The value's name shown in --help for an option or argument declared without ``metavar=``
#: (typer shows its Python type: ``<str>``, ``<list[str]>``: new user round 14).
_METAVARS = {"--manifest": "FILE", "--journal": "FILE", "--server": "NAME", "--by": "WHO", "--reason": "TEXT",
             "--interval": "S", "--host": "HOST", "--port": "PORT", "--role": "ROLE", "--to": "URL"}


def _name_values(callback) -> None:  # type: ignore[no-untyped-def]
    """Set the metavar of each of ``callback``'s typer parameters that has none: an option that
    takes a value, its entry in :data:`_METAVARS` (else its flag in capitals); an argument,
    its name in capitals."""
    from typer.models import ArgumentInfo, OptionInfo

    for name, param in inspect.signature(callback).parameters.items():
        info = param.default
        if isinstance(info, OptionInfo) and info.metavar is None and not isinstance(info.default, bool):
            flags = [d for d in info.param_decls if d.startswith("--")]
            if flags:
                info.metavar = _METAVARS.get(flags[0], flags[0][2:].upper().replace("-", "_"))
        elif isinstance(info, ArgumentInfo) and info.metavar is None:
            info.metavar = name.upper()


def _reflow_help(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` (and of its sub-apps) that has no ``help=`` its
    docstring, reflowed (:func:`_reflowed`), and every value a name (:func:`_name_values`)."""
    main = typer_app.registered_callback
    if main is not None and main.callback is not None:
        _name_values(main.callback)
    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = _reflowed(info.callback.__doc__)
        if info.callback is not None:
            _name_values(info.callback)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


def _proxy_help() -> None:
    """`synartesis proxy` is dispatched before typer; this keeps it in --help."""


app.command(
    "proxy",
    help="Run the MCP proxy (what client configs launch): proxy --server NAME -- CMD ARGS…",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)(_proxy_help)


class StdoutClosed(Exception):
    """The reader of stdout went away (``synartesis list | head -1``). Not an ``OSError``: typer
    and rich turn a ``BrokenPipeError`` into exit 1, and a closed pipe is no failure."""


class _Stdout:
    """``sys.stdout`` while a command runs with stdout not a terminal: a write or flush that
    finds the pipe closed points fd 1 at /dev/null (nothing more can fail, the interpreter's
    last flush included) and raises :class:`StdoutClosed`. Everything else is the stream's."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self._inner = inner

    def _closed(self) -> StdoutClosed:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._inner.fileno())
            os.close(null)
        except (OSError, ValueError):  # not a real file (a test's capture)
            pass
        return StdoutClosed()

    def write(self, text: str) -> int:
        try:
            return self._inner.write(text)
        except BrokenPipeError:
            raise self._closed() from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise self._closed() from None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._inner, name)


def _invoke(argv: list[str]) -> int:
    try:
        # standalone mode: typer/click print usage errors and exit 2, and honour typer.Exit
        app(args=argv, prog_name="synartesis", standalone_mode=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    try:
        sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at exit
    except StdoutClosed:
        pass  # the command had finished: its own exit code stands
    return code


def run(argv: list[str]) -> int:
    """Run the CLI on ``argv``; return the exit code (0 ok, 1 refused/halted, 2 usage).

    A closed stdout (the reader of a pipe exited: ``| head -1``) is no error: a command cut
    short while printing ends quietly with exit 0, one that had finished keeps its own exit
    code (so do ``undo`` and ``redo``, which print after the work:
    :func:`synartesis.cli.undo_cmds.render_undo`)."""
    argv = _as_flags(argv)
    instead = _look_instead(argv)
    if instead:
        sys.stderr.write(f"synartesis: {instead}\n")
        return 2
    _load_commands(argv)
    if any(a in ("-h", "--help") for a in argv):
        _reflow_help(app)
    else:
        eaten = _value_is_an_option(argv)
        if eaten:
            sys.stderr.write(f"synartesis: {eaten}\n")
            return 2
    piped = sys.stdout is not None and not _isatty(sys.stdout)
    real = sys.stdout
    if piped:
        sys.stdout = _Stdout(real)  # type: ignore[assignment]
    try:
        return _invoke(argv)
    except SynartesisError as exc:
        from synartesis.printable import printable  # a message can quote a session name or a tool's text
        sys.stderr.write(f"synartesis: {printable(exc.message, keep=chr(10))}\n")
        return exc.exit_code
    except (StdoutClosed, BrokenPipeError):
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: no traceback (nor what it quotes) reaches the user
        if os.environ.get("SYNARTESIS_DEBUG"):
            raise
        sys.stderr.write(f"synartesis: internal error ({type(exc).__name__}); this is a bug in synartesis. "
                         "Run again with SYNARTESIS_DEBUG=1 to see where it happened.\n")
        return 1
    finally:
        if piped:
            sys.stdout = real


def _isatty(stream) -> bool:  # type: ignore[no-untyped-def]
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or not a file
        return False
