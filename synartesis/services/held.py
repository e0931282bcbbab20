"""What a held call would change (issue 10 item 10), for ``gates``, ``approve`` and the console.

For a held call whose rule has a pre-read, the pre-read is run now (on the server as the held
call's run launched it): the current state is shown next to the call's arguments, and where
the rule's inverse says which argument would replace which part of the state (an inverse
argument that is exactly ``$snapshot.X`` restores ``X`` from the argument of the same name), a
unified diff of the two when both are text. A call whose arguments or server name match the
policy's ``production_patterns`` (default ``prod``, ``production``, ``live``; see
:func:`synartesis.policy.model.production_match`) is flagged, with what matched. Nothing is sent but the read.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from synartesis.journal import ActionRow, Journal
from synartesis.policy.model import Policy, ProductionHit
from synartesis.policy.refs import RefError
from synartesis.proxy.pipeline import resolve_call
from synartesis.undo.servers import SpawnedServers, Stop

__all__ = ["HeldPreview", "preview_held", "production_hits", "PREVIEW_LINES", "DIFF_LINES"]

_SNAPSHOT_FIELD = re.compile(r"^\$snapshot\.([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass
class HeldPreview:
    """A held call with what it would change.

    ``current``: the pre-read's observation (``{"present": …, "value": …}``), None when there is
    no pre-read or it failed (``note`` says which). ``diffs``: (argument, unified diff).
    ``production``: the patterns its arguments or server name matched.
    """

    action: ActionRow
    args: Any
    read: dict | None = None
    current: dict | None = None
    note: str | None = None
    diffs: list[tuple[str, str]] = field(default_factory=list)
    production: list[ProductionHit] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"read": self.read, "current": self.current, "note": self.note,
                "diffs": [{"argument": k, "diff": d} for k, d in self.diffs],
                "production": [{"where": h.where, "value": h.value, "pattern": h.pattern} for h in self.production]}


_NO_POLICY = Policy(path="", servers={}, rules=())  # the default production_patterns


def production_hits(policy: Policy | None, server: str, args: Any) -> list[ProductionHit]:
    """What about a call looks like production (:meth:`Policy.production_hits`; without a
    policy, the default patterns)."""
    return (policy or _NO_POLICY).production_hits(server, args)


def _pairs(policy: Policy, a: ActionRow, args: Any) -> list[tuple[str, str]]:
    """(argument, snapshot field) pairs the rule's inverse reveals (see module docstring)."""
    rule = policy.rule_for(a.server, a.tool, args)
    out = []
    for call in rule.inverse:
        for key, value in (call.args or {}).items():
            m = _SNAPSHOT_FIELD.match(value) if isinstance(value, str) else None
            if m and isinstance(args, dict) and key in args:
                out.append((key, m.group(1)))
    return out


# What a preview shows at most (issue 8 of the adversarial review: a 3 MB held write made
# `gates` run 74 s and print 10.5 MB). The diff is computed on the capped texts, so its cost is
# bounded too; what was left out is said in the diff's last lines.
PREVIEW_LINES = 400      # lines of each side compared
PREVIEW_CHARS = 64_000   # characters of each side compared
DIFF_LINES = 200         # lines of diff shown
LINE_CHARS = 500         # characters of one diff line shown


def _lines(text: str) -> list[str]:
    # lines end at "\n" only (str.splitlines also breaks at CR, FF, U+2028…: the agent's text
    # would be re-laid out instead of shown)
    parts = text.split("\n")
    return [x + "\n" for x in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _capped(text: str) -> tuple[list[str], int]:
    """The first :data:`PREVIEW_LINES` lines (at most :data:`PREVIEW_CHARS` characters) of
    ``text``, and how many lines ``text`` has."""
    total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return _lines(text[:PREVIEW_CHARS])[:PREVIEW_LINES], total


def _cut(line: str) -> str:
    body = line.rstrip("\n")
    if len(body) <= LINE_CHARS:
        return line
    return f"{body[:LINE_CHARS]}… ({len(body) - LINE_CHARS} more characters)\n"


def _diff(before: str, after: str, name: str) -> str:
    """A unified diff of what ``after`` would change in ``before``, bounded: the first lines of
    each side are compared (:data:`PREVIEW_LINES`, :data:`PREVIEW_CHARS`), at most
    :data:`DIFF_LINES` lines of :data:`LINE_CHARS` characters are shown, and a ``… N more
    lines`` tail says what was left out."""
    old, old_total = _capped(before)
    new, new_total = _capped(after)
    lines = list(difflib.unified_diff(old, new, fromfile=f"{name} (now)", tofile=f"{name} (after this call)"))
    out = "".join(_cut(x) if x.endswith("\n") else _cut(x) + "\n\\ No newline at end of file\n"
                  for x in lines[:DIFF_LINES])
    if len(lines) > DIFF_LINES:
        out += f"… {len(lines) - DIFF_LINES} more lines of this diff\n"
    if len(old) < old_total or len(new) < new_total:
        out += (f"… {old_total - len(old)} more lines now and {new_total - len(new)} more lines after this call "
                f"were not compared (the first {len(old)} and {len(new)} were)\n")
    return out


def preview_held(j: Journal, actions: list[ActionRow], policy: Policy | None, *, entry_env: Any = None,
                 read_timeout: float = 10.0, stop: Stop | None = None) -> list[HeldPreview]:
    """A :class:`HeldPreview` per held action (in order); starts only the servers it reads.
    ``stop`` (set from another thread) kills them at once."""
    previews = [HeldPreview(a, j.get_json(a.args_ref)) for a in actions]
    for p in previews:
        p.production = production_hits(policy, p.action.server, p.args)
        if policy is None:
            p.note = "there is no policy, so there is no pre-read to show the current state with"
            continue
        rule = policy.rule_for(p.action.server, p.action.tool, p.args)
        if not rule.matched:  # no rule at all: "its rule" named one (new user round 31, 9e)
            p.note = "no rule of the policy covers this tool, so there is no pre-read to show the current state with"
            continue
        if rule.snapshot is None:
            p.note = "its rule has no pre-read, so the current state cannot be shown"
            continue
        try:
            p.read = resolve_call(rule.snapshot, {"args": p.args})
        except RefError as exc:
            p.note = f"its pre-read could not be built from the arguments: {exc}"
    wanted = [p for p in previews if p.read is not None]
    if not wanted:
        return previews
    runs = {r.id: r for r in j.list_runs() if r.id in {p.action.run_id for p in wanted}}
    pool = SpawnedServers(runs, policy, entry_env, stop)
    try:
        pool.start({(p.action.run_id, p.read["server"]) for p in wanted})
        for p in wanted:
            out = pool.read(p.action.run_id, p.read, timeout=read_timeout, max_bytes=8 * 1024 * 1024)
            p.current = out.observation()
            if p.current is None:
                p.note = f"the current state could not be read: {out.reason}"
                continue
            if not p.current.get("present"):
                p.note = "it does not exist yet"
                continue
            value = p.current.get("value")
            for arg, fld in _pairs(policy, p.action, p.args):
                now = value.get(fld) if isinstance(value, dict) else (value if fld in ("content", "text") else None)
                new = p.args.get(arg)
                if isinstance(now, str) and isinstance(new, str):
                    p.diffs.append((arg, _diff(now, new, arg)))
    finally:
        pool.close()
    return previews
