"""Load and validate a policy file; every error names FILE:LINE:COL (DESIGN §4).

The YAML is composed into nodes first so each value keeps its position; validation follows
reference-spec §2.7 (schema, then cross-field rules, in that order) plus DESIGN §4's keys
(``provenance``, ``pins``, ``verify``, ``when``, list-valued ``inverse``) and ours
(``refuse_when``, ``sql_arg``, ``origin``, ``note``, top-level ``production_patterns``).
Unknown keys anywhere are errors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from synartesis.errors import PolicyError
from synartesis.paths import JournalURL, is_journal_url
from synartesis.policy.model import (
    CLASSES,
    DEFAULT_PRODUCTION_PATTERNS,
    GATES,
    ON_ABSENT,
    CallTemplate,
    Policy,
    Rule,
    ServerSpec,
    pattern_regex,
)
from synartesis.policy.refs import RefSyntaxError, references
from synartesis.policy.source import decode_policy, read_policy_bytes

__all__ = ["load_policy", "parse_policy"]

_TOP_KEYS = {"version", "servers", "tools", "production_patterns", "journal", "journal_fallback"}
_SERVER_KEYS = {"command", "args", "env", "cwd", "provenance", "pins", "origin", "note", "saga"}
_RULE_KEYS = {"match", "class", "gate", "snapshot", "inverse", "verify", "when", "sql_arg", "note", "hold_reason", "post_state",
              "settle"}
_CALL_KEYS = {"tool", "args", "absent_when", "refuse_when", "on_absent", "unordered"}
_PROVENANCE = ("live", "documented")

try:  # the C loader is several times faster; fall back when libyaml is absent
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


class _Located:
    """Plain Python values plus the (line, col) of every path in the document."""

    def __init__(self, filename: str, text: str = "") -> None:
        self.filename = filename
        self.marks: dict[tuple, tuple[int, int]] = {}
        self._seen: set[int] = set()
        self._lines = text.splitlines()
        # single-line scalars: path -> (line, start col, end col, style), 0-based, to point
        # inside a string at the character a reference error is about
        self._scalars: dict[tuple, tuple[int, int, int, str | None]] = {}

    def error_in_string(self, path: tuple, value: str, offset: int, message: str) -> PolicyError:
        """A PolicyError at character ``offset`` of the string at ``path`` when the source maps
        1:1 onto the value (plain, single-quoted, or double-quoted without escapes, on one
        line); otherwise at the start of the string."""
        found = self._scalars.get(tuple(path))
        if found is not None:
            line, start, end, style = found
            col = _source_column(self._lines[line][start:end] if line < len(self._lines) else "",
                                 style, value, offset)
            if col is not None:
                return PolicyError(message, self.filename, line + 1, start + col + 1)
        return self.error(path, message)

    def error(self, path: tuple, message: str) -> PolicyError:
        """A PolicyError located at the deepest node along ``path`` that exists."""
        p = tuple(path)
        while p not in self.marks and p:
            p = p[:-1]
        line, col = self.marks.get(p, (1, 1))
        return PolicyError(message, self.filename, line, col)

    def build(self, node: yaml.Node, path: tuple = ()) -> Any:
        self.marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self._seen:  # an alias: each one would be walked again (alias bombs)
                raise PolicyError("YAML anchors and aliases (&name / *name) are not supported in a policy; "
                                  "write the value out", self.filename, node.start_mark.line + 1,
                                  node.start_mark.column + 1)
            self._seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # at the << itself (review 19, F14: 1:1)
                    raise PolicyError("YAML merge keys (<<) are not supported in a policy; write the keys out",
                                      self.filename, key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                key = self._scalar(key_node)
                if not isinstance(key, (str, int, float, bool)) or isinstance(key, bool):
                    raise PolicyError("keys must be plain strings", self.filename,
                                      key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                key = str(key)
                if key in out:
                    raise PolicyError(f"duplicate key {key!r}", self.filename,
                                      key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                self.marks[path + (key, "<key>")] = (key_node.start_mark.line + 1,
                                                      key_node.start_mark.column + 1)
                out[key] = self.build(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(v, path + (i,)) for i, v in enumerate(node.value)]
        if node.start_mark.line == node.end_mark.line:
            self._scalars[path] = (node.start_mark.line, node.start_mark.column, node.end_mark.column,
                                   node.style or None)
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise PolicyError("a key must be a scalar", self.filename,
                              node.start_mark.line + 1, node.start_mark.column + 1)
        return yaml.constructor.SafeConstructor.construct_object(_CONSTRUCTOR, node, deep=True)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _source_column(raw: str, style: str | None, value: str, offset: int) -> int | None:
    """Column (0-based, from the scalar's start) of ``value[offset]`` in its source ``raw``,
    or None when the source does not map character for character onto the value."""
    if style is None:
        return offset if raw == value else None
    if style == '"':
        return offset + 1 if raw == f'"{value}"' and "\\" not in raw else None
    if style == "'":
        inner, cols, k = raw[1:-1], [], 0
        while k < len(inner):  # '' in the source is one ' in the value
            cols.append(k)
            k += 2 if inner.startswith("''", k) else 1
        return cols[offset] + 1 if len(cols) == len(value) and offset < len(cols) else None
    return None


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy at ``path``.

    Raises:
        PolicyError: missing/unreadable file, YAML syntax, schema or cross-field error,
            always with ``FILE:LINE:COL:`` where a position exists.
    """
    p = Path(path)
    return parse_policy(decode_policy(read_policy_bytes(p), str(p)), str(p))


def parse_policy(text: str, filename: str = "synartesis.yaml") -> Policy:
    """Validate policy ``text`` (see module docstring); ``filename`` is used in messages.

    Raises:
        PolicyError: located at FILE:LINE:COL.
    """
    loc = _Located(filename, text)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        msg = exc.problem or exc.context or "invalid YAML"
        if mark is not None:
            raise PolicyError(f"YAML syntax error: {msg}", filename, mark.line + 1, mark.column + 1) from None
        raise PolicyError(f"YAML syntax error: {msg}", filename) from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"YAML error: {exc}", filename) from None
    if node is None:
        raise PolicyError("the policy is empty; it needs version: 1, servers: and tools:", filename, 1, 1)
    try:
        doc = loc.build(node)
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        raise PolicyError(f"{exc.problem}", filename, (mark.line + 1) if mark else 1,
                          (mark.column + 1) if mark else 1) from None
    return _validate(doc, loc)


