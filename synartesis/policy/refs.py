"""The reference language of policy templates (reference-spec §2.4–2.5, defect 12 fixed).

Namespaces: ``$.``/``$``/``$[`` = the call's arguments, ``$snapshot`` = the pre-read payload,
``$result`` = the forward call's payload. Path: ``.key`` segments, each followed by ``[n]``
(index) or ``[]`` (projection over a list). ``$$`` is a literal ``$``.

Whole-value: a string that is exactly one reference resolves to the value with its JSON type.
Embedded: in any other string, every reference ``$ns.path`` (identifier grammar) is replaced by
its text (strings raw, anything else as compact JSON). Unlike the reference implementation, a
string that *starts* with a reference and goes on with prose is embedded substitution, not a
lookup of a key named after the prose.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, Mapping

__all__ = ["RefError", "resolve_template", "references", "NAMESPACES", "parse_ref"]

NAMESPACES = ("args", "snapshot", "result")
_IDENT = r"[A-Za-z_][A-Za-z0-9_\-]*"
_SEG = rf"(?:\.{_IDENT}|\[\d+\]|\[\])"
# A reference: $ then optional namespace word, then path segments.
_REF = re.compile(rf"\$(snapshot|result)?((?:{_SEG})*)")
_WHOLE = re.compile(rf"^\$(snapshot|result)?((?:{_SEG})*)$")
_BAD_NS = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)")


class RefError(ValueError):
    """A reference that cannot be parsed or resolved; the message names the reference."""


def parse_ref(text: str) -> tuple[str, list[Any]] | None:
    """Parse a whole-value reference into (namespace, path) or None if ``text`` is not one.

    Path items are ``str`` keys, ``int`` indexes and ``None`` for a ``[]`` projection.
    """
    if text.startswith("$$"):
        return None
    m = _WHOLE.match(text)
    if not m:
        return None
    ns = m.group(1) or "args"
    path_text = m.group(2)
    if ns == "args" and not path_text and text != "$":
        return None
    return ns, _parse_path(path_text)


def _parse_path(path_text: str) -> list[Any]:
    out: list[Any] = []
    for seg in re.findall(_SEG, path_text):
        if seg.startswith("."):
            out.append(seg[1:])
        elif seg == "[]":
            out.append(None)
        else:
            out.append(int(seg[1:-1]))
    return out


def _walk(ref: str, value: Any, path: list[Any]) -> Any:
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


def _lookup(ref: str, ns: str, path: list[Any], scope: Mapping[str, Any]) -> Any:
    if ns not in scope:
        raise RefError(f"{ref} refers to ${ns}, which is not available at this point")
    return _walk(ref, scope[ns], path)


def _embed(text: str, scope: Mapping[str, Any]) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "$":
            out.append(ch)
            i += 1
            continue
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        m = _REF.match(text, i)
        # inside text a reference must have a path that starts with a key ($.x, $snapshot.x)
        if m and m.group(2).startswith("."):
            ns = m.group(1) or "args"
            value = _lookup(m.group(0), ns, _parse_path(m.group(2)), scope)
            out.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":")))
            i = m.end()
            continue
        out.append("$")
        i += 1
    return "".join(out)


def resolve_template(template: Any, scope: Mapping[str, Any]) -> Any:
    """Resolve every reference in ``template`` against ``scope``.

    Args:
        template: a JSON-like value from a policy (strings may hold references).
        scope: ``{"args": …, "snapshot": …, "result": …}``; a missing namespace means
            "not available at this point".
    Returns:
        The same structure with literal values only.
    Raises:
        RefError: a reference that does not resolve (the message names it and why).
    """
    if isinstance(template, str):
        if template.startswith("$$"):
            return _embed(template, scope)
        parsed = parse_ref(template)
        if parsed is not None:
            return _lookup(template, parsed[0], parsed[1], scope)
        m = _BAD_NS.match(template)
        if m and m.group(1) not in ("snapshot", "result"):
            raise RefError(f"unknown interpolation namespace in {template}; expected $., $snapshot. or $result. (write $$ for a literal $)")
        return _embed(template, scope)
    if isinstance(template, list):
        return [resolve_template(v, scope) for v in template]
    if isinstance(template, dict):
        return {k: resolve_template(v, scope) for k, v in template.items()}
    return template


def references(template: Any) -> Iterator[tuple[str, str]]:
    """Yield ``(reference_text, namespace)`` for every reference in ``template``.

    Raises:
        RefError: for a string starting with an unknown namespace (``$upstream.id``).
    """
    if isinstance(template, str):
        if template.startswith("$$"):
            yield from _embedded_refs(template)
            return
        parsed = parse_ref(template)
        if parsed is not None:
            yield template, parsed[0]
            return
        m = _BAD_NS.match(template)
        if m and m.group(1) not in ("snapshot", "result"):
            raise RefError(f"unknown interpolation namespace in {template}; expected $., $snapshot. or $result. (write $$ for a literal $)")
        yield from _embedded_refs(template)
    elif isinstance(template, list):
        for v in template:
            yield from references(v)
    elif isinstance(template, dict):
        for v in template.values():
            yield from references(v)


def _embedded_refs(text: str) -> Iterator[tuple[str, str]]:
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            i += 2
            continue
        if text[i] == "$":
            m = _REF.match(text, i)
            if m and m.group(2).startswith("."):
                yield m.group(0), m.group(1) or "args"
                i = m.end()
                continue
        i += 1
