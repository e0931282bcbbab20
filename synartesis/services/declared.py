"""What a server declares about its own tools, read from ``tools/list`` when a policy is drafted
(issue 10 item 9): ChronoMCP's ``_meta["dev.chronomcp/compensate"]`` and the MCP annotations
``readOnlyHint``, ``destructiveHint`` and ``idempotentHint``.

Every declaration is the server's own claim, so nothing here makes a call less guarded than a
person would: a declared compensation becomes a ``compensable`` rule that is still held
(``gate: always``) until the person has checked it and removed the TODO; a compensation whose
``parameterMapping`` is not a static path, or names a tool the server does not have, is
refused with the reason; claims that contradict each other hold the call.

The ``_meta`` shape (the ChronoMCP specification was not available when this was written; this
is the shape issue 10 gives)::

    {"dev.chronomcp/compensate": {
        "reversibility": "readonly" | "compensable" | "irreversible",
        "compensation": {"toolName": "delete_customer",
                         "parameterMapping": {"id": "$.output.structuredContent.id"}}}}

``parameterMapping`` maps each argument of the compensating tool to a path into the original
call: ``$.input.x`` (its arguments, our ``$.x``) or ``$.output.structuredContent.x`` (its
structured result, our ``$result.x``). A static path is keys (``.name``, ``['name']``) and
indexes (``[0]``); wildcards, filters, slices, recursive descent and expressions are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from synartesis.policy.refs import RefError, format_ref, parse_template

__all__ = ["COMPENSATE_KEY", "Declared", "read_declaration", "map_path"]

COMPENSATE_KEY = "dev.chronomcp/compensate"
_REVERSIBILITY = ("readonly", "compensable", "irreversible")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r"""\[(?:'([^'\\]*)'|"([^"\\]*)")\]""")


@dataclass(frozen=True)
class Declared:
    """What a tool's declarations make of its drafted rule.

    Attributes:
        cls: ``readonly``, ``compensable`` or ``irreversible`` (held); None when the tool
            declares nothing that decides (the usual fail-closed draft applies).
        inverse: for ``compensable``: the inverse call ``{"tool": "SERVER.tool", "args": {…}}``.
        lines: comment lines for the drafted rule (what was declared, what was made of it).
        notes: one-line reports for the person running init/install (a declared
            compensation drafted, or refused and why).
    """

    cls: str | None = None
    inverse: dict | None = None
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def map_path(path: Any) -> str:
    """A ``parameterMapping`` path as a synartesis reference.

    ``$.input.x`` → ``$.x``; ``$.output.structuredContent.x`` → ``$result.x`` (``$.input`` and
    ``$.output.structuredContent`` alone are the whole arguments / payload).

    Raises:
        ValueError: not a static path, or not one synartesis can express; the message says why.
    """
    if not isinstance(path, str):
        raise ValueError(f"{path!r} is not a path (a mapping value must be a string like $.input.id)")
    text = path.strip()
    if not text.startswith("$"):
        raise ValueError(f"{path!r} does not start with $")
    steps: list[str | int] = []
    i = 1
    while i < len(text):
        rest = text[i:]
        if rest.startswith(".."):
            raise ValueError(f"{path!r} uses recursive descent (..), which is not a static path")
        if rest.startswith(".*") or rest.startswith("[*]"):
            raise ValueError(f"{path!r} uses a wildcard, which is not a static path")
        if rest.startswith("."):
            m = _NAME.match(text, i + 1)
            if not m:
                raise ValueError(f"{path!r}: a key must follow '.' at character {i + 1}")
            steps.append(m.group(0))
            i = m.end()
            continue
        m = _INDEX.match(text, i)
        if m:
            steps.append(int(m.group(1)))
            i = m.end()
            continue
        m = _QUOTED.match(text, i)
        if m:
            steps.append(m.group(1) if m.group(1) is not None else m.group(2))
            i = m.end()
            continue
        if rest.startswith("[?") or rest.startswith("[("):
            raise ValueError(f"{path!r} uses a filter or an expression, which is not a static path")
        if rest.startswith("["):
            raise ValueError(f"{path!r} uses a negative index, a slice or a union, which is not a static path")
        raise ValueError(f"{path!r} is not a static path (unexpected {text[i]!r} at character {i + 1})")
    if not steps or steps[0] not in ("input", "output"):
        raise ValueError(f"{path!r} must start with $.input (the call's arguments) or "
                         "$.output.structuredContent (its structured result)")
    if steps[0] == "input":
        ns, rest_steps = "args", steps[1:]
    else:
        if len(steps) < 2 or steps[1] != "structuredContent":
            raise ValueError(f"{path!r} reads the raw result; only $.output.structuredContent… can be mapped "
                             "(synartesis reads a call's structured payload, not its content blocks)")
        ns, rest_steps = "result", steps[2:]
    try:
        ref = format_ref(ns, tuple(rest_steps))
    except RefError as exc:
        raise ValueError(f"{path!r} cannot be written as a synartesis reference: {exc}") from None
    assert parse_template(ref).whole is not None  # format_ref only writes what the grammar reads
    return ref


