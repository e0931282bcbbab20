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
    container = getattr(table, "value", None)
    insert_after = getattr(container, "_insert_after", None)
    if insert_after is None:
        table[key] = item
        return
    insert_after(after, key, item)


def delete_item(table: Any, key: str) -> None:
    """Remove ``table[key]`` if present."""
    if key in table:
        del table[key]
