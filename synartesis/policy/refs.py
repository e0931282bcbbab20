"""The reference language of policy templates (reference-spec §2.4–2.5, defect 12 fixed).

:func:`parse_template` is the only place that decides what a template string means; the
loader calls it on every string of every snapshot, inverse and verify call (so a string it
refuses is a ``FILE:LINE:COL`` error at load), and :func:`resolve_template` resolves what it
parsed (so a string that loaded never fails to parse at run time, only to resolve).

The grammar (README, "The policy language"), scanning a string left to right::

    template  := ( text | "$$" | reference )*
    reference := "$" segment path        -- the call's arguments: $.path, $[0], $.items[].name
               | "$snapshot" path        -- the pre-read's payload
               | "$result" path          -- the call's payload
               | "$"                     -- (a whole string only) the whole arguments object
    path      := segment*
    segment   := "." key | "[" digits "]" | "[]"
    key       := [A-Za-z_] [A-Za-z0-9_-]*

- ``$$`` is one literal ``$``. A ``$`` followed by a digit, a space, other punctuation or the
  end of the string is a literal ``$`` too (``costs $5``), except that the whole string ``$``
  is the whole arguments object.
- A ``$`` followed by a letter or ``_`` starts a namespace word that must be ``snapshot`` or
  ``result``; ``$.`` and ``$[`` start an arguments path.
- A path ends at the first character that cannot start a segment. A ``.`` must be followed by
  a key and a ``[`` by digits and ``]`` or by ``]``: ``$snapshot.``, ``$.a[``, ``$result..x``
  and ``$snapshot.a[x]`` are errors, never text.
- A string that is exactly one reference resolves to the value with its JSON type; in any
  other string each reference is replaced by its text (strings raw, anything else as compact
  JSON). Unlike the reference implementation, a string that *starts* with a reference and goes
  on with prose is substitution, not a lookup of a key named after the prose.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RefError", "RefSyntaxError", "Ref", "Template", "NAMESPACES", "parse_template",
           "parse_ref", "format_ref", "resolve_template", "references", "is_key"]

NAMESPACES = ("args", "snapshot", "result")
_WORDS = ("snapshot", "result")
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_KEY_REST = _KEY_START | frozenset("0123456789-")
_WORD_REST = _KEY_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")

PathStep = str | int | None  # key, index, [] projection


class RefError(ValueError):
    """A reference that cannot be parsed or resolved; the message names the reference."""


class RefSyntaxError(RefError):
    """A string the reference grammar refuses.

    Attributes:
        text: the whole template string.
        offset: 0-based index in ``text`` of the character the problem is at.
        problem: what is wrong and what to write instead (no location).
    """

    def __init__(self, text: str, offset: int, problem: str) -> None:
        self.text, self.offset, self.problem = text, offset, problem
        super().__init__(f"{text!r} is not a valid template: {problem}")


@dataclass(frozen=True)
class Ref:
    """One parsed reference: namespace, path, and where it sits in its template string."""

    ns: str
    path: tuple[PathStep, ...]
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Template:
    """A parsed template string: literal text pieces and references, in order."""

    text: str
    parts: tuple[str | Ref, ...]

    @property
    def whole(self) -> Ref | None:
        """The reference when the string is exactly one (it keeps its JSON type), else None."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Ref):
            return self.parts[0]
        return None

    @property
    def refs(self) -> tuple[Ref, ...]:
        """Every reference in the string, in order."""
        return tuple(p for p in self.parts if isinstance(p, Ref))


def is_key(name: str) -> bool:
    """True when ``name`` can follow a ``.`` in a path (``[A-Za-z_][A-Za-z0-9_-]*``)."""
    return bool(name) and name[0] in _KEY_START and all(c in _KEY_REST for c in name[1:])


