"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import typer
from rich.console import Console

__all__ = ["ManifestOpt", "JournalOpt", "JsonOpt", "console", "err_console", "print_json", "printable", "shorten",
           "visible", "journal_for"]

ManifestOpt = typer.Option(None, "--manifest", help="Policy file (default: ./synartesis.yaml upward, else $SYNARTESIS_HOME/synartesis.yaml).", metavar="P")
JournalOpt = typer.Option(None, "--journal", help="Journal file (default: journal.db beside the policy).", metavar="P")
JsonOpt = typer.Option(False, "--json", help="Machine-readable output.")


def _no_color() -> bool:
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def console() -> Console:
    """stdout console: colour only on a terminal without NO_COLOR; piped output is not wrapped
    (scripts and grep see whole lines)."""
    tty = sys.stdout.isatty()
    return Console(no_color=_no_color(), highlight=False, soft_wrap=not tty, width=None if tty else 4096)


def err_console() -> Console:
    return Console(stderr=True, no_color=_no_color(), highlight=False)


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON to stdout. A lone surrogate (a server can return one,
    JSON can escape it) cannot be written as UTF-8: then the text is written with every
    non-ASCII character escaped, which is the same JSON."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=2, ensure_ascii=True, default=str)
    sys.stdout.write(text + "\n")


def printable(text: str) -> str:
    """``text`` with what the terminal's encoding cannot carry (a lone surrogate) escaped
    (``\\ud800``), so printing it never raises."""
    enc = sys.stdout.encoding or "utf-8"
    try:
        text.encode(enc)
        return text
    except UnicodeEncodeError:
        return text.encode(enc, "backslashreplace").decode(enc)


def shorten(value: Any, limit: int = 96) -> str:
    """Compact JSON (or text) cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


_INVISIBLE = {c: f"\\u{c:04x}" for c in list(range(0x200b, 0x2010)) + list(range(0x202a, 0x202f))
              + list(range(0x2066, 0x206a)) + [0xfeff, 0x061c]}


def visible(value: Any) -> str:
    """Compact JSON with bidi overrides and zero-width characters escaped, so what a person
    approves is what they see."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_INVISIBLE)


def journal_for(manifest: str | None, journal: str | None) -> Any:
    """Open the journal a command works on (never creates one) and say on stderr what opening
    found and fixed (a journal or its folder open to others)."""
    from synartesis.services.context import open_journal

    j = open_journal(manifest, journal)
    for w in j.warnings:
        err_console().print(f"synartesis: warning: {w}", markup=False, highlight=False)
    return j
