"""The policy model: frozen records (:mod:`synartesis.frozen`) built by :mod:`synartesis.policy.loader`."""

from __future__ import annotations

import fnmatch
import functools
import re
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

from synartesis.frozen import factory, record

__all__ = ["pattern_regex", "CLASSES", "GATES", "ON_ABSENT", "CallTemplate", "Rule", "ServerSpec", "Policy", "FAIL_CLOSED",
           "DEFAULT_PRODUCTION_PATTERNS", "production_match", "ProductionHit"]

@functools.lru_cache(maxsize=65536)
def pattern_regex(pattern: str) -> re.Pattern:
    """Compile a match pattern: ``*`` is any run of characters other than ``.``; the rest is
    literal; the pattern is anchored to the whole name (reference-spec §2.8)."""
    return re.compile("[^.]*".join(re.escape(part) for part in pattern.split("*")))


CLASSES = ("readonly", "reversible", "compensable", "irreversible")
GATES = ("always", "on_write", "never")
#: a snapshot's ``on_absent``: what a call whose pre-read finds nothing to restore gets
ON_ABSENT = ("hold", "send")
#: ``production_patterns`` when a policy does not set it (issue 10 item 10).
DEFAULT_PRODUCTION_PATTERNS = ("prod", "production", "live")
_GLOB = frozenset("*?[")


@functools.lru_cache(maxsize=4096)
def _production_regex(pattern: str) -> re.Pattern:
    p = pattern.lower()
    if _GLOB & set(p):
        return re.compile(fnmatch.translate(p), re.S)
    # a plain pattern is a word of the value: no letter right before or after it
    return re.compile(r"(?<![a-z])" + re.escape(p) + r"(?![a-z])", re.S)


def production_match(patterns: tuple[str, ...] | list[str], text: str) -> str | None:
    """The first of ``patterns`` that ``text`` matches, or None.

    Case-insensitive. A pattern with ``*``, ``?`` or ``[`` is a glob over the whole text
    (``*prod*`` is any substring, ``prod-*`` a prefix); any other pattern matches where it
    appears as a word, with no letter right before or after it: ``prod`` matches ``prod``,
    ``prod-db``, ``db.prod.internal``, ``/srv/prod/app`` and ``prod1``, not ``product`` or
    ``reproduce`` (so the default ``live`` does not flag ``deliver`` or ``olive``).
    """
    if not isinstance(text, str):
        return None
    folded = text.lower()
    for pattern in patterns:
        rx = _production_regex(pattern)
        if (rx.match(folded) if _GLOB & set(pattern) else rx.search(folded)):
            return pattern
    return None


@record
class ProductionHit:
    """One value that matched ``production_patterns``.

    Attributes:
        where: ``"server"`` for the server name, else the argument's path (``path``,
            ``items[0].host``).
        value: the string that matched.
        pattern: the pattern it matched.
    """

    where: str
    value: str
    pattern: str


@record
class CallTemplate:
    """A call a policy makes on the agent's behalf: a pre-read, an inverse or a verify read.

    Attributes:
        server, tool: where it goes (``tool`` is the upstream's own tool name).
        args: JSON-like template (strings may hold references, see ``refs``).
        absent_when: case-insensitive phrases that, in a failed read, mean "does not exist".
            Empty tuple: any tool error of the read means "absent" (reference behaviour).
        refuse_when: phrases that, in a successful read's payload, mean the read cannot
            represent the resource exactly (e.g. U+FFFD from a binary file): the write is refused.
        on_absent: a snapshot's answer to finding nothing where the inverse needs the state
            before: ``hold`` (the default: the call would create what it writes, which undo
            cannot take back, so a person approves it) or ``send`` (the tool never creates,
            e.g. filesystem ``edit_file``: the server refuses a missing resource itself, so the
            call goes through unheld and its error settles it as ``failed``).
        unordered: a read whose arrays are sets (a knowledge graph's entities and relations):
            drift and restore checks compare them in any order; what is stored and sent back
            keeps the server's order.
    """

    server: str
    tool: str
    args: dict
    absent_when: tuple[str, ...] = ()
    refuse_when: tuple[str, ...] = ()
    on_absent: str = "hold"
    unordered: bool = False

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"server": self.server, "tool": self.tool, "args": self.args}
        if self.absent_when:
            d["absent_when"] = list(self.absent_when)
        if self.refuse_when:
            d["refuse_when"] = list(self.refuse_when)
        if self.on_absent != "hold":
            d["on_absent"] = self.on_absent
        if self.unordered:
            d["unordered"] = True
        return d


