"""Strict JSON with source spans, and surgical edits that keep every other byte.

Contract (CLIENTS.md §0.1, §2 "Formatting/key order/indent/CRLF/BOM/trailing newline"):
- :func:`parse` accepts RFC 8259 JSON only (what ``JSON.parse`` accepts: no comments, no trailing
  commas, no NaN) and refuses duplicate keys, naming line and column — a dict round-trip would
  silently drop one of them (anthropics/claude-code#90438).
- Every node knows its span in the text, so an edit replaces exactly the characters of one value
  (or inserts/removes exactly one member) and nothing else: indentation, key order, line endings,
  a BOM, the final newline and tabs outside the edit stay as they were.
- New text is formatted like its surroundings (same indent, same newline style, same
  ``key: value`` separator); strings copied from the original keep their original escapes.
- Nothing here touches the filesystem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = [
    "JsonSyntaxError",
    "Node",
    "Member",
    "decode",
    "encode",
    "parse",
    "newline_of",
    "find",
    "apply_edits",
    "dumps_string",
    "indent_unit",
    "line_indent",
    "format_array",
    "insert_member",
    "remove_member",
    "dump_value",
    "Edit",
    "MAX_DEPTH",
]

#: Deepest nesting :func:`parse` accepts. The parser, the value copies and the checks that
#: follow all recurse; past this a file is refused with its location instead of reaching
#: Python's recursion limit (issue 9 item 5: 450 levels gave a RecursionError traceback).
#: Client configs are a handful of levels deep.
MAX_DEPTH = 128

Edit = tuple[int, int, str]
"""(start, end, replacement) over character offsets of the text being edited."""

_BOM = "\ufeff"
_WS_RE = re.compile(r"[ \t\n\r]*")
_STR_RE = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUM_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class JsonSyntaxError(ValueError):
    """Text that is not strict JSON. ``line``/``col`` are 1-based."""

    def __init__(self, message: str, text: str | None = None, pos: int = 0) -> None:
        self.pos = pos
        located = text is not None
        text = text or ""
        self.line = text.count("\n", 0, pos) + 1
        self.col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        self.detail = message
        self.located = located
        super().__init__(f"line {self.line} column {self.col}: {message}" if located else message)


@dataclass(slots=True)
class Node:
    """One JSON value and its span ``text[start:end]``."""

    kind: str  # object | array | string | number | true | false | null
    start: int
    end: int
    value: Any
    members: list["Member"] | None = None
    items: list["Node"] | None = None

    def member(self, key: str) -> "Member | None":
        """The member named ``key`` of an object node (None when absent or not an object)."""
        for m in self.members or ():
            if m.key == key:
                return m
        return None


@dataclass(slots=True)
class Member:
    """``"key": value`` inside an object; ``key_start``/``key_end`` span the quoted key."""

    key: str
    key_start: int
    key_end: int
    node: Node


_LITERALS = (("true", True), ("false", False), ("null", None))


@dataclass
class _Parser:
    text: str
    depth: int = 0

    def err(self, message: str, pos: int) -> JsonSyntaxError:
        if self.text.startswith(("//", "/*", "#"), pos):
            message = "comments are not allowed in this JSON file"
        return JsonSyntaxError(message, self.text, pos)

    def ws(self, i: int) -> int:
        m = _WS_RE.match(self.text, i)
        return m.end() if m else i

    def string(self, i: int) -> tuple[str, int]:
        m = _STR_RE.match(self.text, i)
        if not m:
            # Find the reason: unterminated, control character, or bad escape.
            j = i + 1
            t = self.text
            while j < len(t):
                c = t[j]
                if c == '"':
                    break
                if c == "\\":
                    if j + 1 >= len(t) or t[j + 1] not in '"\\/bfnrtu':
                        raise self.err("invalid escape in string", j)
                    j += 2
                    continue
                if ord(c) < 0x20:
                    raise self.err("control character in string (must be escaped)", j)
                j += 1
            raise self.err("unterminated string" if j >= len(t) else "invalid \\u escape", i)
        return json.loads(m.group()), m.end()

    def value(self, i: int) -> Node:
        t = self.text
        if i >= len(t):
            raise self.err("unexpected end of file", i)
        c = t[i]
        if c == "{":
            return self.obj(i)
        if c == "[":
            return self.arr(i)
        if c == '"':
            s, end = self.string(i)
            return Node("string", i, end, s)
        if c == "-" or c.isdigit():
            m = _NUM_RE.match(t, i)
            if not m or m.end() == i or m.group() == "-":
                raise self.err("invalid number", i)
            return Node("number", i, m.end(), json.loads(m.group()))
        for lit, val in _LITERALS:
            if t.startswith(lit, i):
                return Node(lit, i, i + len(lit), val)
        raise self.err(f"unexpected character {c!r}", i)

    def _enter(self, i: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err(f"nested more than {MAX_DEPTH} levels deep; synartesis does not edit such a file", i)

    def obj(self, start: int) -> Node:
        self._enter(start)
        t = self.text
        i = self.ws(start + 1)
        members: list[Member] = []
        value: dict[str, Any] = {}
        if t.startswith("}", i):
            self.depth -= 1
            return Node("object", start, i + 1, value, members=members)
        while True:
            if not t.startswith('"', i):
                if t.startswith("}", i) and members:
                    raise self.err("trailing comma before '}'", i)
                raise self.err("expected a string key", i)
            key, key_end = self.string(i)
            if key in value:
                first = next(m for m in members if m.key == key)
                e = JsonSyntaxError("", t, first.key_start)
                raise self.err(f"duplicate key {key!r} (first at line {e.line} column {e.col})", i)
            key_start = i
            i = self.ws(key_end)
            if not t.startswith(":", i):
                raise self.err("expected ':' after the key", i)
            node = self.value(self.ws(i + 1))
            members.append(Member(key, key_start, key_end, node))
            value[key] = node.value
            i = self.ws(node.end)
            if t.startswith(",", i):
                i = self.ws(i + 1)
                continue
            if t.startswith("}", i):
                self.depth -= 1
                return Node("object", start, i + 1, value, members=members)
            raise self.err("expected ',' or '}'", i)

    def arr(self, start: int) -> Node:
        self._enter(start)
        t = self.text
        i = self.ws(start + 1)
        items: list[Node] = []
        if t.startswith("]", i):
            self.depth -= 1
            return Node("array", start, i + 1, [], items=items)
        while True:
            if t.startswith("]", i) and items:
                raise self.err("trailing comma before ']'", i)
            node = self.value(i)
            items.append(node)
            i = self.ws(node.end)
            if t.startswith(",", i):
                i = self.ws(i + 1)
                continue
            if t.startswith("]", i):
                self.depth -= 1
                return Node("array", start, i + 1, [n.value for n in items], items=items)
            raise self.err("expected ',' or ']'", i)


def decode(data: bytes) -> tuple[str, bool]:
    """Bytes → (text without BOM, whether a UTF-8 BOM was present).

    Raises:
        JsonSyntaxError: the bytes are not UTF-8.
    """
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3 if bom else 0:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonSyntaxError(f"not UTF-8 text (byte {exc.start})") from None
    return text, bom


def encode(text: str, bom: bool) -> bytes:
    """Inverse of :func:`decode`."""
    return (_BOM if bom else "").encode("utf-8") + text.encode("utf-8")


def parse(text: str) -> Node:
    """Parse strict JSON text into a span tree.

    Raises:
        JsonSyntaxError: not JSON, or a duplicate key (message names line and column).
    """
    p = _Parser(text)
    i = p.ws(0)
    root = p.value(i)
    end = p.ws(root.end)
    if end != len(text):
        raise p.err("unexpected data after the JSON value", end)
    return root


def newline_of(text: str) -> str:
    """The file's newline: CRLF when the first line break is CRLF, else LF."""
    i = text.find("\n")
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def find(root: Node, path: Sequence[str]) -> Node | None:
    """The node at an object-key path (None when a step is missing or not an object)."""
    node: Node | None = root
    for key in path:
        if node is None or node.kind != "object":
            return None
        m = node.member(key)
        node = m.node if m else None
    return node


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits (any order) and return the new text.

    Raises:
        ValueError: two edits overlap.
    """
    out = text
    last = None
    for s, e, rep in sorted(edits, key=lambda x: (x[0], x[1]), reverse=True):
        if last is not None and e > last:
            raise ValueError("overlapping edits")
        out = out[:s] + rep + out[e:]
        last = s
    return out


def dumps_string(s: str) -> str:
    """A JSON string literal, non-ASCII kept as is (escaped only when not encodable)."""
    out = json.dumps(s, ensure_ascii=False)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = json.dumps(s)
    return out


def line_indent(text: str, pos: int) -> str | None:
    """Whitespace from the start of ``pos``'s line to ``pos``; None if anything else is there."""
    ls = text.rfind("\n", 0, pos) + 1
    prefix = text[ls:pos]
    return prefix if prefix.strip(" \t") == "" else None


