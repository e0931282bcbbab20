"""Tool pins: a fingerprint of a tool's shape, and what changed between two shapes.

A pin is ``"sha256:" + hex`` over the canonical JSON (``synartesis.canonical``) of the tool's
``name, title, description, inputSchema, outputSchema, annotations`` (DESIGN §4). Fields the
tool does not have are left out, so a tool that gains an ``outputSchema`` changes its pin.

Standard library only: the proxy imports this on every client launch.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from synartesis.canonical import canonical_bytes, sha256_hex

__all__ = ["PINNED_FIELDS", "pinned_shape", "fingerprint", "diff_fields", "is_pin", "pin_problems",
           "check_pins"]

#: The tool fields a pin covers, in the order :func:`diff_fields` reports them.
PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

_ABSENT = object()


def pinned_shape(tool: Mapping[str, Any]) -> dict:
    """The part of a ``tools/list`` entry a pin covers (absent fields left out)."""
    return {k: tool[k] for k in PINNED_FIELDS if k in tool}


def fingerprint(tool: Mapping[str, Any]) -> str:
    """``"sha256:<64 hex>"`` over the canonical JSON of :func:`pinned_shape` of ``tool``.

    Args:
        tool: one raw tool object from ``tools/list`` (a dict).
    Returns:
        The pin string written under ``servers.NAME.pins``.
    """
    return "sha256:" + sha256_hex(canonical_bytes(pinned_shape(tool)))


def diff_fields(old_tool: Mapping[str, Any] | None, new_tool: Mapping[str, Any] | None) -> list[str]:
    """Names of the pinned fields that differ between two tool objects, in PINNED_FIELDS order.

    A field present on one side only counts as changed. ``None`` for a whole side (the tool is
    gone, or new) reports every field the other side has.
    """
    old = dict(old_tool or {})
    new = dict(new_tool or {})
    changed = []
    for k in PINNED_FIELDS:
        a, b = old.get(k, _ABSENT), new.get(k, _ABSENT)
        if a is _ABSENT and b is _ABSENT:
            continue
        if a is _ABSENT or b is _ABSENT or canonical_bytes(a) != canonical_bytes(b):
            changed.append(k)
    return changed


def is_pin(value: Any) -> bool:
    """True for a well-formed pin string (``sha256:`` + 64 lowercase hex digits)."""
    if not isinstance(value, str) or not value.startswith("sha256:") or len(value) != 71:
        return False
    return all(c in "0123456789abcdef" for c in value[7:])


def _covers(rule: Any, qualified: str) -> bool:
    """Does ``rule.match`` cover ``server.tool`` (``*`` = any run without a dot)?"""
    pattern = str(getattr(rule, "match", ""))
    rx = re.compile("[^.]*".join(re.escape(part) for part in pattern.split("*")))
    return bool(rx.fullmatch(qualified))


def pin_problems(server: str, pins: Mapping[str, str], catalog: Mapping[str, Mapping[str, Any]],
                 policy: Any = None, shapes: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Every way ``catalog`` (tool name → tool object, as advertised now) breaks the pins.

    Args:
        server: the server's policy name.
        pins: ``servers.NAME.pins`` (tool → pin). Empty → no problems (not checked).
        catalog: the current ``tools/list``, keyed by tool name.
        policy: the loaded Policy (optional). With it, an advertised tool that some rule of
            this server covers but that has no pin is a problem too (all-or-nothing, DESIGN §4):
            a new tool cannot slip in under a glob rule.
        shapes: optional fingerprint → tool object of shapes seen before (for example those
            recorded when the pins were made); when the pinned shape is found there, the
            changed fields are named.
    Returns:
        One line per problem (empty when every pin holds), e.g.
        ``write_file: pinned sha256:…, now sha256:… (changed: inputSchema)``.
    """
    if not pins:
        return []
    out: list[str] = []
    for tool in sorted(pins):
        pinned = pins[tool]
        current = catalog.get(tool)
        if current is None:
            out.append(f"{tool}: pinned {pinned}, now not advertised (the tool is gone)")
            continue
        now = fingerprint(current)
        if now == pinned:
            continue
        old = (shapes or {}).get(pinned)
        if old is not None:
            what = ", ".join(diff_fields(old, current)) or "unknown field"
        else:
            what = "one of " + ", ".join(k for k in PINNED_FIELDS if k in current) + \
                   "; the pinned shape is not on record, so which one cannot be said"
        out.append(f"{tool}: pinned {pinned}, now {now} (changed: {what})")
    if policy is not None:
        rules = list(getattr(policy, "rules", ()))
        for tool in sorted(catalog):
            if tool in pins:
                continue
            qualified = f"{server}.{tool}"
            rule = next((r for r in rules if _covers(r, qualified)), None)
            if rule is not None:
                out.append(f"{tool}: not pinned, but rule {rule.match} covers it "
                           f"(new since the pins were made?) now {fingerprint(catalog[tool])}")
    return out


def check_pins(server: str, pins: Mapping[str, str], catalog: Mapping[str, Mapping[str, Any]],
               policy: Any = None, *, cli: str = "synartesis",
               shapes: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:
    """The refusal text for every call of ``server`` when its pins do not hold, else None.

    All-or-nothing per server (issue 5 item 6): one moved tool refuses every call. The text
    names each tool, both fingerprints, which field changed (when known, see
    :func:`pin_problems`) and the commands to review and re-pin.
    """
    problems = pin_problems(server, pins, catalog, policy, shapes)
    if not problems:
        return None
    where = getattr(policy, "path", None)
    manifest = f" --manifest {where}" if where else ""
    lines = [f"synartesis refuses every call of {server}: the shape of its tools changed since "
             f"they were pinned, so the policy may no longer describe what they do."]
    lines += [f"  {p}" for p in problems]
    lines.append(f"Review the change (`{cli} check --server {server}{manifest}`), then re-pin: "
                 f"`{cli} pin --server {server}{manifest}` prints the new pins block to paste "
                 f"under servers.{server}.pins" + (f" in {where}." if where else "."))
    return "\n".join(lines)
