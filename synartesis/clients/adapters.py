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
from synartesis.clients.entries import ServerEntry, classify, value_sha
from synartesis.clients.locations import ConfigLocation
from synartesis.errors import ConfigParseError

__all__ = [
    "ConfigView",
    "Wrap",
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


Change = Wrap | Unwrap | AddShadow | RemoveShadow


@dataclass(frozen=True)
class Rendered:
    """New file bytes and, per change, the record of what was done (same order as changes)."""

    data: bytes
    records: list[dict[str, Any]]


def text_sha(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _get_path(value: Any, path: Sequence[str]) -> Any:
    for k in path:
        if not isinstance(value, dict) or k not in value:
            return None
        value = value[k]
    return value


def _servers_paths(spec: FileSpec | ProjectSpec) -> list[tuple[str, tuple[str, ...]]]:
    if isinstance(spec, FileSpec):
        return [(s.scope, s.path) for s in spec.servers]
    return [(spec.scope, tuple(p.split("."))) for p in spec.servers]


def _entries(value: Any, loc: ConfigLocation, fmt: str) -> tuple[list[ServerEntry], list[str]]:
    entries: list[ServerEntry] = []
    notes: list[str] = []
    for scope, path in _servers_paths(loc.spec):
        containers: list[tuple[tuple[str, ...], Any, str | None]] = [((), value, loc.project)]
        for step in path:
            nxt = []
            for prefix, node, project in containers:
                if not isinstance(node, dict):
                    continue
                if step == "*":
                    for k, v in node.items():
                        nxt.append(((*prefix, k), v, k))
                elif step in node:
                    nxt.append(((*prefix, step), node[step], project))
            containers = nxt
        for prefix, node, project in containers:
            if not isinstance(node, dict):
                notes.append(f"{'.'.join(prefix)} is not an object; its servers are not read")
                continue
            for name, entry in node.items():
                kind, detail = classify(entry, fmt)
                entries.append(ServerEntry(scope, name, (*prefix, name), entry, project, kind, detail))
    return entries, notes


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
        entries, notes = _entries(root.value, location, "json")
        return ConfigView(location, data, root.value, entries, notes, text, bom, root)

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
            if isinstance(ch, (Wrap, Unwrap)):
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
        rel = sorted((s - entry.start, e - entry.start, r) for s, e, r in edits)
        written = jsonedit.apply_edits(old_entry, rel)
        reverse = []
        delta = 0
        for s, e, r in rel:
            reverse.append([s + delta, s + delta + len(r), old_entry[s:e]])
            delta += len(r) - (e - s)
        written_value = jsonedit.parse(written).value
        return edits, {
            "op": "wrap",
            "format": "json",
            "locator": list(ch.locator),
            "orig_command": text[cmd.start:cmd.end],
            "orig_args": text[args_m.node.start:args_m.node.end] if args_m else None,
            "reverse": reverse,
            "written_sha": text_sha(written),
            "written_value_sha": value_sha(written_value),
            "original_value_sha": value_sha(entry.value),
            "proxy": ch.prefix[0],
        }

    def _unwrap(self, text: str, root: jsonedit.Node,
                record: Mapping[str, Any]) -> tuple[list[jsonedit.Edit], dict[str, Any]]:
        entry = self._entry(root, record["locator"])
        cur = text[entry.start:entry.end]
        if text_sha(cur) == record["written_sha"]:
            restored = jsonedit.apply_edits(cur, [(int(a), int(b), str(t)) for a, b, t in record["reverse"]])
            return [(entry.start, entry.end, restored)], {"op": "unwrap", "how": "exact"}
        if value_sha(entry.value) != record["written_value_sha"]:
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        cmd = entry.member("command")
        assert cmd is not None  # the value equals what we wrote, which has a command
        edits: list[jsonedit.Edit] = [(cmd.node.start, cmd.node.end, record["orig_command"])]
        if record.get("orig_args") is None:
            rm = jsonedit.remove_member(text, entry, "args")
            if rm:
                edits.append(rm)
        else:
            args = entry.member("args")
            assert args is not None
            edits.append((args.node.start, args.node.end, record["orig_args"]))
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


_TOML_INDENT_RE = re.compile(r"\[[ \t]*\r?\n([ \t]*)")


class TomlAdapter:
    """TOML client configs (Codex), edited through tomlkit."""

    def __init__(self, descriptor: ClientDescriptor) -> None:
        self.descriptor = descriptor

    def read(self, location: ConfigLocation, data: bytes) -> ConfigView:
        """See :meth:`ClientAdapter.read`."""
        try:
            text, bom = tomledit.decode(data)
            plain = tomledit.loads(text)
        except tomledit.TomlSyntaxError as exc:
            raise _parse_error(location, exc.line, exc.col, exc.detail) from None
        entries, notes = _entries(plain, location, "toml")
        return ConfigView(location, data, plain, entries, notes, text, bom, None)

    def record_state(self, view: ConfigView, record: Mapping[str, Any]) -> str:
        """See :meth:`ClientAdapter.record_state` (TOML has no ``exact``: values are compared)."""
        value = _get_path(view.value, record["locator"])
        if value is None:
            return "missing"
        vs = value_sha(value)
        if vs == record.get("written_value_sha"):
            return "equal"
        if vs == record.get("original_value_sha"):
            return "original"
        return "edited"

    def render(self, view: ConfigView, changes: Sequence[Change]) -> Rendered:
        """See :meth:`ClientAdapter.render`. Shadows do not exist for TOML clients."""
        try:
            doc = tomledit.editable(view.text)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(str(exc)) from None
        nl = jsonedit.newline_of(view.text)
        records: list[dict[str, Any]] = []
        for ch in changes:
            if isinstance(ch, Wrap):
                records.append(self._wrap(doc, view, ch, nl))
            elif isinstance(ch, Unwrap):
                records.append(self._unwrap(doc, view, ch.record, nl))
            else:
                raise EntryShapeError("shadow entries exist only in Claude Code's JSON config")
        text = tomledit.dumps(doc)
        try:
            plain = tomledit.loads(text)
        except tomledit.TomlSyntaxError as exc:
            raise EntryShapeError(f"the edited TOML does not parse: {exc}") from None
        for rec in records:
            if rec.get("op") == "wrap":
                rec["written_value_sha"] = value_sha(_get_path(plain, rec["locator"]))
        return Rendered(tomledit.encode(text, view.bom), records)

    @staticmethod
    def _table(doc: Any, locator: Sequence[str]) -> Any:
        table = tomledit.find_table(doc, locator)
        if table is None:
            raise EntryShapeError(f"no table at {'.'.join(locator)}")
        return table

    def _wrap(self, doc: Any, view: ConfigView, ch: Wrap, nl: str) -> dict[str, Any]:
        table = self._table(doc, ch.locator)
        original = _get_path(view.value, ch.locator)
        kind, detail = classify(original, "toml")
        if kind != "stdio":
            raise EntryShapeError(detail or "not a stdio entry")
        cmd_text = tomledit.item_text(table, "command")
        args_text = tomledit.item_text(table, "args")
        if cmd_text is None:
            raise EntryShapeError("no command")
        elems = [tomledit.string_text(p) for p in ch.prefix[1:]] + [cmd_text]
        if args_text is not None:
            elems += _toml_elements(table, "args")
        if args_text is not None and "\n" in args_text:
            m = _TOML_INDENT_RE.match(args_text)
            ind = m.group(1) if m and m.group(1) else "  "
            arr = "[" + nl + "".join(ind + e + "," + nl for e in elems) + "]"
        else:
            arr = "[" + ", ".join(elems) + "]"
        tomledit.set_item_text(table, "command", tomledit.string_text(ch.prefix[0]), nl=nl)
        tomledit.set_item_text(table, "args", arr, after="command", nl=nl)
        return {
            "op": "wrap",
            "format": "toml",
            "locator": list(ch.locator),
            "orig_command": cmd_text,
            "orig_args": args_text,
            "written_value_sha": "",
            "original_value_sha": value_sha(original),
            "proxy": ch.prefix[0],
        }

    def _unwrap(self, doc: Any, view: ConfigView, record: Mapping[str, Any], nl: str) -> dict[str, Any]:
        current = _get_path(view.value, record["locator"])
        if current is None or value_sha(current) != record["written_value_sha"]:
            raise EntryShapeError("the entry is no longer what synartesis wrote")
        table = self._table(doc, record["locator"])
        tomledit.set_item_text(table, "command", record["orig_command"], nl=nl)
        if record.get("orig_args") is None:
            tomledit.delete_item(table, "args")
        else:
            tomledit.set_item_text(table, "args", record["orig_args"], nl=nl)
        return {"op": "unwrap", "how": "value"}


def adapter_for(descriptor: ClientDescriptor) -> JsonAdapter | TomlAdapter:
    """The adapter for a descriptor's format (an explicit table, no plugin discovery)."""
    return {"json": JsonAdapter, "toml": TomlAdapter}[descriptor.format](descriptor)


def expected_after(value: Any, changes: Sequence[Change]) -> Any:
    """The plain document value ``changes`` should produce (used to verify a render)."""
    out = copy.deepcopy(value)
    for ch in changes:
        if isinstance(ch, Wrap):
            entry = _get_path(out, ch.locator)
            orig = [entry["command"], *entry.get("args", [])]
            entry["command"] = ch.prefix[0]
            entry["args"] = [*ch.prefix[1:], *orig]
        elif isinstance(ch, AddShadow):
            node = out
            for k in ch.container:
                node = node.setdefault(k, {})
            node[ch.name] = copy.deepcopy(dict(ch.value))
    return out