def _leading_ws(text: str, pos: int) -> str:
    """Leading whitespace of the line containing ``pos``."""
    ls = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[ls:])
    return m.group() if m else ""


def indent_unit(text: str, obj: Node) -> str:
    """One level of indentation as used by ``obj`` (or the document root), default two spaces."""
    for node in (obj,):
        if node.kind == "object" and node.members:
            mi = line_indent(text, node.members[0].key_start)
            ci = _leading_ws(text, node.start)
            if mi and mi.startswith(ci) and len(mi) > len(ci):
                return mi[len(ci):]
    return "  "


def dump_value(value: Any, base_indent: str, unit: str, nl: str) -> str:
    """``value`` as multi-line JSON whose inner lines start with ``base_indent``."""
    text = json.dumps(value, ensure_ascii=False, indent=unit)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=unit)
    return text.replace("\n", nl + base_indent)


def format_array(elements: Sequence[str], text: str, like: Node | None, *,
                 multiline_indent: str | None = None, close_indent: str = "",
                 nl: str = "\n") -> str:
    """An array of already-serialised ``elements``, formatted like the array ``like``.

    When ``like`` is None the array is multi-line with ``multiline_indent`` (and its ``]`` at
    ``close_indent``) if that is given, else on one line.
    """
    if like is not None:
        src = text[like.start:like.end]
        items = like.items or []
        if "\n" in src:
            close = line_indent(text, like.end - 1)
            close = close if close is not None else _leading_ws(text, like.end - 1)
            ind = line_indent(text, items[0].start) if items else None
            if ind is None:
                ind = close + "  "
            return "[" + nl + ("," + nl).join(ind + e for e in elements) + nl + close + "]"
        sep = text[items[0].end:items[1].start] if len(items) >= 2 else ", "
        pad_l = text[like.start + 1:items[0].start] if items else ""
        pad_r = text[items[-1].end:like.end - 1] if items else ""
        return "[" + pad_l + sep.join(elements) + pad_r + "]"
    if multiline_indent is not None:
        return ("[" + nl + ("," + nl).join(multiline_indent + e for e in elements) + nl
                + close_indent + "]")
    return "[" + ", ".join(elements) + "]"