def format_ref(ns: str, path: tuple[PathStep, ...] | list[PathStep]) -> str:
    """The text of a reference (inverse of parsing): ``format_ref("result", ("id",)) == "$result.id"``.

    Raises:
        RefError: a namespace that does not exist, a key the grammar cannot express, or a
            negative index.
    """
    if ns not in NAMESPACES:
        raise RefError(f"unknown namespace {ns}")
    out = ["$" if ns == "args" else f"${ns}"]
    for step in path:
        if step is None:
            out.append("[]")
        elif isinstance(step, bool) or not isinstance(step, (int, str)):
            raise RefError(f"a path step must be a key, an index or [], not {step!r}")
        elif isinstance(step, int):
            if step < 0:
                raise RefError(f"an index cannot be negative ({step})")
            out.append(f"[{step}]")
        elif is_key(step):
            out.append(f".{step}")
        else:
            raise RefError(f"{step!r} cannot be written as a key (keys are letters, digits, _ and -, "
                           "not starting with a digit or -)")
    return "".join(out)


def _namespace_problem(word: str) -> str:
    import difflib  # only for an error message: kept off the proxy's start-up path

    close = difflib.get_close_matches(word, _WORDS, n=1, cutoff=0.6)
    hint = f" (did you mean ${close[0]}?)" if close else ""
    return (f"${word} is not a namespace{hint}; a reference starts with $. or $[ (the call's arguments), "
            "$snapshot (the pre-read) or $result (the call's result); write $$ for a literal $")


@functools.lru_cache(maxsize=8192)
def parse_template(text: str) -> Template:
    """Parse one template string (see the module docstring for the grammar).

    Returns:
        A :class:`Template`; a string without references is one literal part (or none).
    Raises:
        RefSyntaxError: the string holds something that starts a reference but is not one;
            ``offset`` points at the character to change.
    """
    if text == "$":
        return Template(text, (Ref("args", (), 0, 1, "$"),))
    parts: list[str | Ref] = []
    lit: list[str] = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch != "$":
            j = text.find("$", i)
            j = n if j < 0 else j
            lit.append(text[i:j])
            i = j
            continue
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "$":
            lit.append("$")
            i += 2
            continue
        if nxt in _KEY_START:
            j = i + 1
            while j < n and text[j] in _WORD_REST:
                j += 1
            word = text[i + 1:j]
            if word not in _WORDS:
                raise RefSyntaxError(text, i, _namespace_problem(word))
            ns = word
        elif nxt in (".", "["):
            ns, j = "args", i + 1
        else:
            lit.append("$")  # `$5`, `$ `, a final `$`: a literal dollar sign
            i += 1
            continue
        path, j = _parse_path(text, j, i)
        if lit:
            parts.append("".join(lit))
            lit = []
        parts.append(Ref(ns, tuple(path), i, j, text[i:j]))
        i = j
    if lit:
        parts.append("".join(lit))
    return Template(text, tuple(parts))


def _parse_path(text: str, j: int, start: int) -> tuple[list[PathStep], int]:
    n = len(text)
    path: list[PathStep] = []
    while j < n:
        ch = text[j]
        if ch == ".":
            k = j + 1
            if k < n and text[k] in _KEY_START:
                k += 1
                while k < n and text[k] in _KEY_REST:
                    k += 1
                path.append(text[j + 1:k])
                j = k
                continue
            got = "the end of the text" if k >= n else repr(text[k])
            what = text[start:k]
            if k < n and text[k] in _DIGITS:
                fix = f"for an index write [{_digits_at(text, k)}] instead of .{_digits_at(text, k)}"
            elif k < n and text[k] == ".":
                fix = "remove the extra '.'"
            elif k >= n:
                fix = f"finish the path ({what}key) or drop the '.'"
            else:
                fix = "keys are letters, digits, _ and -, starting with a letter or _"
            raise RefSyntaxError(text, j, f"in {what!r} a key must follow '.', not {got}; {fix}")
        if ch == "[":
            k = j + 1
            if k < n and text[k] == "]":
                path.append(None)
                j = k + 1
                continue
            d = k
            while d < n and text[d] in _DIGITS:
                d += 1
            if d > k and d < n and text[d] == "]":
                path.append(int(text[k:d]))
                j = d + 1
                continue
            close = text.find("]", k)
            inner = text[k:close] if close >= 0 else text[k:]
            if close < 0:
                problem = (f"in {text[start:]!r} the '[' is never closed; write [0], [1], … for an item "
                           "or [] for every item")
            else:
                problem = (f"[{inner}] is not an index; write [0], [1], … for an item or [] for every item "
                           f"(a key goes after a '.': .{inner})" if is_key(inner) else
                           f"[{inner}] is not an index; write [0], [1], … for an item or [] for every item")
            raise RefSyntaxError(text, j, problem)
        break
    return path, j


