"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import typer
from rich.console import Console, RenderHook
from rich.markup import escape
from rich.segment import Segment

from synartesis.printable import printable

__all__ = ["ManifestOpt", "JournalOpt", "JsonOpt", "console", "err_console", "print_json", "printable", "shorten",
           "visible", "shown", "journal_for", "journal_named", "run_status", "run_servers", "run_line"]

ManifestOpt = typer.Option(None, "--manifest", help="Policy file (default: ./synartesis.yaml upward, else $SYNARTESIS_HOME/synartesis.yaml).", metavar="FILE")
JournalOpt = typer.Option(None, "--journal", help="Journal file (default: journal.db beside the policy).", metavar="FILE")
JsonOpt = typer.Option(False, "--json", help="Machine-readable output.")


def _no_color() -> bool:
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


class _Printable:
    """A renderable whose text segments go through :func:`printable` (styles are applied after
    this, so synartesis's own colours still reach the terminal; the text's never do)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, con: Console, options: Any) -> Any:
        for seg in con.render(self.inner, options):
            yield seg if seg.control else Segment(printable(seg.text, keep="\n\t"), seg.style)


class _PrintableHook(RenderHook):
    def process_renderables(self, renderables: list) -> list:
        return [_Printable(r) for r in renderables]


def _guarded(con: Console) -> Console:
    con.push_render_hook(_PrintableHook())
    return con


def console() -> Console:
    """stdout console: colour only on a terminal without NO_COLOR; piped output is not wrapped
    (scripts and grep see whole lines). Whatever it prints goes through :func:`printable`: no
    control character an agent or a server wrote reaches the terminal (markup still needs
    :func:`shown`)."""
    tty = sys.stdout.isatty()
    return _guarded(Console(no_color=_no_color(), highlight=False, soft_wrap=not tty, width=None if tty else 4096))


def err_console() -> Console:
    """stderr console, guarded like :func:`console`."""
    return _guarded(Console(stderr=True, no_color=_no_color(), highlight=False))


def shown(value: Any, line: bool = False) -> str:
    """Agent- or server-controlled text (a tool name, a note, a diff line, a session name) ready
    to put in rich markup: control characters made visible (:func:`printable`) and markup
    escaped. ``line``: one line's worth (a name), so a newline in it is spelled ``\\n`` too;
    otherwise newlines and tabs stay. Not a string: its ``str()``."""
    text = value if isinstance(value, str) else str(value)
    return escape(printable(text, keep="" if line else "\n\t"))


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]")


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON to stdout. Characters a terminal acts on or stdout cannot
    encode (C1 controls, bidi and zero-width characters, lone surrogates: JSON already escapes C0)
    are written as ``\\uXXXX`` escapes, which parse back to the same value."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def shorten(value: Any, limit: int = 96) -> str:
    """Compact JSON (or text) cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def visible(value: Any) -> str:
    """Compact JSON with control, bidi and zero-width characters escaped (:func:`printable`), so
    what a person approves is what they see."""
    return printable(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def journal_named(path: Any, manifest: str | None = None, journal: str | None = None) -> str:
    """``journal: PATH``, the journal a command read, as its output names it (new user round 31,
    #4: `gates` said "Nothing is waiting" of a project's journal while the installed proxies'
    journal held a call). When a ``synartesis.yaml`` found from this folder up chose it and the
    installed proxies write elsewhere, that other journal is named too. Plain text (no markup)."""
    from synartesis.services.context import installed_journal_elsewhere

    line = f"journal: {printable(str(path))}"
    other = installed_journal_elsewhere(manifest, journal)
    if other is not None:
        import shlex
        line += (f", beside the synartesis.yaml found from this folder up; the installed proxies write to {printable(str(other))}"
                 f" (add --journal {shlex.quote(printable(str(other)))} to read that one)")
    return line


class _Opened:
    """The journal :func:`journal_for` opened, as a context manager: a "no action/run/session
    matches X" error raised inside it names the journal that was searched (new user round 31,
    #4: `approve d925746c` said "no action matches d925746c" of a project's journal)."""

    _NOT_FOUND = re.compile(r"no (action|run|session|run or session) matches ")

    def __init__(self, j: Any, manifest: str | None, journal: str | None) -> None:
        self.j, self.manifest, self.journal = j, manifest, journal

    def __enter__(self) -> Any:
        return self.j.__enter__()

    def __exit__(self, kind, exc, tb) -> Any:  # type: ignore[no-untyped-def]
        from synartesis.errors import UsageError
        handled = self.j.__exit__(kind, exc, tb)
        if isinstance(exc, UsageError) and self._NOT_FOUND.match(exc.message) and " in the journal " not in exc.message:
            exc.message = f"{exc.message} in the {journal_named(self.j.path, self.manifest, self.journal).replace('journal: ', 'journal ', 1)}"
            exc.args = (exc.message,)
        return handled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.j, name)


def journal_for(manifest: str | None, journal: str | None) -> Any:
    """Open the journal a command works on (never creates one) and say on stderr what opening
    found and fixed (a journal or its folder open to others). Use it in a ``with``."""
    from synartesis.services.context import open_journal

    j = open_journal(manifest, journal)
    for w in j.warnings:
        err_console().print(f"synartesis: warning: {w}", markup=False, highlight=False)
    return _Opened(j, manifest, journal)


def run_status(r: Any) -> str:
    """A run's status as ``list`` shows it (``r``: a ``RunRow``): "compensated (unverified: 1)",
    "complete (proxy gone)"."""
    return r.shown_status + (" (proxy gone)" if r.stale else "")


def run_servers(r: Any) -> str:
    """A run's servers, comma-separated (``-`` for none): what tells two runs of one agent apart."""
    return shown(", ".join(sorted(r.servers)) or "-", line=True)


def run_line(r: Any) -> str:
    """One run on one line, as ``prune`` names it: id, agent, servers, status, actions."""
    return (f"{r.id[:8]}  {shown(r.label or '-', line=True)}  {run_servers(r)}  {run_status(r)}  "
            f"{r.actions} action{'s' if r.actions != 1 else ''}")