def insert_member(text: str, obj: Node, key: str,
                  render: Callable[[str | None, str, str], str]) -> Edit:
    """The edit that appends member ``key`` to object ``obj``.

    ``render(member_indent, unit, nl)`` returns the value's text: for a multi-line object its
    inner lines must start with ``member_indent``; ``member_indent`` is None for an object
    written on one line (render compactly). The member goes after the last one, so
    :func:`remove_member` of the last member is its exact inverse.
    """
    nl = newline_of(text)
    unit = indent_unit(text, obj)
    ktext = dumps_string(key)
    if obj.members:
        last = obj.members[-1]
        sep = text[last.key_end:last.node.start]
        if "\n" in sep or "\r" in sep:
            sep = ": "
        mi = line_indent(text, last.key_start)
        if mi is not None:
            return (last.node.end, last.node.end, "," + nl + mi + ktext + sep + render(mi, unit, nl))
        return (last.node.end, last.node.end, ", " + ktext + sep + render(None, unit, nl))
    base = _leading_ws(text, obj.start)
    mi = base + unit
    return (obj.start, obj.end, "{" + nl + mi + ktext + ": " + render(mi, unit, nl) + nl + base + "}")


def remove_member(text: str, obj: Node, key: str, empty_text: str = "{}") -> Edit | None:
    """The edit that removes member ``key`` from ``obj`` (None when absent).

    The last member is removed together with the comma before it; an only member leaves
    ``empty_text`` as the object's text.
    """
    members = obj.members or []
    idx = next((i for i, m in enumerate(members) if m.key == key), None)
    if idx is None:
        return None
    if len(members) == 1:
        return (obj.start, obj.end, empty_text)
    if idx == len(members) - 1:
        return (members[idx - 1].node.end, members[idx].node.end, "")
    return (members[idx].key_start, members[idx + 1].key_start, "")
