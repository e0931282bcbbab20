"""TOML entries edited in place with tomlkit: comments, layout and unknown keys kept.

Contract (CLIENTS.md §1.4, §4 rows 4, 5 and 12):
- A file is parsed twice: by :mod:`tomllib` (strict TOML 1.0; its error names line and column)
  and by tomlkit (the editable document). A file either refuses is never edited.
- Only the ``command`` and ``args`` items of one server table change; every other item, its
  comments and the tables around it render exactly as they were. New values are built from
  TOML text (so strings are quoted by the TOML library, never by hand — a raw Windows
  backslash in a basic string bricks Codex, openai/codex#37616).
- The original item texts are kept so :func:`restore_items` puts them back verbatim.
- Nothing here touches the filesystem.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any, Sequence

import tomlkit
from tomlkit.exceptions import TOMLKitError

__all__ = [
    "TomlSyntaxError",
    "decode",
    "encode",
    "parse",
    "loads",
    "editable",
    "find_table",
    "item_text",
    "string_text",
    "set_item_text",
    "delete_item",
    "dumps",
    "scan_spans",
]


class TomlSyntaxError(ValueError):
    """Text that is not TOML 1.0 (or that tomlkit cannot edit). ``line``/``col`` 1-based or 0."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        self.line, self.col, self.detail = line, col, message
        where = f"line {line} column {col}: " if line else ""
        super().__init__(where + message)


_AT_RE = re.compile(r"\(at line (\d+), column (\d+)\)")


def decode(data: bytes) -> tuple[str, bool]:
    """Bytes → (text without BOM, whether a BOM was present).

    Raises:
        TomlSyntaxError: not UTF-8.
    """
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return data[3 if bom else 0:].decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        raise TomlSyntaxError(f"not UTF-8 text (byte {exc.start})") from None


def encode(text: str, bom: bool) -> bytes:
    """Inverse of :func:`decode`."""
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def loads(text: str) -> dict[str, Any]:
    """Strict TOML 1.0 → plain values (tomllib).

    Raises:
        TomlSyntaxError: not TOML 1.0 (duplicate keys included), with line and column.
    """
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TomlSyntaxError("nested too deeply; synartesis does not edit such a file") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT_RE.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        raise TomlSyntaxError(_AT_RE.sub("", msg).strip(), line, col) from None


def parse(text: str) -> tuple[dict[str, Any], Any]:
    """Parse ``text`` → (plain value from tomllib, tomlkit document).

    Raises:
        TomlSyntaxError: the text is not TOML 1.0 (duplicate keys included) or tomlkit
            cannot represent it faithfully.
    """
    plain = loads(text)
    return plain, editable(text)


def editable(text: str) -> Any:
    """The tomlkit document of ``text`` (already known to be valid TOML).

    Raises:
        TomlSyntaxError: tomlkit cannot parse it or does not reproduce it byte for byte.
    """
    try:
        doc = tomlkit.parse(text)
    except RecursionError:
        raise TomlSyntaxError("cannot be edited safely: nested too deeply") from None
    except (TOMLKitError, ValueError) as exc:  # tomlkit stricter/looser than tomllib
        raise TomlSyntaxError(f"cannot be edited safely: {exc}") from None
    if doc.as_string() != text:
        raise TomlSyntaxError("cannot be edited safely: the TOML editor does not reproduce it")
    return doc


def dumps(doc: Any) -> str:
    """The document's text."""
    return str(doc.as_string())


def find_table(doc: Any, path: Sequence[str]) -> Any | None:
    """The table (or inline table) at ``path`` in a tomlkit document, else None."""
    node: Any = doc
    for key in path:
        try:
            if key not in node:
                return None
            node = node[key]
        except (TypeError, KeyError, TOMLKitError):
            return None
    return node if hasattr(node, "keys") else None


def item_text(table: Any, key: str) -> str | None:
    """The TOML text of ``table[key]``'s value (without its trailing comment), else None."""
    if key not in table:
        return None
    item = table[key]
    as_string = getattr(item, "as_string", None)
    return str(as_string()) if as_string else None


def string_text(value: str) -> str:
    """``value`` as a TOML string literal, quoted by tomlkit."""
    return str(tomlkit.string(value).as_string())


def _item_from_text(text: str, nl: str) -> Any:
    return tomlkit.parse("x = " + text + nl)["x"]