def _digits_at(text: str, k: int) -> str:
    d = k
    while d < len(text) and text[d] in _DIGITS:
        d += 1
    return text[k:d]


def parse_ref(text: str) -> tuple[str, list[PathStep]] | None:
    """Parse a whole-value reference into ``(namespace, path)``, or None when ``text`` is not
    exactly one reference (plain text, text with references inside, or a grammar error).

    Path items are ``str`` keys, ``int`` indexes and ``None`` for a ``[]`` projection.
    """
    try:
        whole = parse_template(text).whole
    except RefSyntaxError:
        return None
    return (whole.ns, list(whole.path)) if whole is not None else None


def _walk(ref: str, value: Any, path: tuple[PathStep, ...]) -> Any:
    for i, step in enumerate(path):
        if step is None:
            if not isinstance(value, list):
                raise RefError(f"{ref} is unresolvable: [] needs a list to walk")
            return [_walk(ref, item, path[i + 1:]) for item in value]
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                raise RefError(f"{ref} is unresolvable: index {step} is absent")
            value = value[step]
            continue
        if value is None:
            raise RefError(f"{ref} is unresolvable: nothing to read from")
        if not isinstance(value, dict) or step not in value:
            raise RefError(f"{ref} is unresolvable: {step} is absent")
        value = value[step]
    return value


def _lookup(ref: Ref, scope: Mapping[str, Any]) -> Any:
    if ref.ns not in scope:
        raise RefError(f"{ref.text} refers to ${ref.ns}, which is not available at this point")
    return _walk(ref.text, scope[ref.ns], ref.path)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def resolve_template(template: Any, scope: Mapping[str, Any]) -> Any:
    """Resolve every reference in ``template`` against ``scope``.

    Args:
        template: a JSON-like value from a policy (strings may hold references).
        scope: ``{"args": …, "snapshot": …, "result": …}``; a missing namespace means
            "not available at this point".
    Returns:
        The same structure with literal values only.
    Raises:
        RefError: a reference that does not resolve (the message names it and why);
            RefSyntaxError for a string the grammar refuses (never for a loaded policy: the
            loader refuses such a policy).
    """
    if isinstance(template, str):
        t = parse_template(template)
        whole = t.whole
        if whole is not None:
            return _lookup(whole, scope)
        return "".join(p if isinstance(p, str) else _as_text(_lookup(p, scope)) for p in t.parts)
    if isinstance(template, list):
        return [resolve_template(v, scope) for v in template]
    if isinstance(template, dict):
        return {k: resolve_template(v, scope) for k, v in template.items()}
    return template


def references(template: Any) -> Iterator[tuple[str, str]]:
    """Yield ``(reference_text, namespace)`` for every reference in ``template`` (nested
    values included, in order).

    Raises:
        RefSyntaxError: a string the grammar refuses.
    """
    if isinstance(template, str):
        for ref in parse_template(template).refs:
            yield ref.text, ref.ns
    elif isinstance(template, list):
        for v in template:
            yield from references(v)
    elif isinstance(template, dict):
        for v in template.values():
            yield from references(v)
