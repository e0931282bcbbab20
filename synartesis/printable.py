"""Text an agent or a server controls, made safe to put in front of a person.

A held call's arguments, a diff of what it would write, a tool name, a client's
``clientInfo.name``, a session name or a note can hold terminal control sequences (ESC
``[1A`` ``[2K`` and a carriage return erase a line and print another over it), bidi overrides
and zero-width characters (the text shown is not the text approved), or lone surrogates (which
stdout cannot encode: a traceback instead of the output). :func:`printable` spells each of
them as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``, ``\\ud800``), so what a person reads is
what the agent sent, and printing never fails. Every printer of the CLI goes through it (the
consoles of :mod:`synartesis.cli.common` apply it to every segment they write).
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

# Unicode categories made visible: controls (C0, DEL, C1), format characters (bidi overrides
# and isolates, zero-width space/joiners, the BOM, soft hyphen), surrogates, and the line and
# paragraph separators (which terminals may break a line on).
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


def _spell(c: str) -> str:
    o = ord(c)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control, format, surrogate and line-separator character spelled as a
    visible escape (``\\x1b``, ``\\r``, ``\\u202e``, ``\\ud800``); characters in ``keep`` (say
    ``"\\n\\t"`` for a text printed over several lines) stay as they are. Other text, non-ASCII
    included, is unchanged. Never raises; the result always encodes as UTF-8."""
    if text.isprintable():  # the common case: nothing to do, at C speed
        return text
    return "".join(_spell(c) if c not in keep and unicodedata.category(c) in _HIDDEN else c for c in text)