def _hint_lines(ann: dict) -> list[str]:
    lines = []
    if ann.get("destructiveHint") is True:
        lines.append("destructiveHint: true (the server says it may destroy data).")
    elif ann.get("destructiveHint") is False and ann.get("readOnlyHint") is not True:
        lines.append("destructiveHint: false (the server says it only adds).")
    if ann.get("idempotentHint") is True and ann.get("readOnlyHint") is not True:
        lines.append("idempotentHint: true (the server says repeating it changes nothing more).")
    return lines


def read_declaration(server: str, tool: dict, advertised: Iterable[str]) -> Declared:
    """What ``tool`` (one ``tools/list`` entry) declares, for a rule of server ``server``.

    Args:
        server: the policy key (inverse tools are qualified with it).
        advertised: every tool name the server lists (a compensation must name one of them).
    Returns:
        A :class:`Declared`. Its ``cls`` is None when nothing decisive is declared.
    """
    tname = tool.get("name")
    ann = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    meta = tool.get("_meta") if isinstance(tool.get("_meta"), dict) else {}
    lines = _hint_lines(ann)
    hint_ro = ann.get("readOnlyHint")
    if COMPENSATE_KEY not in meta:
        if hint_ro is True and ann.get("destructiveHint") is True:
            return Declared("irreversible", None, lines + [
                "held: the server says it is read-only (readOnlyHint) and destructive (destructiveHint) at once."])
        return Declared(None, None, lines)
    decl = meta[COMPENSATE_KEY]
    what = f"_meta {COMPENSATE_KEY}"
    if not isinstance(decl, dict) or decl.get("reversibility") not in _REVERSIBILITY:
        got = decl.get("reversibility") if isinstance(decl, dict) else decl
        why = f"{tname}: {what} not used: reversibility {got!r} is not one of {', '.join(_REVERSIBILITY)}"
        return Declared("irreversible", None, lines + [f"held: {why}."], [why])
    rev = decl["reversibility"]
    says_ro = rev == "readonly"
    if (says_ro and (hint_ro is False or ann.get("destructiveHint") is True)) or (not says_ro and hint_ro is True):
        detail = (f"the server's claims disagree ({what} says {rev}, readOnlyHint says {hint_ro!r}"
                  f"{', destructiveHint says true' if ann.get('destructiveHint') is True else ''}), so it is held")
        return Declared("irreversible", None, lines + [f"held: {detail}."], [f"{tname}: {detail}"])
    if rev == "readonly":
        return Declared("readonly", None, lines + [
            f"readonly because the server declares it ({what}{' and readOnlyHint' if hint_ro else ''}); "
            "verify it before relying on it."])
    if rev == "irreversible":
        return Declared("irreversible", None, lines + [f"irreversible: the server declares it ({what})."])
    comp = decl.get("compensation")
    refused = _compensation_problem(comp, advertised)
    if refused is None:
        mapping: dict[str, str] = {}
        shown = []
        for arg, path in comp["parameterMapping"].items():
            try:
                mapping[arg] = map_path(path)
            except ValueError as exc:
                refused = f"parameterMapping {arg}: {exc}"
                break
            shown.append(f"{arg} ← {path} ({mapping[arg]})")
    if refused is not None:
        why = f"{tname}: the declared compensation was refused: {refused}"
        return Declared("irreversible", None, lines + [
            f"The server declares it compensable ({what}), but the compensation was refused:",
            f"  {refused}.", "held as irreversible."], [why])
    inverse = {"tool": f"{server}.{comp['toolName']}", "args": mapping}
    lines = lines + [
        f"compensable: declared by the server, not checked ({what}): {comp['toolName']} with",
        "  " + "; ".join(shown) + ".",
        "TODO: held for approval until you have checked it: approve one call, undo it",
        "  (synartesis undo), then delete the `gate: always` line and this TODO.",
    ]
    note = (f"{tname}: compensable as the server declares ({comp['toolName']}), not checked: "
            "held until you remove its TODO")
    return Declared("compensable", inverse, lines, [note])


def _compensation_problem(comp: Any, advertised: Iterable[str]) -> str | None:
    if not isinstance(comp, dict):
        return "no compensation is given (compensation.toolName and parameterMapping)"
    tool = comp.get("toolName")
    if not isinstance(tool, str) or not tool.strip() or "*" in tool:
        return f"compensation.toolName {tool!r} is not a tool name"
    if tool not in set(advertised):
        return f"compensation.toolName {tool} is not a tool this server advertises"
    mapping = comp.get("parameterMapping", {})
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and k for k in mapping):
        return "parameterMapping must map argument names to paths"
    return None