# -- schema ------------------------------------------------------------------------------

def _expect_map(loc: _Located, value: Any, path: tuple, what: str) -> dict:
    if not isinstance(value, dict):
        raise loc.error(path, f"{what} must be a mapping")
    return value


def _check_keys(loc: _Located, value: dict, allowed: set[str], path: tuple, what: str) -> None:
    for key in value:
        if key not in allowed:
            raise loc.error(path + (key, "<key>"),
                            f"unknown key {key!r} in {what}; expected one of: {', '.join(sorted(allowed))}")


def _nonempty_str(loc: _Located, value: Any, path: tuple, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise loc.error(path, f"{what} must be a non-empty string")
    return value


def _str_list(loc: _Located, value: Any, path: tuple, what: str, allow_str: bool = False) -> tuple[str, ...]:
    if allow_str and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise loc.error(path, f"{what} must be a list of non-empty strings")
    if allow_str and not value:
        raise loc.error(path, f"{what} must not be empty")
    return tuple(value)


def _validate(doc: Any, loc: _Located) -> Policy:
    doc = _expect_map(loc, doc, (), "the policy")
    _check_keys(loc, doc, _TOP_KEYS, (), "the policy")
    if "version" not in doc:
        raise loc.error((), "version is required: write `version: 1` at the top")
    if doc["version"] != 1 or isinstance(doc["version"], bool):
        raise loc.error(("version",), f"version must be 1 (this build reads version 1), not {doc['version']!r}")
    if "servers" not in doc:
        raise loc.error((), "servers is required: declare at least one server")
    servers_raw = _expect_map(loc, doc["servers"], ("servers",), "servers")
    if not servers_raw:
        raise loc.error(("servers",), "at least one server must be declared")
    servers = {name: _server(loc, name, spec) for name, spec in servers_raw.items()}
    tools_raw = doc.get("tools", [])
    if tools_raw is None:
        tools_raw = []
    if not isinstance(tools_raw, list):
        raise loc.error(("tools",), "tools must be a list of rules")
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(tools_raw):
        rule = _rule(loc, i, raw, servers)
        key = rule.match + ("" if rule.when is None else " when " + repr(sorted(rule.when.items())))
        if key in seen:
            raise loc.error(("tools", i, "match"),
                            f"duplicate match pattern {rule.match}; it is already declared at tools[{seen[key]}]")
        seen[key] = i
        rules.append(rule)
    return Policy(path=loc.filename, servers=servers, rules=tuple(rules),
                  production_patterns=_production_patterns(loc, doc), journal=_journal(loc, doc),
                  journal_fallback=_journal_fallback(loc, doc))


def _journal(loc: _Located, doc: dict) -> str | None:
    """``journal``: a ``postgresql://`` URL or a path; a URL never holds a literal password
    (a policy is shared and committed: the password comes from PGPASSWORD, ~/.pgpass or
    ``${VAR}``)."""
    if "journal" not in doc:
        return None
    value = doc["journal"]
    if not isinstance(value, str) or not value.strip():
        raise loc.error(("journal",), "journal must be a postgresql://USER@HOST/DB URL or a path to a journal file")
    if is_journal_url(value) and str(JournalURL(value)) != value:
        raise loc.error(("journal",), "the journal URL holds a password; a policy is no place for one: take it out "
                                      "and set PGPASSWORD, use ~/.pgpass, or write ${VAR} for the password")
    return value


def _journal_fallback(loc: _Located, doc: dict) -> str | None:
    """``journal_fallback``: ``spool`` or absent (fail closed)."""
    if "journal_fallback" not in doc:
        return None
    if doc["journal_fallback"] != "spool":
        raise loc.error(("journal_fallback",), "journal_fallback must be spool (or left out: fail closed)")
    return "spool"


def _production_patterns(loc: _Located, doc: dict) -> tuple[str, ...]:
    """``production_patterns``: a list of patterns (``[]`` flags nothing); absent = the default."""
    if "production_patterns" not in doc:
        return DEFAULT_PRODUCTION_PATTERNS
    value = doc["production_patterns"]
    path = ("production_patterns",)
    if not isinstance(value, list):
        raise loc.error(path, "production_patterns must be a list of patterns, e.g. [prod, production, live] "
                              "(write [] to flag nothing)")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise loc.error(path + (i,), f"production_patterns[{i}] must be a non-empty string "
                                         "(a word such as prod, or a glob such as \"*-prod-*\")")
    return tuple(value)


def _server(loc: _Located, name: str, spec: Any) -> ServerSpec:
    path = ("servers", name)
    if "." in name or "__" in name or not name.strip():
        raise loc.error(path + ("<key>",), f'server name {name!r} may not be empty or contain "." or "__"; both are reserved for qualifying tool names')
    spec = _expect_map(loc, spec if spec is not None else {}, path, f"servers.{name}")
    _check_keys(loc, spec, _SERVER_KEYS, path, f"servers.{name}")
    command = None
    if "command" in spec:
        command = _nonempty_str(loc, spec["command"], path + ("command",), f"servers.{name}.command")
    args: tuple[str, ...] = ()
    if "args" in spec:
        if not isinstance(spec["args"], list) or not all(isinstance(a, str) for a in spec["args"]):
            raise loc.error(path + ("args",), f"servers.{name}.args must be a list of strings")
        args = tuple(spec["args"])
    env = {}
    if "env" in spec:
        env = _expect_map(loc, spec["env"], path + ("env",), f"servers.{name}.env")
        for k, v in env.items():
            if not isinstance(v, str):
                raise loc.error(path + ("env", k), f"servers.{name}.env.{k} must be a string (quote numbers)")
    cwd = None
    if "cwd" in spec:
        cwd = _nonempty_str(loc, spec["cwd"], path + ("cwd",), f"servers.{name}.cwd")
    provenance = spec.get("provenance")
    if provenance is not None and provenance not in _PROVENANCE:
        raise loc.error(path + ("provenance",), f"provenance must be live or documented (leave it out for no claim), not {provenance!r}")
    pins = {}
    if "pins" in spec:
        pins = _expect_map(loc, spec["pins"] or {}, path + ("pins",), f"servers.{name}.pins")
        for tool, fp in pins.items():
            if not isinstance(fp, str) or not fp.startswith("sha256:") or len(fp) != 71:
                raise loc.error(path + ("pins", tool), f"pin for {tool} must be \"sha256:\" followed by 64 hex digits (print one with `synartesis pin`)")
    origin = None
    if "origin" in spec:
        origin = _expect_map(loc, spec["origin"], path + ("origin",), f"servers.{name}.origin")
        for k, v in origin.items():
            if not isinstance(v, (str, int, float, bool)) and v is not None:
                raise loc.error(path + ("origin", k), f"servers.{name}.origin.{k} must be a plain value")
    note = spec.get("note")
    if note is not None and not isinstance(note, str):
        raise loc.error(path + ("note",), "note must be a string")
    saga = spec.get("saga", False)
    if not isinstance(saga, bool):
        raise loc.error(path + ("saga",), f"servers.{name}.saga must be true or false, not {saga!r}")
    return ServerSpec(name=name, command=command, args=args, env=dict(env), cwd=cwd,
                      provenance=provenance, pins=dict(pins), origin=origin, note=note, saga=saga)


def _rule(loc: _Located, i: int, raw: Any, servers: dict[str, ServerSpec]) -> Rule:
    path = ("tools", i)
    raw = _expect_map(loc, raw, path, f"tools[{i}]")
    for key in ("on_absent", "absent_when", "unordered", "refuse_when"):
        if key in raw and key not in _RULE_KEYS:  # a read's key one level too high
            raise loc.error(path + (key, "<key>"), f"{key} belongs on a read: the rule's snapshot "
                            f"(snapshot: {{tool: …, {key}: …}}), not on the rule itself")
    _check_keys(loc, raw, _RULE_KEYS, path, f"tools[{i}]")
    if "match" not in raw:
        raise loc.error(path, f"tools[{i}] needs match: \"server.tool\"")
    match = _nonempty_str(loc, raw["match"], path + ("match",), "match")
    if "class" not in raw:
        raise loc.error(path, f"tools[{i}] ({match}) needs class: one of {', '.join(CLASSES)}")
    cls = raw["class"]
    if cls not in CLASSES:
        raise loc.error(path + ("class",), f"class must be one of {', '.join(CLASSES)}, not {cls!r}")
    gate = raw.get("gate")
    if gate is not None and gate not in GATES:
        raise loc.error(path + ("gate",), f"gate must be one of {', '.join(GATES)}, not {gate!r}")
    if gate is None:
        gate = "always" if cls == "irreversible" else "never"
    if "." not in match:
        raise loc.error(path + ("match",), f"{match} must be qualified as server.tool")
    server_part = match.split(".", 1)[0]
    if server_part not in servers and ("*" not in server_part
                                       or not any(pattern_regex(server_part).fullmatch(s) for s in servers)):
        raise loc.error(path + ("match",), f"{match} names server {server_part}, which is not declared")
    when = raw.get("when")
    if when is not None:
        when = _expect_map(loc, when, path + ("when",), "when")
        if not when:
            raise loc.error(path + ("when",), "when must name at least one argument")
    sql_arg = raw.get("sql_arg")
    if sql_arg is not None:
        sql_arg = _nonempty_str(loc, sql_arg, path + ("sql_arg",), "sql_arg")
        if gate != "on_write":
            raise loc.error(path + ("sql_arg",), "sql_arg only means something with gate: on_write")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise loc.error(path + ("note",), "note must be a string")
    hold_reason = raw.get("hold_reason")
    if hold_reason is not None and (not isinstance(hold_reason, str) or not hold_reason.strip().rstrip(".").strip()):
        raise loc.error(path + ("hold_reason",), "hold_reason must be a sentence saying why the call is held")
    if hold_reason is not None and cls == "readonly" and gate == "never":
        raise loc.error(path + ("hold_reason",), "hold_reason says why a call is held, and this rule holds none "
                        "(readonly, gate: never); drop it, or set gate: always")

    snapshot = _call(loc, raw["snapshot"], path + ("snapshot",), servers, allowed={"args"},
                     reads=True, snapshot=True) if "snapshot" in raw else None
    inverse_raw = raw.get("inverse")
    inverse: tuple[CallTemplate, ...] = ()
    if inverse_raw is not None:
        allowed = {"args", "result"} | ({"snapshot"} if snapshot else set())
        if isinstance(inverse_raw, list):
            if not inverse_raw:
                raise loc.error(path + ("inverse",), "an inverse list must hold at least one call")
            inverse = tuple(_call(loc, c, path + ("inverse", j), servers, allowed=allowed | {"snapshot"})
                            for j, c in enumerate(inverse_raw))
        else:
            inverse = (_call(loc, inverse_raw, path + ("inverse",), servers, allowed=allowed | {"snapshot"}),)
    verify = _call(loc, raw["verify"], path + ("verify",), servers, allowed={"args", "result"},
                   reads=True) if "verify" in raw else None
    settle = _call(loc, raw["settle"], path + ("settle",), servers, allowed={"args"},
                   reads=True) if "settle" in raw else None

    if cls in ("reversible", "compensable") and not inverse:
        raise loc.error(path + ("class",), f"a {cls} tool must declare an inverse")
    if cls in ("readonly", "irreversible") and inverse:
        raise loc.error(path + ("inverse",), f"a {cls} tool must not declare an inverse")
    if cls == "readonly" and snapshot:
        raise loc.error(path + ("snapshot",), "a readonly tool must not declare a snapshot")
    if verify and cls != "compensable":
        raise loc.error(path + ("verify",), "verify is for compensable tools (a reversible tool's snapshot is its drift read)")
    if verify and snapshot:
        raise loc.error(path + ("verify",), "verify is used only where no pre-read exists; this rule has a snapshot")
    if settle and cls == "readonly":
        raise loc.error(path + ("settle",), "a readonly tool needs no settle read (its error changes nothing)")
    if settle and (snapshot or verify):
        raise loc.error(path + ("settle",), "settle is used only where no other read exists; this rule's "
                        f"{'snapshot' if snapshot else 'verify read'} already settles an error")
    uses_snapshot = False
    for j, call in enumerate(inverse):
        ipath = path + (("inverse", j) if isinstance(inverse_raw, list) else ("inverse",))
        for ref, ns, where in _refs(loc, call.args, ipath + ("args",)):
            if ns == "snapshot":
                uses_snapshot = True
                if not snapshot:
                    raise loc.error(where, "this inverse reads $snapshot, so a snapshot must be declared")
    del uses_snapshot
    post_state = None
    if "post_state" in raw:
        post_state = _post_state(loc, raw["post_state"], path + ("post_state",), snapshot, verify)
    return Rule(match=match, cls=cls, gate=gate, snapshot=snapshot, inverse=inverse, verify=verify,
                when=when, sql_arg=sql_arg, note=note, index=i, post_state=post_state, settle=settle,
                # "…, because {hold_reason}. It was not sent.": a closing full stop would double
                hold_reason=hold_reason.strip().rstrip(".").rstrip() if hold_reason else None)


def _post_state(loc: _Located, value: Any, path: tuple, snapshot: CallTemplate | None,
                verify: CallTemplate | None) -> Any:
    """``post_state``: what the rule's read (its snapshot or verify) returns right after the
    call, as a template over ``$.``, ``$result.`` and (with a snapshot) ``$snapshot.`` (e.g.
    ``{content: "$.content"}`` for a
    ``write_file``); the proxy stores it instead of reading back (marked "declared")."""
    if snapshot is None and verify is None:
        raise loc.error(path, "post_state replaces the read after the call, so the rule needs a snapshot or a verify read")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise loc.error(path, "post_state must be a reference such as \"$.content\" or a mapping of them")
    allowed = ("args", "result", "snapshot") if snapshot is not None else ("args", "result")
    for ref, ns, where in _refs(loc, value, path):
        if ns not in allowed:
            raise loc.error(where, f"{ref} uses ${ns}, which is not available here; allowed: "
                            + ", ".join({"args": "$.", "result": "$result.", "snapshot": "$snapshot."}[n] for n in allowed))
    return value


def _refs(loc: _Located, template: Any, path: tuple) -> list[tuple[str, str, tuple]]:
    """Every reference in ``template`` with the path of the value that holds it."""
    out: list[tuple[str, str, tuple]] = []
    if isinstance(template, dict):
        for k, v in template.items():
            out.extend(_refs(loc, v, path + (k,)))
    elif isinstance(template, list):
        for i, v in enumerate(template):
            out.extend(_refs(loc, v, path + (i,)))
    elif isinstance(template, str):
        try:
            out.extend((ref, ns, path) for ref, ns in references(template))
        except RefSyntaxError as exc:
            raise loc.error_in_string(path, template, exc.offset, f"{template!r}: {exc.problem}") from None
    return out


def _call(loc: _Located, raw: Any, path: tuple, servers: dict[str, ServerSpec], *,
          allowed: set[str], reads: bool = False, snapshot: bool = False) -> CallTemplate:
    what = ".".join(str(p) for p in path[2:]) or "call"
    raw = _expect_map(loc, raw, path, what)
    _check_keys(loc, raw, _CALL_KEYS, path, what)
    if "tool" not in raw:
        raise loc.error(path, f"{what} needs tool: \"server.tool\"")
    tool = _nonempty_str(loc, raw["tool"], path + ("tool",), f"{what}.tool")
    if "." not in tool:
        raise loc.error(path + ("tool",), f"{tool} must be qualified as server.tool")
    server, tool_name = tool.split(".", 1)
    if "*" in server:
        raise loc.error(path + ("tool",), f"{tool} must name one server, not a pattern")
    if server not in servers:
        raise loc.error(path + ("tool",), f"{tool} names server {server}, which is not declared")
    args = raw.get("args", {})
    if args is None:
        args = {}
    args = _expect_map(loc, args, path + ("args",), f"{what}.args")
    for ref, ns, where in _refs(loc, args, path + ("args",)):
        if ns not in allowed:
            names = {"args": "$.", "snapshot": "$snapshot.", "result": "$result."}
            raise loc.error(where, f"{ref} uses ${ns}, which is not available here; allowed: "
                            + ", ".join(names[n] for n in ("args", "snapshot", "result") if n in allowed))
    absent_when: tuple[str, ...] = ()
    refuse_when: tuple[str, ...] = ()
    if "absent_when" in raw:
        if not reads:
            raise loc.error(path + ("absent_when",), "absent_when belongs on a read (snapshot or verify), not on an inverse")
        absent_when = _str_list(loc, raw["absent_when"], path + ("absent_when",), "absent_when", allow_str=True)
    if "refuse_when" in raw:
        if not reads:
            raise loc.error(path + ("refuse_when",), "refuse_when belongs on a read (snapshot or verify), not on an inverse")
        refuse_when = _str_list(loc, raw["refuse_when"], path + ("refuse_when",), "refuse_when", allow_str=True)
    on_absent = "hold"
    if "on_absent" in raw:
        if not snapshot:
            raise loc.error(path + ("on_absent",), "on_absent belongs on a snapshot, the read that finds nothing to restore")
        on_absent = raw["on_absent"]
        if on_absent not in ON_ABSENT:
            raise loc.error(path + ("on_absent",), f"on_absent must be one of {', '.join(ON_ABSENT)}, not {on_absent!r}")
    unordered = False
    if "unordered" in raw:
        if not reads:
            raise loc.error(path + ("unordered",), "unordered belongs on a read (snapshot, verify or settle), not on an inverse")
        if not isinstance(raw["unordered"], bool):
            raise loc.error(path + ("unordered",), f"unordered must be true or false, not {raw['unordered']!r}")
        unordered = raw["unordered"]
    return CallTemplate(server=server, tool=tool_name, args=args, absent_when=absent_when,
                        refuse_when=refuse_when, on_absent=on_absent, unordered=unordered)