@record
class Rule:
    """One ``tools[i]`` entry (or the synthesised fail-closed rule when ``matched`` is False)."""

    match: str
    cls: str
    gate: str
    snapshot: CallTemplate | None = None
    inverse: tuple[CallTemplate, ...] = ()
    verify: CallTemplate | None = None
    when: dict | None = None
    sql_arg: str | None = None
    note: str | None = None
    index: int = -1
    matched: bool = True
    post_state: Any = None  # what the read returns right after the call (a template), if declared
    # a read made only when the server answers the call with an error and no snapshot or
    # verify read can tell whether it applied: "absent" there means nothing was made (failed)
    settle: CallTemplate | None = None
    # why the call is held, as the agent and the person approving it read it ("because …"),
    # where the class alone would say the wrong thing (a read held to keep secrets out of the
    # journal is not held because it "cannot be undone")
    hold_reason: str | None = None

    def applies(self, qualified: str, args: Any) -> bool:
        """True when this rule's pattern matches ``server.tool`` and its ``when`` holds."""
        if not pattern_regex(self.match).fullmatch(qualified):
            return False
        if self.when:
            if not isinstance(args, dict):
                return False
            from synartesis.canonical import canonical
            for key, literal in self.when.items():
                if key not in args or canonical(args[key]) != canonical(literal):
                    return False
        return True


FAIL_CLOSED = "no rule matches this tool, so it is treated as irreversible"


@record
class ServerSpec:
    """``servers.NAME``: how to start a server and what we know about it."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict = factory(dict)
    cwd: str | None = None
    provenance: str | None = None
    pins: dict = factory(dict)
    origin: dict | None = None
    note: str | None = None
    saga: bool = False  # a failed call rolls the run back before it is answered (issue 10 item 8)


@record
class Policy:
    """A loaded, validated policy.

    Attributes:
        production_patterns: what marks a target as production (top-level
            ``production_patterns``; default :data:`DEFAULT_PRODUCTION_PATTERNS`); see
            :func:`production_match` for how a pattern matches.
        journal: where the journal is (top-level ``journal``: a ``postgresql://`` URL or a
            path), or None for ``journal.db`` beside the policy (issue 14).
        journal_fallback: ``spool`` (queue calls in a local file while a team journal cannot
            be reached, shipped later), or None: fail closed.
    """

    path: str
    servers: dict[str, ServerSpec]
    rules: tuple[Rule, ...]
    production_patterns: tuple[str, ...] = DEFAULT_PRODUCTION_PATTERNS
    journal: str | None = None
    journal_fallback: str | None = None

    def production_match(self, value: Any) -> str | None:
        """The pattern a server name or an argument value matches, or None.

        ``value`` may be a string or any JSON value (every string in it, at any depth, is
        looked at; keys are not).
        """
        for _, text in _strings(value, ""):
            found = production_match(self.production_patterns, text)
            if found is not None:
                return found
        return None

    def production_hits(self, server: str, args: Any) -> list[ProductionHit]:
        """Everything about a call that looks like production: the server name, then every
        string in ``args`` (in order), each with the pattern it matched."""
        hits = []
        found = production_match(self.production_patterns, server)
        if found is not None:
            hits.append(ProductionHit("server", server, found))
        for where, text in _strings(args, ""):
            found = production_match(self.production_patterns, text)
            if found is not None:
                hits.append(ProductionHit(where or "arguments", text, found))
        return hits

    def ordered_rules(self) -> list[Rule]:
        """Rules by specificity (reference-spec §2.8): longer literal text first, then fewer
        wildcards, then rules with a ``when`` before those without, then declaration order."""
        return sorted(self.rules, key=lambda r: (-(len(r.match) - r.match.count("*")),
                                                 r.match.count("*"), 0 if r.when else 1, r.index))

    def rule_for(self, server: str, tool: str, args: Any = None) -> Rule:
        """The rule that governs ``server.tool`` called with ``args``.

        Fail closed (DESIGN §3 step 1): no match, or a server the policy does not declare,
        gives an ``irreversible`` rule with ``gate: always`` and ``matched=False``.
        """
        qualified = f"{server}.{tool}"
        if server in self.servers:
            cache = self.__dict__.get("_ordered")
            if cache is None:  # sorted once: rule_for runs on every call
                cache = self.__dict__["_ordered"] = self.ordered_rules()
            for rule in cache:
                if rule.applies(qualified, args):
                    return rule
        return Rule(match=qualified, cls="irreversible", gate="always", matched=False,
                    note=FAIL_CLOSED if server in self.servers else
                    f"server {server} is not in the policy {self.path}, so every tool is held")

    def rules_for_server(self, server: str) -> list[Rule]:
        """Rules whose pattern's server part can match ``server``."""
        out = []
        for r in self.rules:
            if pattern_regex(r.match.split(".", 1)[0]).fullmatch(server):
                out.append(r)
        return out


def _strings(value: Any, where: str):
    """``(path, string)`` for every string in a JSON value, depth first, in order."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")