def set_item_text(table: Any, key: str, text: str, *, after: str | None = None,
                  nl: str = "\n") -> None:
    """Set ``table[key]`` to the value written as TOML ``text``.

    An existing item keeps its place and trailing comment; a new one goes right after
    ``after`` when that key exists (else at the end of the table).

    Raises:
        TomlSyntaxError: ``text`` is not a TOML value.
    """
    try:
        item = _item_from_text(text, nl)
    except (TOMLKitError, ValueError) as exc:
        raise TomlSyntaxError(f"not a TOML value: {exc}") from None
    if key in table or after is None or after not in table:
        table[key] = item
        return
    if not _insert_after(getattr(table, "value", None), after, key, item):
        table[key] = item


def _insert_after(container: Any, after: str, key: str, item: Any) -> bool:
    """Insert ``key = item`` right after ``after`` in a tomlkit container; False if it can't.

    tomlkit has no public insert. ``Container._insert_after`` went away in tomlkit 0.15.3
    (CI's fresh install moved a new ``args`` to the end of its table), so the body position
    is found from ``_map`` and ``_insert_at`` is used, which both versions have. Anything else
    leaves the caller to append, which is still the same TOML.
    """
    insert_at = getattr(container, "_insert_at", None)
    index = getattr(container, "_map", {}).get(after) if insert_at else None
    if isinstance(index, tuple):
        index = max(index)
    body = getattr(container, "_body", None)
    if not isinstance(index, int) or body is None or index + 1 >= len(body):
        return False
    try:
        insert_at(index + 1, key, item)
    except (ValueError, KeyError, TypeError):
        return False
    return True


def delete_item(table: Any, key: str) -> None:
    """Remove ``table[key]`` if present."""
    if key in table:
        del table[key]


# --------------------------------------------------------------------------------------------
# A span scanner for TOML *values* (arrays and inline tables), so edits inside them can be made
# on the text itself. tomlkit re-renders an inline table it edits (a CRLF file got a "\r"
# inside its braces, and removing a key left a double space: issue 9 item 8); a text splice
# keeps every other character. Only called on text tomllib has already accepted.


class ValueSpan:
    """One value's span ``[start, end)``; for an inline table its members, for an array its items.

    Attributes:
        kind: ``string`` | ``array`` | ``table`` (inline) | ``scalar``.
        members: for ``table``: ``(keys, key_start, value)`` in order (``keys`` is the dotted
            key decoded into its parts).
        items: for ``array``: the item values in order.
    """

    __slots__ = ("kind", "start", "end", "members", "items")

    def __init__(self, kind: str, start: int, end: int) -> None:
        self.kind, self.start, self.end = kind, start, end
        self.members: list[tuple[tuple[str, ...], int, "ValueSpan"]] = []
        self.items: list["ValueSpan"] = []

    def member(self, key: str) -> "ValueSpan | None":
        """The value of the single-part key ``key`` (None when absent or only dotted)."""
        for keys, _start, value in self.members:
            if keys == (key,):
                return value
        return None


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}#\r\n]")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.t = text

    def ws(self, i: int, newlines: bool = False) -> int:
        t = self.t
        while i < len(t):
            c = t[i]
            if c in " \t":
                i += 1
            elif newlines and c in "\r\n":
                i += 1
            elif newlines and c == "#":
                while i < len(t) and t[i] not in "\r\n":
                    i += 1
            else:
                break
        return i

    def string(self, i: int) -> int:
        t = self.t
        q = t[i]
        if t.startswith(q * 3, i):
            j = t.find(q * 3, i + 3)
            while q == '"' and j > 0 and _escaped(t, j):
                j = t.find(q * 3, j + 1)
            if j < 0:
                raise TomlSyntaxError("unterminated multi-line string")
            extra = 0  # a run of up to five quotes: the last three close the string
            while extra < 2 and t.startswith(q, j + 3 + extra):
                extra += 1
            return j + 3 + extra
        j = i + 1
        while j < len(t):
            c = t[j]
            if q == '"' and c == "\\":
                j += 2
                continue
            if c == q:
                return j + 1
            if c in "\r\n":
                break
            j += 1
        raise TomlSyntaxError("unterminated string")

    def key(self, i: int) -> tuple[tuple[str, ...], int]:
        parts: list[str] = []
        while True:
            i = self.ws(i)
            c = self.t[i:i + 1]
            if c in ('"', "'"):
                end = self.string(i)
                parts.append(loads("k = " + self.t[i:end])["k"])
                i = end
            else:
                m = _BARE_KEY.match(self.t, i)
                if not m:
                    raise TomlSyntaxError("expected a key")
                parts.append(m.group())
                i = m.end()
            j = self.ws(i)
            if self.t.startswith(".", j):
                i = j + 1
                continue
            return tuple(parts), i

    def value(self, i: int) -> ValueSpan:
        t = self.t
        c = t[i:i + 1]
        if c in ('"', "'"):
            return ValueSpan("string", i, self.string(i))
        if c == "[":
            arr = ValueSpan("array", i, i)
            j = self.ws(i + 1, newlines=True)
            while not t.startswith("]", j):
                item = self.value(j)
                arr.items.append(item)
                j = self.ws(item.end, newlines=True)
                if t.startswith(",", j):
                    j = self.ws(j + 1, newlines=True)
                elif not t.startswith("]", j):
                    raise TomlSyntaxError("expected ',' or ']'")
            arr.end = j + 1
            return arr
        if c == "{":
            return self.inline(i)
        m = _SCALAR_END.search(t, i)
        end = m.start() if m else len(t)
        while end > i and t[end - 1] in " \t":
            end -= 1
        if end == i:
            raise TomlSyntaxError("expected a value")
        return ValueSpan("scalar", i, end)

    def inline(self, i: int) -> ValueSpan:
        t = self.t
        table = ValueSpan("table", i, i)
        j = self.ws(i + 1)
        if t.startswith("}", j):
            table.end = j + 1
            return table
        while True:
            key_start = self.ws(j)
            keys, j = self.key(key_start)
            j = self.ws(j)
            if not t.startswith("=", j):
                raise TomlSyntaxError("expected '='")
            value = self.value(self.ws(j + 1))
            table.members.append((keys, key_start, value))
            j = self.ws(value.end)
            if t.startswith(",", j):
                j += 1
                continue
            if t.startswith("}", j):
                table.end = j + 1
                return table
            raise TomlSyntaxError("expected ',' or '}'")


