"""One adapter interface over client config files: read entries, render new bytes. Never write.

``read`` parses a file (refusing anything that is not strict JSON / TOML 1.0, or that has
duplicate keys) and lists its server entries. ``render`` applies a list of changes — wrap an
entry, restore one we wrapped, add or remove a Claude Code local-scope shadow — and returns the
new bytes plus one record per change, which is what ``uninstall`` later needs to put the
original back byte for byte. Writing is :mod:`synartesis.fsops`'s job (STYLE §4.2).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from synartesis.clients import jsonedit, tomledit
from synartesis.clients.descriptor import ClientDescriptor, FileSpec, ProjectSpec
from synartesis.clients.entries import SURROGATE_DETAIL, ServerEntry, classify, display_name, has_surrogate, value_sha
from synartesis.clients.locations import ConfigLocation
from synartesis.errors import ConfigParseError
from synartesis.redact import DISPLAY_MARK, redact_argv, redact_member, redact_text

__all__ = [
    "value_at",
    "ConfigView",
    "Wrap",
    "WrapRemote",
    "Unwrap",
    "AddShadow",
    "RemoveShadow",
    "Change",
    "Rendered",
    "EntryShapeError",
    "ClientAdapter",
    "JsonAdapter",
    "TomlAdapter",
    "adapter_for",
    "text_sha",
    "expected_after",
    "shown_text",
    "render_template",
]


class EntryShapeError(ValueError):
    """An entry or a record does not fit the change asked for (nothing is rendered)."""


@dataclass
class ConfigView:
    """A parsed config file.

    Attributes:
        location: where it is.
        data: the exact bytes read.
        value: the parsed document (plain Python values).
        entries: every server entry found at the descriptor's server paths.
        notes: remarks (e.g. "mcpServers is not an object").
    """

    location: ConfigLocation
    data: bytes
    value: Any
    entries: list[ServerEntry]
    notes: list[str] = field(default_factory=list)
    text: str = ""
    bom: bool = False
    tree: Any = None


@dataclass(frozen=True)
class Wrap:
    """Replace ``command``/``args`` of the entry at ``locator`` with ``prefix + [cmd, *args]``."""

    locator: tuple[str, ...]
    prefix: tuple[str, ...]


@dataclass(frozen=True)
class WrapRemote:
    """Turn the remote entry at ``locator`` into a stdio entry that runs the bridge.

    ``command``/``args`` (and ``env`` entries carrying header references, and for Codex the
    ``env_vars`` names to pass through) are added. JSON: ``type`` becomes ``"stdio"`` (added
    when absent) and every other key stays as it is. TOML (Codex rejects ``url`` next to
    ``command``): the HTTP-only keys and sub-tables are turned into comments
    (``# synartesis: …``), so the file still holds them and uninstall gives the bytes back.
    """

    locator: tuple[str, ...]
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    env_vars: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unwrap:
    """Restore an entry we wrapped, from its install record."""

    record: Mapping[str, Any]


@dataclass(frozen=True)
class AddShadow:
    """Add entry ``name`` = ``value`` under the object path ``container`` (created as needed)."""

    container: tuple[str, ...]
    name: str
    value: Mapping[str, Any]


@dataclass(frozen=True)
class RemoveShadow:
    """Remove a shadow entry we added, from its install record."""

    record: Mapping[str, Any]


Change = Wrap | WrapRemote | Unwrap | AddShadow | RemoveShadow


@dataclass(frozen=True)
class Rendered:
    """New file bytes and, per change, the record of what was done (same order as changes)."""

    data: bytes
    records: list[dict[str, Any]]


def text_sha(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


Template = list  # of str (layout text: brackets, commas, whitespace) and int (an args index)
"""How an original ``command``/``args`` text is rebuilt without keeping it: the layout between
values is kept as text, each value is the index of the element of the *wrapped* entry's
``args`` that holds it verbatim (issue 9 item 3: the install record keeps no argument)."""


def _template(text: str, spans: Sequence[tuple[int, int]], first: int) -> Template:
    out: Template = []
    pos = 0
    for n, (s, e) in enumerate(spans):
        if s > pos:
            out.append(text[pos:s])
        out.append(first + n)
        pos = e
    if pos < len(text):
        out.append(text[pos:])
    return out


def render_template(template: Any, elements: Sequence[str]) -> str:
    """The text a record's template stands for, given the wrapped entry's ``args`` element texts.

    A plain string is returned as it is (records written before templates existed).

    Raises:
        EntryShapeError: the template points past the entry's ``args``.
    """
    if isinstance(template, str):
        return template
    out = []
    for part in template:
        if isinstance(part, int):
            if not 0 <= part < len(elements):
                raise EntryShapeError("the entry's args no longer hold the original command line")
            out.append(elements[part])
        else:
            out.append(str(part))
    return "".join(out)


def value_at(value: Any, path: Sequence[Any]) -> Any:
    """What ``path`` (keys, an entry's locator) names inside ``value``; None when it names nothing."""
    for k in path:
        if not isinstance(value, dict) or k not in value:
            return None
        value = value[k]
    return value


def _sans_env(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != "env"}


def env_fields(value: Any) -> dict[str, Any]:
    """What a record keeps to tell an edit of ``env`` alone from any other (a new user's round
    31, #8): the digest of the written entry without ``env``, and its env *names* (never a
    value, nor a digest of one: a short secret could be guessed back from it)."""
    if not isinstance(value, dict):
        return {}
    env = value.get("env")
    names = sorted(str(k) for k in env) if isinstance(env, dict) else None
    return {"written_sans_env_sha": value_sha(_sans_env(value)), "env_names": names}


def env_edit(record: Mapping[str, Any], value: Any) -> list[str] | None:
    """When ``value`` differs from what synartesis wrote in ``env`` alone: what changed, by name
    only (``MEMORY_FILE_PATH removed``, ``the value of X changed``); else None (something else
    changed too, or the record predates this check)."""
    sha = record.get("written_sans_env_sha")
    if not isinstance(sha, str) or not isinstance(value, dict) or value_sha(_sans_env(value)) != sha:
        return None
    if value_sha(value) == record.get("written_value_sha"):
        return None
    env = value.get("env")
    if env is None:
        return ["env removed"]
    if not isinstance(env, dict):  # a table when written, or never one (absent, a string, a list)
        return ["env is no longer a table of names" if isinstance(record.get("env_names"), list)
                else "env set to something other than a table of names"]
    was = record.get("env_names") if isinstance(record.get("env_names"), list) else []
    now = [str(k) for k in env]
    out = [f"{n} removed" for n in was if n not in now] + [f"{n} added" for n in now if n not in was]
    if not out and not now:  # no names before or now: {} where there was none, or none where {} was
        out = ["an empty env added" if record.get("env_names") is None else "env emptied"]
    if not out:  # the same names: a value changed, and which one is not recorded
        out = [f"the value of {now[0]} changed" if len(now) == 1 else f"a value changed (one of {', '.join(now)})"]
    return out


def env_edit_restorable(record: Mapping[str, Any], value: Any) -> bool:
    """True when ``value`` is what synartesis wrote but for ``env`` and the record is a plain
    wrap: synartesis never wrote that entry's ``env``, so putting the command back keeps the
    user's env edit. A local shadow was written whole (its env copied from .mcp.json), and a
    bridged remote entry's env holds synartesis's members: those are not."""
    return record.get("op") == "wrap" and env_edit(record, value) is not None


def _servers_paths(spec: FileSpec | ProjectSpec) -> list[tuple[str, tuple[str, ...]]]:
    if isinstance(spec, FileSpec):
        return [(s.scope, s.path) for s in spec.servers]
    return [(spec.scope, tuple(p.split("."))) for p in spec.servers]


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def _entries(value: Any, loc: ConfigLocation,
             fmt: str) -> tuple[list[ServerEntry], list[tuple[tuple[str, ...], str]]]:
    """Server entries at the descriptor's paths, and every place on those paths that holds
    something other than an object (``(key path, "a string")``): a configuration error, since
    the client cannot read servers from it either (issue 9 item 9)."""
    entries: list[ServerEntry] = []
    wrong: list[tuple[tuple[str, ...], str]] = []
    for scope, path in _servers_paths(loc.spec):
        containers: list[tuple[tuple[str, ...], Any, str | None]] = [((), value, loc.project)]
        for step in path:
            nxt = []
            for prefix, node, project in containers:
                if not isinstance(node, dict):
                    wrong.append((prefix, _kind_of(node)))
                    continue
                if step == "*":
                    for k, v in node.items():
                        nxt.append(((*prefix, k), v, k))
                elif step in node:
                    nxt.append(((*prefix, step), node[step], project))
            containers = nxt
        for prefix, node, project in containers:
            if not isinstance(node, dict):
                wrong.append((prefix, _kind_of(node)))
                continue
            for name, entry in node.items():
                kind, detail = classify(entry, fmt)
                if kind != "invalid" and has_surrogate(name):
                    kind, detail = "invalid", SURROGATE_DETAIL
                entries.append(ServerEntry(scope, name, (*prefix, name), entry, project, kind, detail))
    return entries, wrong


def _wrong_type_error(loc: ConfigLocation, wrong: list[tuple[tuple[str, ...], str]],
                      text: str = "", root: jsonedit.Node | None = None) -> ConfigParseError:
    prefix, kind = wrong[0]
    dotted = ".".join(display_name(k) for k in prefix) or "the top level"
    line = col = 0
    node = jsonedit.find(root, prefix) if root is not None else None
    if node is not None:
        line = text.count("\n", 0, node.start) + 1
        col = node.start - (text.rfind("\n", 0, node.start) + 1) + 1
    more = f" (and {len(wrong) - 1} more such place{'s' if len(wrong) > 2 else ''})" if len(wrong) > 1 else ""
    return _parse_error(loc, line, col, f"{dotted} is {kind}, not an object, where MCP servers are listed{more}; "
                                        "the file was not changed: fix it, then run this again")


class ClientAdapter(Protocol):
    """What install/status/uninstall need from a config format (STYLE §4.2)."""

    descriptor: ClientDescriptor

    def read(self, location: ConfigLocation, data: bytes) -> ConfigView:
        """Parse ``data`` (the bytes of ``location``).

        Raises:
            ConfigParseError: not strict JSON / TOML, or duplicate keys (``FILE:LINE:COL: …``).
        """
        ...

    def render(self, view: ConfigView, changes: Sequence[Change]) -> Rendered:
        """The file's new bytes with ``changes`` applied, and a record per change.

        Raises:
            EntryShapeError: an entry or record does not fit its change.
        """
        ...

    def record_state(self, view: ConfigView, record: Mapping[str, Any]) -> str:
        """Where a recorded change stands now: ``exact`` (text as we wrote it), ``equal``
        (same value, other formatting), ``original`` (back to what it was before us),
        ``edited`` (someone changed it) or ``missing`` (entry gone)."""
        ...

    def upgrade_record(self, view: ConfigView, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """An older record rewritten so it keeps no original argument text, or None."""
        ...


def _parse_error(loc: ConfigLocation, line: int, col: int, detail: str) -> ConfigParseError:
    where = f"{loc.path}:{line}:{col}" if line else str(loc.path)
    return ConfigParseError(f"{where}: {detail}")


class JsonAdapter:
    """Strict-JSON client configs (Claude Code, Claude Desktop, Cursor)."""

    def __init__(self, descriptor: ClientDescriptor) -> None:
        self.descriptor = descriptor

    # -- reading -------------------------------------------------------------------------
    def read(self, location: ConfigLocation, data: bytes) -> ConfigView:
        """See :meth:`ClientAdapter.read`."""
        try:
            text, bom = jsonedit.decode(data)
            root = jsonedit.parse(text)
        except jsonedit.JsonSyntaxError as exc:
            raise _parse_error(location, exc.line if exc.located else 0, exc.col,
                               exc.detail) from None
        if root.kind != "object":
            raise _parse_error(location, 1, 1, "the top level is not an object")
        entries, wrong = _entries(root.value, location, "json")
        if wrong:
            raise _wrong_type_error(location, wrong, text, root)
        return ConfigView(location, data, root.value, entries, [], text, bom, root)

    # -- record checks ------------------------------------------------------------------
    def record_state(self, view: ConfigView, record: Mapping[str, Any]) -> str:
        """See :meth:`ClientAdapter.record_state`."""
        node = jsonedit.find(view.tree, record["locator"])
        if node is None:
            return "missing"
        if text_sha(view.text[node.start:node.end]) == record.get("written_sha"):
            return "exact"
        vs = value_sha(node.value)
        if vs == record.get("written_value_sha"):
            return "equal"
        if record.get("original_value_sha") and vs == record["original_value_sha"]:
            return "original"
        return "edited"

    def upgrade_record(self, view: ConfigView, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """A record written before templates existed (it holds the original ``command``/``args``
        texts, secrets included) rewritten without them, or None when it is already clean or
        cannot be rewritten safely (the entry is no longer exactly what we wrote)."""
        if record.get("op") != "wrap" or not _legacy(record):
            return None
        node = jsonedit.find(view.tree, record["locator"])
        if node is None or node.kind != "object" or text_sha(view.text[node.start:node.end]) != record.get("written_sha"):
            return None
        elems = self._elements(view.text, node)
        at = _after_dashdash(node.value.get("args"))
        if at is None:
            return None
        cmd_tpl: Template = [at]
        args_tpl: Template | None = None
        if record.get("orig_args") is not None:
            try:
                arr = jsonedit.parse(record["orig_args"])
            except jsonedit.JsonSyntaxError:
                return None
            args_tpl = _template(record["orig_args"], [(n.start, n.end) for n in arr.items or []], at + 1)
        return _upgraded(record, cmd_tpl, args_tpl, elems, view.text[node.start:node.end])

    # -- rendering ------------------------------------------------------------------------
    def render(self, view: ConfigView, changes: Sequence[Change]) -> Rendered:
        """See :meth:`ClientAdapter.render`."""
        text, root = view.text, view.tree
        records: list[dict[str, Any] | None] = [None] * len(changes)
        batch: list[int] = []

        def flush() -> None:
            nonlocal text, root
            if not batch:
                return
            edits: list[jsonedit.Edit] = []
            for i in batch:
                ch = changes[i]
                if isinstance(ch, Wrap):
                    e, rec = self._wrap(text, root, ch)
                elif isinstance(ch, WrapRemote):
                    e, rec = self._wrap_remote(text, root, ch)
                elif isinstance(ch, Unwrap) and ch.record.get("op") == "wrap-remote":
                    e, rec = self._unwrap_remote(text, root, ch.record)
                elif isinstance(ch, Unwrap):
                    e, rec = self._unwrap(text, root, ch.record)
                else:
                    raise EntryShapeError(f"unexpected change {ch!r}")
                edits.extend(e)
                records[i] = rec
            text = jsonedit.apply_edits(text, edits)
            root = jsonedit.parse(text)
            batch.clear()

        for i, ch in enumerate(changes):
            if isinstance(ch, (Wrap, WrapRemote, Unwrap)):
                batch.append(i)
                continue
            flush()
            if isinstance(ch, AddShadow):
                text, records[i] = self._add_shadow(text, root, ch)
            else:
                text, records[i] = self._remove_shadow(text, root, ch.record)
            root = jsonedit.parse(text)
        flush()
        return Rendered(jsonedit.encode(text, view.bom), [r or {} for r in records])

    @staticmethod
    def _entry(root: jsonedit.Node, locator: Sequence[str]) -> jsonedit.Node:
        node = jsonedit.find(root, locator)
        if node is None or node.kind != "object":
            raise EntryShapeError(f"no entry at {'/'.join(locator)}")
        return node

    def _wrap(self, text: str, root: jsonedit.Node, ch: Wrap) -> tuple[list[jsonedit.Edit], dict[str, Any]]:
        entry = self._entry(root, ch.locator)
        cmd_m = entry.member("command")
        args_m = entry.member("args")
        if cmd_m is None or cmd_m.node.kind != "string":
            raise EntryShapeError("command is not a string")
        if args_m is not None and (args_m.node.kind != "array"
                                   or any(n.kind != "string" for n in args_m.node.items or [])):
            raise EntryShapeError("args is not a list of strings")
        nl = jsonedit.newline_of(text)
        cmd = cmd_m.node
        elems = [jsonedit.dumps_string(p) for p in ch.prefix[1:]] + [text[cmd.start:cmd.end]]
        new_cmd = jsonedit.dumps_string(ch.prefix[0])
        if args_m is not None:
            elems += [text[n.start:n.end] for n in args_m.node.items or []]
            arr = jsonedit.format_array(elems, text, args_m.node, nl=nl)
            edits = [(cmd.start, cmd.end, new_cmd), (args_m.node.start, args_m.node.end, arr)]
        else:
            sep = text[cmd_m.key_end:cmd.start]
            if "\n" in sep or "\r" in sep:
                sep = ": "
            mi = jsonedit.line_indent(text, cmd_m.key_start)
            if mi is not None:
                unit = jsonedit.indent_unit(text, entry)
                arr = jsonedit.format_array(elems, text, None, multiline_indent=mi + unit,
                                            close_indent=mi, nl=nl)
                ins = "," + nl + mi + '"args"' + sep + arr
            else:
                ins = ', "args"' + sep + jsonedit.format_array(elems, text, None)
            edits = [(cmd.start, cmd.end, new_cmd + ins)]
        old_entry = text[entry.start:entry.end]
        at = len(ch.prefix) - 1  # where the original command sits in the new args
        cmd_tpl: Template = [at]
        args_tpl: Template | None = None
        if args_m is not None:
            arr = args_m.node
            args_tpl = _template(text[arr.start:arr.end],
                                 [(n.start - arr.start, n.end - arr.start) for n in arr.items or []], at + 1)
        by_start = {cmd.start: cmd_tpl}
        if args_m is not None:
            by_start[args_m.node.start] = args_tpl
        rel = sorted((s - entry.start, e - entry.start, r, by_start[s]) for s, e, r in edits)
        written = jsonedit.apply_edits(old_entry, [(s, e, r) for s, e, r, _ in rel])
        reverse = []
        delta = 0
        for s, e, r, tpl in rel:
            reverse.append([s + delta, s + delta + len(r), tpl])
            delta += len(r) - (e - s)
        written_value = jsonedit.parse(written).value
        return edits, {
            "op": "wrap",
            "format": "json",
            "locator": list(ch.locator),
            "orig_command": cmd_tpl,
            "orig_args": args_tpl,
            "reverse": reverse,
            "original_sha": text_sha(old_entry),
            "written_sha": text_sha(written),
            "written_value_sha": value_sha(written_value),
            "original_value_sha": value_sha(entry.value),
            "proxy": ch.prefix[0],
        }

    @staticmethod
    def remote_value(value: Mapping[str, Any], ch: WrapRemote) -> dict[str, Any]:
        """The value a remote entry has once wrapped (what :meth:`_wrap_remote` writes)."""
        out = dict(value)
        out["type"] = "stdio"
        out["command"] = ch.command
        out["args"] = list(ch.args)
        if ch.env:
            out["env"] = dict(ch.env)
        return out

    def _wrap_remote(self, text: str, root: jsonedit.Node,
                     ch: WrapRemote) -> tuple[list[jsonedit.Edit], dict[str, Any]]:
        entry = self._entry(root, ch.locator)
        for key in ("command", "args", "env"):
            if entry.member(key) is not None:
                raise EntryShapeError(f"the remote entry already has {key!r}; not wrapped")
        if not entry.members:
            raise EntryShapeError("the remote entry is an empty object")
        old = text[entry.start:entry.end]
        # edits are made on the whole text (so indentation is measured where the entry really
        # is), one at a time, all inside the entry; its new text replaces the old in one edit
        cur, node = text, entry
        reverse: list[list[Any]] = []
        type_m = node.member("type")
        if type_m is not None:
            t = type_m.node
            cur = cur[:t.start] + '"stdio"' + cur[t.end:]
            reverse.append([t.start - entry.start, t.start - entry.start + len('"stdio"'), [old[t.start - entry.start:t.end - entry.start]]])
            node = self._entry(jsonedit.parse(cur), ch.locator)
        ins_start = node.members[-1].node.end
        members: list[tuple[str, Any]] = ([] if type_m is not None else [("type", "stdio")]) + \
            [("command", ch.command), ("args", list(ch.args))] + ([("env", dict(ch.env))] if ch.env else [])
        before = len(cur)
        for key, value in members:
            def render(mi: str | None, unit: str, nl: str, value: Any = value) -> str:
                if mi is None:
                    return json.dumps(value, ensure_ascii=False)
                return jsonedit.dump_value(value, mi, unit, nl)
            cur = jsonedit.apply_edits(cur, [jsonedit.insert_member(cur, node, key, render)])
            node = self._entry(jsonedit.parse(cur), ch.locator)
        reverse.append([ins_start - entry.start, ins_start - entry.start + len(cur) - before, [""]])
        written = cur[node.start:node.end]
        restored = jsonedit.apply_edits(written, [(a, b, render_template(t, [])) for a, b, t in reverse])
        if restored != old:
            raise EntryShapeError("the wrapped entry would not give the original back")
        written_value = node.value
        if written_value != self.remote_value(entry.value, ch):
            raise EntryShapeError("the wrapped entry is not what was meant")
        return [(entry.start, entry.end, written)], {
            "op": "wrap-remote",
            "format": "json",
            "locator": list(ch.locator),
            "reverse": reverse,
            "original_sha": text_sha(old),
            "written_sha": text_sha(written),
            "written_value_sha": value_sha(written_value),
            "original_value_sha": value_sha(entry.value),
            "type": entry.value.get("type") if isinstance(entry.value.get("type"), str) else None,
            "added_type": type_m is None,
            "proxy": ch.command,
        }

    def _unwrap_remote(self, text: str, root: jsonedit.Node,
                       record: Mapping[str, Any]) -> tuple[list[jsonedit.Edit], dict[str, Any]]:
        entry = self._entry(root, record["locator"])
        cur = text[entry.start:entry.end]
        if text_sha(cur) == record["written_sha"]:
            restored = jsonedit.apply_edits(cur, [(int(a), int(b), render_template(t, []))
                                                  for a, b, t in record["reverse"]])
            if text_sha(restored) != record["original_sha"]:
                raise EntryShapeError("the recorded restore does not give back the original entry")
            return [(entry.start, entry.end, restored)], {"op": "unwrap", "how": "exact"}
        if value_sha(entry.value) != record["written_value_sha"]:
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        # the same value, formatted by someone else: take our members out, put the type back
        edits: list[jsonedit.Edit] = []
        keys = ["command", "args", "env"] + (["type"] if record.get("added_type") else [])
        work, node = cur, jsonedit.parse(cur)
        for key in keys:
            rm = jsonedit.remove_member(work, node, key)
            if rm is not None:
                work = jsonedit.apply_edits(work, [rm])
                node = jsonedit.parse(work)
        if not record.get("added_type") and record.get("type") is not None:
            t = node.member("type")
            if t is not None:
                work = work[:t.node.start] + jsonedit.dumps_string(record["type"]) + work[t.node.end:]
        edits.append((entry.start, entry.end, work))
        return edits, {"op": "unwrap", "how": "value"}

    @staticmethod
    def _elements(text: str, entry: jsonedit.Node) -> list[str]:
        """The texts of the entry's ``args`` elements (where a record's templates point)."""
        args = entry.member("args")
        if args is None or args.node.kind != "array":
            return []
        return [text[n.start:n.end] for n in args.node.items or []]

    def _unwrap(self, text: str, root: jsonedit.Node,
                record: Mapping[str, Any]) -> tuple[list[jsonedit.Edit], dict[str, Any]]:
        entry = self._entry(root, record["locator"])
        cur = text[entry.start:entry.end]
        elems = self._elements(text, entry)
        if text_sha(cur) == record["written_sha"]:
            restored = jsonedit.apply_edits(cur, [(int(a), int(b), render_template(t, elems))
                                                  for a, b, t in record["reverse"]])
            if record.get("original_sha") and text_sha(restored) != record["original_sha"]:
                raise EntryShapeError("the recorded restore does not give back the original entry")
            return [(entry.start, entry.end, restored)], {"op": "unwrap", "how": "exact"}
        if value_sha(entry.value) != record["written_value_sha"] and not env_edit_restorable(record, entry.value):
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        cmd = entry.member("command")
        assert cmd is not None  # the value equals what we wrote, which has a command
        edits: list[jsonedit.Edit] = [(cmd.node.start, cmd.node.end, render_template(record["orig_command"], elems))]
        if record.get("orig_args") is None:
            rm = jsonedit.remove_member(text, entry, "args")
            if rm:
                edits.append(rm)
        else:
            args = entry.member("args")
            assert args is not None
            edits.append((args.node.start, args.node.end, render_template(record["orig_args"], elems)))
        return edits, {"op": "unwrap", "how": "value"}

    def _add_shadow(self, text: str, root: jsonedit.Node, ch: AddShadow) -> tuple[str, dict[str, Any]]:
        path = list(ch.container)
        node = root
        depth = 0
        for k in path:
            m = node.member(k)
            if m is None:
                break
            if m.node.kind != "object":
                raise EntryShapeError(f"{'/'.join(path[:depth + 1])} is not an object")
            node = m.node
            depth += 1
        if depth == len(path) and node.member(ch.name) is not None:
            raise EntryShapeError(f"{ch.name!r} already exists there")
        missing = path[depth:]
        key = missing[0] if missing else ch.name
        value: Any = dict(ch.value)
        for k in reversed([*missing[1:], ch.name] if missing else []):
            value = {k: value}

        def render(mi: str | None, unit: str, nl: str) -> str:
            if mi is None:
                return json.dumps(value, ensure_ascii=False)
            return jsonedit.dump_value(value, mi, unit, nl)

        empty_text = text[node.start:node.end] if not node.members else None
        edit = jsonedit.insert_member(text, node, key, render)
        new_text = jsonedit.apply_edits(text, [edit])
        new_root = jsonedit.parse(new_text)
        locator = [*path, ch.name]
        entry = self._entry(new_root, locator)
        return new_text, {
            "op": "shadow",
            "format": "json",
            "locator": locator,
            "insert_at": path[:depth],
            "inserted_key": key,
            "empty_text": empty_text,
            "written_sha": text_sha(new_text[entry.start:entry.end]),
            "written_value_sha": value_sha(entry.value),
            "original_value_sha": None,
            "proxy": ch.value.get("command"),
        }

    def _remove_shadow(self, text: str, root: jsonedit.Node,
                       record: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        locator = list(record["locator"])
        entry = self._entry(root, locator)
        if (text_sha(text[entry.start:entry.end]) != record["written_sha"]
                and value_sha(entry.value) != record["written_value_sha"]):
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        insert_at = list(record["insert_at"])
        key = record["inserted_key"]
        holder = jsonedit.find(root, insert_at)
        member = holder.member(key) if holder is not None else None
        expected: Any = entry.value
        for k in reversed(locator[len(insert_at) + 1:]):
            expected = {k: expected}
        if holder is not None and member is not None and value_sha(member.node.value) == value_sha(expected):
            edit = jsonedit.remove_member(text, holder, key, record.get("empty_text") or "{}")
        else:
            container = jsonedit.find(root, locator[:-1])
            assert container is not None
            edit = jsonedit.remove_member(text, container, locator[-1], "{}")
        assert edit is not None
        return jsonedit.apply_edits(text, [edit]), {"op": "unshadow"}


def _toml_elements(table: Any, key: str) -> list[str]:
    out = []
    for item in table[key]:
        as_string = getattr(item, "as_string", None)
        out.append(str(as_string()) if as_string else tomledit.string_text(str(item)))
    return out


def _legacy(record: Mapping[str, Any]) -> bool:
    return (isinstance(record.get("orig_command"), str) or isinstance(record.get("orig_args"), str)
            or any(isinstance(r[2], str) for r in record.get("reverse") or []))


def _after_dashdash(args: Any) -> int | None:
    if not isinstance(args, list) or "--" not in args:
        return None
    at = args.index("--") + 1
    return at if at < len(args) else None


def _upgraded(record: Mapping[str, Any], cmd_tpl: Template, args_tpl: Template | None,
              elems: Sequence[str], written: str | None) -> dict[str, Any] | None:
    """``record`` with templates instead of texts, if the templates give back the same texts."""
    if render_template(cmd_tpl, elems) != record.get("orig_command"):
        return None
    if (args_tpl is None) != (record.get("orig_args") is None):
        return None
    if args_tpl is not None and render_template(args_tpl, elems) != record["orig_args"]:
        return None
    out = dict(record, orig_command=cmd_tpl, orig_args=args_tpl)
    if record.get("reverse") is not None and written is not None:
        reverse = []
        for a, b, t in record["reverse"]:
            if not isinstance(t, str):
                reverse.append([a, b, t])
            elif t == record.get("orig_command"):
                reverse.append([a, b, cmd_tpl])
            elif args_tpl is not None and t == record.get("orig_args"):
                reverse.append([a, b, args_tpl])
            elif t == "":
                reverse.append([a, b, []])
            else:
                return None
        out["reverse"] = reverse
        out["original_sha"] = text_sha(jsonedit.apply_edits(written, [(int(a), int(b), str(t))
                                                                      for a, b, t in record["reverse"]]))
    return out


def _toml_args_template(args_text: str, elements: Sequence[str], first: int) -> Template:
    """The template of an ``args`` array's text (layout kept, each element an index)."""
    try:
        arr = tomledit.scan_value(args_text)
    except tomledit.TomlSyntaxError as exc:
        raise EntryShapeError(f"cannot read the args array: {exc}") from None
    if arr.kind != "array" or arr.end != len(args_text) or len(arr.items) != len(elements):
        raise EntryShapeError("cannot read the args array")
    tpl = _template(args_text, [(v.start, v.end) for v in arr.items], first)
    if render_template(tpl, [""] * first + list(elements)) != args_text:
        raise EntryShapeError("cannot record how to restore the args array")
    return tpl


_TOML_INDENT_RE = re.compile(r"\[[ \t]*\r?\n([ \t]*)")


def _inline_holder(doc: Any, locator: Sequence[str]) -> tuple[Any, str, list[str]] | None:
    """For an entry inside an inline table: (the regular container holding the outermost
    inline table, that table's key, the path from it to the entry). None for a regular table."""
    from tomlkit.items import InlineTable

    node: Any = doc
    for n, key in enumerate(locator):
        parent = node
        try:
            node = node[key]
        except (KeyError, TypeError):
            return None
        if isinstance(node, InlineTable):
            return parent, key, list(locator[n + 1:])
    return None


def _inline_entry(text: str, path: Sequence[str]) -> tomledit.ValueSpan:
    """The inline table at ``path`` inside the inline-table text ``text``.

    Raises:
        EntryShapeError: it cannot be found through plain keys (dotted keys are not edited).
    """
    try:
        node = tomledit.scan_value(text)
    except tomledit.TomlSyntaxError as exc:
        raise EntryShapeError(f"cannot read the inline table: {exc}") from None
    for key in path:
        nxt = node.member(key) if node.kind == "table" else None
        if nxt is None:
            raise EntryShapeError("the entry is written with dotted keys inside an inline table; not edited")
        node = nxt
    if node.kind != "table":
        raise EntryShapeError("the entry is not an inline table")
    for keys, _s, _v in node.members:
        if len(keys) > 1 and keys[0] in ("command", "args"):
            raise EntryShapeError("command/args are written as dotted keys; not edited")
    return node


class TomlAdapter:
    """TOML client configs (Codex), edited through tomlkit (inline tables as text)."""

    def __init__(self, descriptor: ClientDescriptor) -> None:
        self.descriptor = descriptor

    def read(self, location: ConfigLocation, data: bytes) -> ConfigView:
        """See :meth:`ClientAdapter.read`."""
        try:
            text, bom = tomledit.decode(data)
            plain = tomledit.loads(text)
        except tomledit.TomlSyntaxError as exc:
            raise _parse_error(location, exc.line, exc.col, exc.detail) from None
        entries, wrong = _entries(plain, location, "toml")
        if wrong:
            raise _wrong_type_error(location, wrong)
        return ConfigView(location, data, plain, entries, [], text, bom, None)

    def record_state(self, view: ConfigView, record: Mapping[str, Any]) -> str:
        """See :meth:`ClientAdapter.record_state` (TOML has no ``exact``: values are compared)."""
        value = value_at(view.value, record["locator"])
        if value is None:
            return "missing"
        vs = value_sha(value)
        if vs == record.get("written_value_sha"):
            return "equal"
        if vs == record.get("original_value_sha"):
            return "original"
        return "edited"

    def upgrade_record(self, view: ConfigView, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """See :meth:`JsonAdapter.upgrade_record`."""
        if record.get("op") != "wrap" or not _legacy(record) or self.record_state(view, record) != "equal":
            return None
        try:
            doc = tomledit.editable(view.text)
        except tomledit.TomlSyntaxError:
            return None
        table = tomledit.find_table(doc, record["locator"])
        if table is None or "args" not in table or _inline_holder(doc, record["locator"]) is not None:
            return None
        elems = _toml_elements(table, "args")
        at = _after_dashdash(value_at(view.value, record["locator"]).get("args"))
        if at is None:
            return None
        args_tpl = None
        if record.get("orig_args") is not None:
            try:
                args_tpl = _toml_args_template(record["orig_args"], elems[at + 1:], at + 1)
            except EntryShapeError:
                return None
        return _upgraded(record, [at], args_tpl, elems, None)

    def render(self, view: ConfigView, changes: Sequence[Change]) -> Rendered:
        """See :meth:`ClientAdapter.render`. Shadows do not exist for TOML clients.

        Remote entries are edited on the text first (whole lines: see :class:`WrapRemote`),
        then the stdio changes through tomlkit."""
        nl = jsonedit.newline_of(view.text)
        text = view.text
        records: list[dict[str, Any] | None] = [None] * len(changes)
        for n, ch in enumerate(changes):
            if isinstance(ch, WrapRemote):
                text, records[n] = _toml_wrap_remote(text, view, ch, nl)
            elif isinstance(ch, Unwrap) and ch.record.get("op") == "wrap-remote":
                text, records[n] = _toml_unwrap_remote(text, view, ch.record, nl)
        try:
            doc = tomledit.editable(text)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(str(exc)) from None
        for n, ch in enumerate(changes):
            if records[n] is not None:
                continue
            if isinstance(ch, Wrap):
                records[n] = self._wrap(doc, view, ch, nl)
            elif isinstance(ch, Unwrap):
                records[n] = self._unwrap(doc, view, ch.record, nl)
            else:
                raise EntryShapeError("shadow entries exist only in Claude Code's JSON config")
        text = tomledit.dumps(doc)
        try:
            plain = tomledit.loads(text)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(f"the edited TOML does not parse: {exc}") from None
        for rec in records:
            if rec and rec.get("op") in ("wrap", "wrap-remote"):
                rec["written_value_sha"] = value_sha(value_at(plain, rec["locator"]))
        return Rendered(tomledit.encode(text, view.bom), [r or {} for r in records])

    @staticmethod
    def _table(doc: Any, locator: Sequence[str]) -> Any:
        table = tomledit.find_table(doc, locator)
        if table is None:
            raise EntryShapeError(f"no table at {'.'.join(locator)}")
        return table

    def _wrap(self, doc: Any, view: ConfigView, ch: Wrap, nl: str) -> dict[str, Any]:
        table = self._table(doc, ch.locator)
        original = value_at(view.value, ch.locator)
        kind, detail = classify(original, "toml")
        if kind != "stdio":
            raise EntryShapeError(detail or "not a stdio entry")
        at = len(ch.prefix) - 1
        record: dict[str, Any] = {
            "op": "wrap", "format": "toml", "locator": list(ch.locator), "orig_command": [at],
            "orig_args": None, "written_value_sha": "", "original_value_sha": value_sha(original),
            "proxy": ch.prefix[0],
        }
        holder = _inline_holder(doc, ch.locator)
        if holder is not None:
            return self._wrap_inline(holder, ch, record, nl)
        cmd_text = tomledit.item_text(table, "command")
        args_text = tomledit.item_text(table, "args")
        if cmd_text is None:
            raise EntryShapeError("no command")
        old_elems = _toml_elements(table, "args") if args_text is not None else []
        elems = [tomledit.string_text(p) for p in ch.prefix[1:]] + [cmd_text] + old_elems
        if args_text is not None:
            record["orig_args"] = _toml_args_template(args_text, old_elems, at + 1)
        if args_text is not None and "\n" in args_text:
            m = _TOML_INDENT_RE.match(args_text)
            ind = m.group(1) if m and m.group(1) else "  "
            arr = "[" + nl + "".join(ind + e + "," + nl for e in elems) + "]"
        else:
            arr = "[" + ", ".join(elems) + "]"
        tomledit.set_item_text(table, "command", tomledit.string_text(ch.prefix[0]), nl=nl)
        tomledit.set_item_text(table, "args", arr, after="command", nl=nl)
        return record

    def _wrap_inline(self, holder: tuple[Any, str, list[str]], ch: Wrap, record: dict[str, Any],
                     nl: str) -> dict[str, Any]:
        """Wrap an entry written as an inline table by splicing the table's text."""
        parent, key, path = holder
        top = str(parent[key].as_string())
        entry = _inline_entry(top, path)
        cmd, args = entry.member("command"), entry.member("args")
        if cmd is None or cmd.kind != "string":
            raise EntryShapeError("command is not a string")
        at = len(ch.prefix) - 1
        old_elems = [top[v.start:v.end] for v in args.items] if args is not None else []
        elems = [tomledit.string_text(p) for p in ch.prefix[1:]] + [top[cmd.start:cmd.end]] + old_elems
        arr = "[" + ", ".join(elems) + "]"
        cmd_tpl: Template = [at]
        if args is not None:
            if args.kind != "array":
                raise EntryShapeError("args is not an array")
            record["orig_args"] = _template(top[args.start:args.end],
                                            [(v.start - args.start, v.end - args.start) for v in args.items], at + 1)
            edits = [(cmd.start, cmd.end, tomledit.string_text(ch.prefix[0]), cmd_tpl),
                     (args.start, args.end, arr, record["orig_args"])]
        else:
            edits = [(cmd.start, cmd.end, tomledit.string_text(ch.prefix[0]) + ", args = " + arr, cmd_tpl)]
        written = jsonedit.apply_edits(top, [(s, e, r) for s, e, r, _ in edits])
        reverse, delta = [], 0
        for s, e, r, tpl in sorted(edits, key=lambda x: x[0]):
            reverse.append([s + delta, s + delta + len(r), tpl])
            delta += len(r) - (e - s)
        try:
            tomledit.set_item_text(parent, key, written, nl=nl)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(str(exc)) from None
        record.update(inline=[*record["locator"][:len(record["locator"]) - len(path) - 1], key],
                      reverse=reverse, original_sha=text_sha(top), written_sha=text_sha(written))
        return record

    def _unwrap(self, doc: Any, view: ConfigView, record: Mapping[str, Any], nl: str) -> dict[str, Any]:
        current = value_at(view.value, record["locator"])
        if current is None or (value_sha(current) != record["written_value_sha"]
                               and not env_edit_restorable(record, current)):
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        holder = _inline_holder(doc, record["locator"])
        if holder is not None:
            return self._unwrap_inline(holder, record, nl)
        table = self._table(doc, record["locator"])
        elems = _toml_elements(table, "args") if "args" in table else []
        tomledit.set_item_text(table, "command", render_template(record["orig_command"], elems), nl=nl)
        if record.get("orig_args") is None:
            tomledit.delete_item(table, "args")
        else:
            tomledit.set_item_text(table, "args", render_template(record["orig_args"], elems), nl=nl)
        return {"op": "unwrap", "how": "value"}

    def _unwrap_inline(self, holder: tuple[Any, str, list[str]], record: Mapping[str, Any],
                       nl: str) -> dict[str, Any]:
        parent, key, path = holder
        top = str(parent[key].as_string())
        entry = _inline_entry(top, path)
        cmd, args = entry.member("command"), entry.member("args")
        if cmd is None or args is None or args.kind != "array":
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        elems = [top[v.start:v.end] for v in args.items]
        if record.get("reverse") is not None and text_sha(top) == record.get("written_sha"):
            restored = jsonedit.apply_edits(top, [(int(a), int(b), render_template(t, elems))
                                                  for a, b, t in record["reverse"]])
            how = "exact"
        else:  # the same value, written differently: put the two values back in place
            edits = [(cmd.start, cmd.end, render_template(record["orig_command"], elems))]
            if record.get("orig_args") is not None:
                edits.append((args.start, args.end, render_template(record["orig_args"], elems)))
            else:
                members = entry.members
                n = next(i for i, (k, _s, _v) in enumerate(members) if k == ("args",))
                if n > 0:
                    edits.append((members[n - 1][2].end, args.end, ""))
                else:
                    nxt = members[1][1] if len(members) > 1 else args.end
                    edits.append((members[0][1], nxt, ""))
            restored = jsonedit.apply_edits(top, edits)
            how = "value"
        try:
            tomledit.set_item_text(parent, key, restored, nl=nl)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(str(exc)) from None
        return {"op": "unwrap", "how": how}


#: Codex keys that belong to its HTTP transport only: on an entry with ``command`` they make
#: Codex reject the whole file ("url is not supported for stdio", openai/codex config types)
CODEX_HTTP_KEYS = ("url", "bearer_token_env_var", "http_headers", "env_http_headers", "scopes",
                   "oauth_resource", "oauth")
_TOML_MARK = "# synartesis: "


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """From the start of ``start``'s line to the end of ``end``'s line (its newline included)."""
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return a, (len(text) if b < 0 else b + 1)


def _toml_spans(text: str) -> list[tuple[str, tuple[str, ...], int, int]]:
    try:
        return tomledit.scan_spans(text)
    except tomledit.TomlSyntaxError as exc:
        raise EntryShapeError(str(exc)) from None


def _toml_header(spans: list[tuple[str, tuple[str, ...], int, int]], locator: Sequence[str]) -> tuple[int, int]:
    """The span of the entry's own ``[table]`` header."""
    loc = tuple(locator)
    header = next(((a, b) for kind, path, a, b in spans if kind == "table" and path == loc), None)
    if header is None:
        raise EntryShapeError("the entry is not written as its own [table] (an inline table or dotted keys); "
                              "not wrapped")
    return header


def _toml_http_lines(text: str, spans: list[tuple[str, tuple[str, ...], int, int]],
                     locator: Sequence[str]) -> list[tuple[int, int]]:
    """The line ranges of the entry's HTTP-only keys and sub-tables (Codex's HTTP transport)."""
    loc = tuple(locator)
    http: list[tuple[int, int]] = []
    in_http_table = False
    for kind, path, a, b in spans:
        under = path[:len(loc)] == loc and len(path) > len(loc)
        if kind == "table":
            in_http_table = under and path[len(loc)] in CODEX_HTTP_KEYS
            if in_http_table:
                http.append(_line_bounds(text, a, b))
            continue
        if under and len(path) == len(loc) + 1 and path[-1] in ("command", "args", "env", "env_vars"):
            raise EntryShapeError(f"the remote entry already has {path[-1]!r}; not wrapped")
        if in_http_table or (under and path[len(loc)] in CODEX_HTTP_KEYS):
            http.append(_line_bounds(text, a, b))
    return http


def _toml_wrap_remote(text: str, view: ConfigView, ch: WrapRemote, nl: str) -> tuple[str, dict[str, Any]]:
    """Comment out the entry's HTTP-only lines and add command/args/env_vars/env after its header."""
    original = value_at(view.value, ch.locator)
    if not isinstance(original, dict) or "url" not in original:
        raise EntryShapeError("not a remote entry")
    spans = _toml_spans(text)
    h_start, h_end = _toml_header(spans, ch.locator)
    http = _toml_http_lines(text, spans, ch.locator)
    block = f"command = {tomledit.string_text(ch.command)}{nl}"
    block += "args = [" + ", ".join(tomledit.string_text(a) for a in ch.args) + "]" + nl
    if ch.env_vars:
        block += "env_vars = [" + ", ".join(tomledit.string_text(v) for v in ch.env_vars) + "]" + nl
    if ch.env:
        block += "env = { " + ", ".join(f"{tomledit.string_text(k)} = {tomledit.string_text(v)}"
                                        for k, v in ch.env) + " }" + nl
    header_line_end = _line_bounds(text, h_start, h_end)[1]
    commented: list[str] = []
    pieces: list[str] = []
    pos = 0
    edits = sorted({*http})
    inserted = False
    for a, b in edits:
        if a < header_line_end <= b:
            raise EntryShapeError("the entry's header shares a line with an HTTP key; not wrapped")
        if not inserted and a >= header_line_end:
            pieces.append(text[pos:header_line_end])
            pieces.append(block)
            pos, inserted = header_line_end, True
        pieces.append(text[pos:a])
        for line in text[a:b].splitlines(keepends=True):
            commented.append(text_sha(line))
            pieces.append(_TOML_MARK + line)
        pos = b
    if not inserted:
        pieces.append(text[pos:header_line_end])
        pieces.append(block)
        pos = header_line_end
    pieces.append(text[pos:])
    new_text = "".join(pieces)
    if not new_text.endswith(("\n", "\r")) and text.endswith(("\n", "\r")):
        raise EntryShapeError("the edit lost the file's final newline")
    return new_text, {
        "op": "wrap-remote", "format": "toml", "locator": list(ch.locator),
        "block_sha": text_sha(block), "block_lines": block.count(nl) if nl else block.count("\n"),
        "commented": commented, "original_value_sha": value_sha(original), "written_value_sha": "",
        "proxy": ch.command,
    }


def _toml_unwrap_remote(text: str, view: ConfigView, record: Mapping[str, Any], nl: str) -> tuple[str, dict[str, Any]]:
    """Take out what :func:`_toml_wrap_remote` added and uncomment what it commented, exactly."""
    current = value_at(view.value, record["locator"])
    if current is None or value_sha(current) != record["written_value_sha"]:
        raise EntryShapeError("the entry is no longer what synartesis wrote")
    h_start, h_end = _toml_header(_toml_spans(text), record["locator"])
    header_line_end = _line_bounds(text, h_start, h_end)[1]
    lines = text[header_line_end:].splitlines(keepends=True)
    n = int(record["block_lines"])
    if text_sha("".join(lines[:n])) != record["block_sha"]:
        raise EntryShapeError("the lines synartesis added to the entry were changed; not restored")
    rest = lines[n:]
    want = list(record["commented"])
    out: list[str] = []
    for line in rest:
        if want and line.startswith(_TOML_MARK) and text_sha(line[len(_TOML_MARK):]) == want[0]:
            out.append(line[len(_TOML_MARK):])
            want.pop(0)
        else:
            out.append(line)
    if want:
        raise EntryShapeError("the settings synartesis turned into comments are gone (the client rewrote "
                              "the file?); not restored: use uninstall --from-backup")
    return text[:header_line_end] + "".join(out), {"op": "unwrap", "how": "exact"}


def adapter_for(descriptor: ClientDescriptor) -> JsonAdapter | TomlAdapter:
    """The adapter for a descriptor's format (an explicit table, no plugin discovery)."""
    return {"json": JsonAdapter, "toml": TomlAdapter}[descriptor.format](descriptor)


def expected_after(value: Any, changes: Sequence[Change], fmt: str = "json") -> Any:
    """The plain document value ``changes`` should produce (used to verify a render);
    ``fmt`` is the file's format (a remote wrap differs: see :class:`WrapRemote`)."""
    out = copy.deepcopy(value)
    for ch in changes:
        if isinstance(ch, WrapRemote):
            parent = value_at(out, ch.locator[:-1])
            entry = parent[ch.locator[-1]]
            if fmt == "toml":
                new = {k: v for k, v in entry.items() if k not in CODEX_HTTP_KEYS}
                new["command"], new["args"] = ch.command, list(ch.args)
                if ch.env_vars:
                    new["env_vars"] = list(ch.env_vars)
                if ch.env:
                    new["env"] = dict(ch.env)
            else:
                new = JsonAdapter.remote_value(entry, ch)
            parent[ch.locator[-1]] = new
        elif isinstance(ch, Wrap):
            entry = value_at(out, ch.locator)
            orig = [entry["command"], *entry.get("args", [])]
            entry["command"] = ch.prefix[0]
            entry["args"] = [*ch.prefix[1:], *orig]
        elif isinstance(ch, AddShadow):
            node = out
            for k in ch.container:
                node = node.setdefault(k, {})
            node[ch.name] = copy.deepcopy(dict(ch.value))
    return out


def _shown_json(text: str, mark: str) -> str:
    root = jsonedit.parse(text)
    edits: list[jsonedit.Edit] = []
    stack: list[tuple[jsonedit.Node, str | None, str | None]] = [(root, None, None)]
    while stack:  # iterative: the parser's depth limit is the only bound
        node, container, key = stack.pop()
        if node.kind == "object":
            for m in node.members or ():
                if m.key == "args" and m.node.kind == "array" and all(i.kind == "string" for i in m.node.items or ()):
                    shown, _ = redact_argv([i.value for i in m.node.items or ()], mark)
                    edits += [(i.start, i.end, jsonedit.dumps_string(v))
                              for i, v in zip(m.node.items or (), shown) if v != i.value]
                else:
                    stack.append((m.node, key, m.key))
        elif node.kind == "array":
            stack.extend((i, container, key) for i in node.items or ())
        elif node.kind == "string":
            v = redact_member(container, key, node.value, mark)
            if v != node.value:
                edits.append((node.start, node.end, jsonedit.dumps_string(v)))
    return jsonedit.apply_edits(text, edits)


def _shown_toml(text: str, mark: str) -> str:
    edits: list[jsonedit.Edit] = []

    def decoded(span: tomledit.ValueSpan) -> str:
        return tomledit.loads("v = " + text[span.start:span.end])["v"]

    stack: list[tuple[tomledit.ValueSpan, str | None, str | None]] = []
    for path, value in tomledit.scan_document(text):
        stack.append((value, path[-2] if len(path) > 1 else None, path[-1]))
    while stack:
        node, container, key = stack.pop()
        if node.kind == "string":
            raw = decoded(node)
            v = redact_member(container, key, raw, mark)
            if v != raw:
                edits.append((node.start, node.end, tomledit.string_text(v)))
        elif node.kind == "array":
            if key == "args" and node.items and all(x.kind == "string" for x in node.items):
                raws = [decoded(x) for x in node.items]
                shown, _ = redact_argv(raws, mark)
                edits += [(x.start, x.end, tomledit.string_text(v)) for x, r, v in zip(node.items, raws, shown) if v != r]
            else:
                stack.extend((x, container, key) for x in node.items)
        elif node.kind == "table":
            for keys, _s, v in node.members:
                full = (key, *keys) if key is not None else keys
                stack.append((v, full[-2] if len(full) > 1 else None, full[-1]))
    return jsonedit.apply_edits(text, edits)


def _shown_toml_comments(text: str, mark: str) -> str:
    """``text`` with the HTTP keys a Codex wrap turned into ``# synartesis: …`` comments shown
    through the same rules as live keys (a comment is invisible to the TOML scan, and its
    ``http_headers`` values are as secret as they were before the wrap)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith(_TOML_MARK):
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].startswith(_TOML_MARK):
            j += 1
        inner = [line[len(_TOML_MARK):] for line in lines[i:j]]
        try:
            shown = _shown_toml("\n".join(inner), mark).split("\n")
        except (ValueError, RecursionError):  # not TOML on its own: hide every value
            shown = [re.sub(r"=.*", f"= {tomledit.string_text(mark)}", line) for line in inner]
        out += [_TOML_MARK + line for line in shown]
        i = j
    return "\n".join(out)


def shown_text(descriptor: ClientDescriptor, data: bytes | None, mark: str = DISPLAY_MARK) -> str:
    """A config file's text as it may be shown (a ``--dry-run`` diff): every secret hidden.

    The document is walked with the rules of :mod:`synartesis.redact` (``args`` lists by
    :func:`~synartesis.redact.redact_argv`, ``env``/``headers`` values, secret-named keys,
    token-shaped strings anywhere); then :func:`~synartesis.redact.redact_text` runs over
    every line as a backstop (comments, text that does not parse).
    """
    if data is None:
        return ""
    text = data.decode("utf-8", "replace")
    body = text.removeprefix("\ufeff")
    try:
        body = _shown_json(body, mark) if descriptor.format == "json" else _shown_toml(body, mark)
    except (ValueError, RecursionError):  # not parseable: only the line backstop applies
        pass
    if descriptor.format != "json" and _TOML_MARK in body:
        body = _shown_toml_comments(body, mark)
    return "\n".join(redact_text(line, mark) for line in body.split("\n"))