def _escaped(t: str, j: int) -> bool:
    n = 0
    while j - 1 - n >= 0 and t[j - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def scan_value(text: str, start: int = 0) -> ValueSpan:
    """Spans of the TOML value that starts at ``text[start]`` (an array, inline table, …).

    Raises:
        TomlSyntaxError: the text there is not a value this scanner reads.
    """
    try:
        return _Scanner(text).value(start)
    except IndexError:
        raise TomlSyntaxError("unexpected end of the value") from None


def _walk(text: str) -> list[tuple[str, tuple[str, ...], int, int, ValueSpan | None]]:
    """Every table header and ``key = value`` in order: ``(kind, path, start, end, value)``
    (``value`` None for a header). The path joins the header with the dotted key."""
    sc = _Scanner(text)
    t = text
    out: list[tuple[str, tuple[str, ...], int, int, ValueSpan | None]] = []
    table: tuple[str, ...] = ()
    i = 0
    try:
        while True:
            i = sc.ws(i, newlines=True)
            if i >= len(t):
                return out
            if t[i] == "[":
                double = t.startswith("[[", i)
                keys, j = sc.key(i + (2 if double else 1))
                j = sc.ws(j)
                close = "]]" if double else "]"
                if not t.startswith(close, j):
                    raise TomlSyntaxError("expected the end of a table header")
                out.append(("table", keys, i, j + len(close), None))
                table, i = keys, j + len(close)
                continue
            start = i
            keys, j = sc.key(i)
            j = sc.ws(j)
            if not t.startswith("=", j):
                raise TomlSyntaxError("expected '='")
            value = sc.value(sc.ws(j + 1))
            out.append(("item", (*table, *keys), start, value.end, value))
            i = value.end
    except IndexError:
        raise TomlSyntaxError("unexpected end of the document") from None


def scan_document(text: str) -> list[tuple[tuple[str, ...], ValueSpan]]:
    """Every ``key = value`` of a TOML document: (full key path, the value's spans), in order.

    The path joins the table header (``[a.b]`` / ``[[a.b]]``) with the dotted key. Cheaper
    than a tomlkit parse; used to show a file with its secrets hidden.

    Raises:
        TomlSyntaxError: the text is not TOML this scanner reads.
    """
    return [(path, value) for kind, path, _s, _e, value in _walk(text) if value is not None]


def scan_spans(text: str) -> list[tuple[str, tuple[str, ...], int, int]]:
    """Every table header and ``key = value`` of a TOML document, in order, with where it is:
    ``("table", path, start, end)`` for a header (``[[…]]`` too), ``("item", full key path,
    key start, value end)`` for a key/value. Lets a caller edit whole lines of one entry.

    Raises:
        TomlSyntaxError: the text is not TOML this scanner reads.
    """
    return [(kind, path, start, end) for kind, path, start, end, _v in _walk(text)]
