"""Property tests for the JSON and TOML editors (issue 9, "Proof"): random client configs across
CRLF / BOM / tabs / mixed indentation / unicode and escapes / TOML shapes (inline tables, dotted
keys, comments, multi-line strings).

For every generated file: wrapping every stdio entry changes nothing outside the wrapped
``command``/``args`` values; undoing it gives back every byte; a client that re-formats the
wrapped file still gets its values back; a file that does not parse is refused and untouched.

Size: the ``ci`` profile (default) runs a few hundred examples in total and is deterministic
(``derandomize``); ``HYPOTHESIS_PROFILE=deep`` runs many more. ``TALLY`` counts every example
(tried / survived / refused with a reason / lost) and is printed at the end of a run with
``-s``.
"""

from __future__ import annotations

import collections
import difflib
import json
import math
import os
import re
import tomllib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from synartesis.clients import jsonedit, tomledit
from synartesis.clients.adapters import EntryShapeError, Unwrap, Wrap, adapter_for, expected_after
from synartesis.clients.descriptor import get_descriptor
from synartesis.clients.entries import value_sha
from synartesis.clients.locations import ConfigLocation
from synartesis.errors import ConfigParseError

settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("deep", database=None, deadline=None, max_examples=3000,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROXY = ("/opt/synartesis/bin/synartesis", "proxy", "--server", "k", "--")
TALLY: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
REASONS: collections.Counter = collections.Counter()  # why TOML entries were refused


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    for family, c in sorted(TALLY.items()):
        print(f"\n[editor properties] {family}: tried {c['tried']}, survived {c['survived']}, "
              f"refused with a reason {c['refused']}, lost {c['tried'] - c['survived'] - c['refused']}")
    for reason, n in REASONS.most_common():
        print(f"[editor properties] TOML entries refused: {n} × {reason}")


def _location(client: str) -> ConfigLocation:
    desc = get_descriptor(client)
    return ConfigLocation(client, "user", __import__("pathlib").Path(f"/virtual/{client}"), desc.files[0])


# ---------------------------------------------------------------------------------------------
# JSON: values, then a random (valid) layout

SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
NAME = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False, width=32), SAFE_TEXT)


def _json_value(depth: int = 2):
    if depth == 0:
        return SCALAR
    return st.one_of(SCALAR, st.lists(_json_value(depth - 1), max_size=3),
                     st.dictionaries(NAME, _json_value(depth - 1), max_size=3))


STDIO = st.fixed_dictionaries(
    {"command": st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=10)},
    optional={"args": st.lists(SAFE_TEXT, max_size=4), "env": st.dictionaries(NAME, SAFE_TEXT, max_size=2),
              "disabled": st.booleans(), "timeout": st.integers(0, 600), "x-extra": _json_value(1)})
ENTRY = st.one_of(STDIO, STDIO, STDIO, st.fixed_dictionaries({"url": SAFE_TEXT}), _json_value(1))
DOC = st.fixed_dictionaries({"mcpServers": st.dictionaries(NAME, ENTRY, max_size=4)},
                            optional={"aaa": _json_value(), "zzz": _json_value(), "projects": _json_value(1)})


@st.composite
def json_text(draw, value):
    """A strict-JSON text of ``value`` in a random layout."""
    nl = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    units = ["  ", "    ", "\t", " \t", "   "]

    def s(text: str) -> str:
        out = ['"']
        for ch in text:
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif ord(ch) < 0x20 or draw(st.integers(0, 9)) == 0:  # escape some characters anyway
                if ord(ch) > 0xFFFF:
                    v = ord(ch) - 0x10000
                    out.append(f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04X}")  # a valid pair
                else:
                    out.append(draw(st.sampled_from([f"\\u{ord(ch):04x}", f"\\u{ord(ch):04X}"])))
            elif ch == "/" and draw(st.booleans()):
                out.append("\\/")
            else:
                out.append(ch)
        return "".join(out) + '"'

    def num(v):
        if isinstance(v, bool) or v is None:
            return json.dumps(v)
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) and "e" not in repr(v) and "inf" not in repr(v) else json.dumps(v)
        return str(v)

    def fmt(v, indent: str) -> str:
        if isinstance(v, dict) or isinstance(v, list):
            items = list(v.items()) if isinstance(v, dict) else list(v)
            if isinstance(v, dict) and len(items) > 1 and draw(st.booleans()):
                items = draw(st.permutations(items))  # e.g. args before command
            if not items:
                return "{}" if isinstance(v, dict) else "[]"
            multiline = draw(st.booleans())
            unit = draw(st.sampled_from(units))
            colon = draw(st.sampled_from([": ", ":", " : ", ":\t"]))
            inner = indent + unit
            parts = []
            for it in items:
                body = (s(it[0]) + colon + fmt(it[1], inner)) if isinstance(v, dict) else fmt(it, inner)
                parts.append(body)
            o, c = ("{", "}") if isinstance(v, dict) else ("[", "]")
            if multiline:
                return o + nl + ("," + nl).join(inner + p for p in parts) + nl + indent + c
            sep = draw(st.sampled_from([", ", ",", " , "]))
            pad = draw(st.sampled_from(["", " "]))
            return o + pad + sep.join(parts) + pad + c
        if isinstance(v, str):
            return s(v)
        return num(v)

    text = fmt(value, "")
    lead = draw(st.sampled_from(["", "", " ", nl]))
    tail = draw(st.sampled_from(["", nl, nl + nl, " "]))
    bom = "\ufeff" if draw(st.integers(0, 5)) == 0 else ""
    return bom + lead + text + tail


def _stdio(view) -> list:
    return [e for e in view.entries if e.kind == "stdio"]


def _outside(text: str, regions: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for a, b in sorted(regions):
        out.append(text[pos:a])
        out.append("\x00")
        pos = b
    return "".join(out) + text[pos:]


def _json_regions(root: jsonedit.Node, entries, had_args: set, after: bool) -> list[tuple[int, int]]:
    """The spans install may change in each entry: the command value and the args value; where
    args was added (``after``, an entry that had none), from the command value to the end of the
    new member, which is inserted right after it."""
    regions = []
    for e in entries:
        node = jsonedit.find(root, e.locator)
        cmd, args = node.member("command"), node.member("args")
        if after and e.locator not in had_args:
            regions.append((cmd.node.start, args.node.end))
        elif args is not None:
            regions += [(cmd.node.start, cmd.node.end), (args.node.start, args.node.end)]
        else:
            regions.append((cmd.node.start, cmd.node.end))
    return regions


@given(st.data())
def test_json_wrap_changes_only_the_wrapped_values_and_unwrap_gives_back_every_byte(data):
    value = data.draw(DOC)
    text = data.draw(json_text(value))
    family = TALLY["JSON wrap → unwrap"]
    family["tried"] += 1
    raw = text.encode("utf-8")
    assert json.loads(text.lstrip("\ufeff")) == value  # the generator writes valid JSON
    adapter = adapter_for(get_descriptor("cursor"))
    view = adapter.read(_location("cursor"), raw)
    stdio = _stdio(view)
    changes = [Wrap(e.locator, PROXY) for e in stdio]
    rendered = adapter.render(view, changes)
    new = adapter.read(_location("cursor"), rendered.data)
    assert value_sha(new.value) == value_sha(expected_after(view.value, changes))
    # nothing outside the wrapped values changed
    had_args = {e.locator for e in stdio if "args" in e.value}
    old_regions = _json_regions(view.tree, stdio, had_args, after=False)
    new_regions = _json_regions(new.tree, stdio, had_args, after=True)
    assert _outside(view.text, old_regions) == _outside(new.text, new_regions)
    # and uninstall gives back every byte
    back = adapter.render(new, [Unwrap(r) for r in reversed(rendered.records)])
    assert back.data == raw
    # no record keeps an original argument's text
    for r in rendered.records:
        assert not isinstance(r.get("orig_args"), str) and not isinstance(r.get("orig_command"), str)
    family["survived"] += 1


@given(st.data())
def test_json_a_client_that_reformats_the_file_still_gets_its_values_back(data):
    value = data.draw(DOC)
    text = data.draw(json_text(value))
    indent = data.draw(st.sampled_from([None, 2, 4]))
    family = TALLY["JSON wrap → client re-formats → unwrap"]
    family["tried"] += 1
    adapter = adapter_for(get_descriptor("cursor"))
    view = adapter.read(_location("cursor"), text.encode())
    changes = [Wrap(e.locator, PROXY) for e in _stdio(view)]
    rendered = adapter.render(view, changes)
    wrapped = json.loads(rendered.data.decode("utf-8").lstrip("\ufeff"))
    reformatted = json.dumps(wrapped, indent=indent).encode()
    again = adapter.read(_location("cursor"), reformatted)
    back = adapter.render(again, [Unwrap(r) for r in reversed(rendered.records)])
    assert json.loads(back.data) == value
    family["survived"] += 1


@given(st.data())
def test_json_a_file_that_does_not_parse_is_refused(data):
    value = data.draw(DOC)
    text = data.draw(json_text(value))
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.sampled_from([",", "}", "{", "//c", "'", "NaN", ",]", "\x01", '"']))
    broken = text[:cut] + junk + text[cut:]
    try:
        json.loads(broken.lstrip("\ufeff"))
        assume(False)  # still valid JSON: not this property's case
    except (ValueError, RecursionError):
        pass
    family = TALLY["JSON unparsable → refused"]
    family["tried"] += 1
    with pytest.raises(ConfigParseError) as err:
        adapter_for(get_descriptor("cursor")).read(_location("cursor"), broken.encode())
    assert "/virtual/cursor" in str(err.value)
    family["survived"] += 1


# ---------------------------------------------------------------------------------------------
# TOML: shapes, then text

BARE = st.text(st.sampled_from("abcxyz019_-"), min_size=1, max_size=6)
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)


@st.composite
def toml_string(draw, value=None):
    """A TOML string literal (basic, literal, multi-line basic or multi-line literal)."""
    v = draw(TEXT) if value is None else value
    kinds = ["basic"]
    if "'" not in v and "\n" not in v:
        kinds.append("literal")
    if "'''" not in v and not v.endswith("'"):
        kinds.append("ml-literal")
    kinds.append("ml-basic")
    kind = draw(st.sampled_from(kinds))

    def esc(ch: str, multiline: bool) -> str:
        if ch == '"':
            return '\\"'
        if ch == "\\":
            return "\\\\"
        if ch == "\t":
            return draw(st.sampled_from(["\t", "\\t"]))
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return f"\\u{ord(ch):04x}"
        if draw(st.integers(0, 9)) == 0:
            return f"\\u{ord(ch):04X}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"
        return ch

    if kind == "literal":
        return f"'{v}'"
    if kind == "ml-literal":
        return "'''" + draw(st.sampled_from(["", "\n"])) + v + "'''"
    body = "".join(esc(c, kind == "ml-basic") for c in v)
    if kind == "ml-basic":
        return '"""' + draw(st.sampled_from(["", "\n"])) + body + '"""'
    return '"' + body + '"'


@st.composite
def toml_array(draw, n_min=0):
    items = draw(st.lists(toml_string(), min_size=n_min, max_size=4))
    nl = "\n"
    if items and draw(st.booleans()):
        ind = draw(st.sampled_from(["  ", "    ", "\t"]))
        lines = [ind + it + "," + (draw(st.sampled_from(["", " # c"]))) for it in items]
        if not draw(st.booleans()):
            lines[-1] = lines[-1].replace(",", "", 1) if "#" not in lines[-1] else lines[-1]
        return "[" + nl + nl.join(lines) + nl + "]"
    sep = draw(st.sampled_from([", ", ",", " , "]))
    pad = draw(st.sampled_from(["", " "]))
    return "[" + pad + sep.join(items) + pad + "]"


def toml_key(draw) -> str:
    if draw(st.booleans()):
        return draw(BARE)
    return '"' + "".join(c if c not in '"\\' else "\\" + c for c in draw(TEXT.filter(lambda t: "\n" not in t))) + '"'


EXTRA_VALUES = ["10", "3.5", "true", "nan", "-inf", "1979-05-27T07:32:00Z", "1979-05-27 07:32:00", "07:32:00",
                '{ K = "v" }', "[1, 2]", "0x1F", "1_000"]


@st.composite
def toml_doc(draw):
    nl_final = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    layout = draw(st.sampled_from(["tables", "tables", "inline-under", "dotted-under", "top-dotted", "inline-all"]))
    n = draw(st.integers(1, 3))
    names, used = [], set()
    while len(names) < n:
        k = toml_key(draw)
        norm = tomllib.loads(f"{k} = 1")
        key = next(iter(norm))
        if key in used:
            continue
        used.add(key)
        names.append(k)
    lines: list[str] = []
    comment = lambda: draw(st.sampled_from(["", "", "  # note", "\t#c"]))  # noqa: E731
    pre = []
    if draw(st.booleans()):
        pre.append(f"model = {draw(toml_string())}{comment()}")
    if draw(st.booleans()):
        pre.append(f"x = {draw(st.sampled_from(EXTRA_VALUES))}")

    def members(with_args: bool) -> list[tuple[str, str]]:
        m = [("command", draw(toml_string(draw(TEXT.filter(lambda t: t.strip() and "\n" not in t)))))]
        if with_args:
            m.append(("args", draw(toml_array())))
        for _ in range(draw(st.integers(0, 2))):
            m.append((draw(st.sampled_from(["env", "startup_timeout_sec", "enabled", "cwd", "a"])),
                      draw(st.sampled_from(EXTRA_VALUES))))
        if draw(st.booleans()):
            m = list(reversed(m))
        seen, out = set(), []
        for k, v in m:
            if k not in seen:
                seen.add(k)
                out.append((k, v))
        return out

    def inline(ms) -> str:
        sep = draw(st.sampled_from([", ", ","]))
        pad = draw(st.sampled_from(["", " "]))
        return "{" + pad + sep.join(f"{k} = {v.replace(chr(10), ' ') if v.startswith('[') else v}" for k, v in ms) + pad + "}"

    def single_line(ms):
        return [(k, v) for k, v in ms if "\n" not in v]

    body: list[str] = []
    if layout == "tables":
        body.append("")
        for k in names:
            body.append(f"[mcp_servers.{k}]{comment()}")
            for mk, mv in members(draw(st.booleans())):
                body.append(draw(st.sampled_from(["", "  ", "\t"])) + f"{mk} = {mv}{comment()}")
            body.append("")
    elif layout == "inline-under":
        body.append("[mcp_servers]")
        for k in names:
            body.append(f"{k} = {inline(single_line(members(draw(st.booleans()))))}{comment()}")
    elif layout == "dotted-under":
        body.append("[mcp_servers]")
        for k in names:
            for mk, mv in members(draw(st.booleans())):
                body.append(f"{k}.{mk} = {mv}{comment()}")
    elif layout == "top-dotted":
        for k in names:
            for mk, mv in members(draw(st.booleans())):
                pre.append(f"mcp_servers.{k}.{mk} = {mv}{comment()}")
    else:
        pre.append("mcp_servers = { " + ", ".join(f"{k} = {inline(single_line(members(draw(st.booleans()))))}"
                                                  for k in names) + " }")
    if draw(st.booleans()):
        body += ["", "[profiles.default]", f"model = {draw(toml_string())}"]
    lines = pre + body
    text = "\n".join(lines) + "\n"
    if nl_final == "\r\n":
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    bom = "\ufeff" if draw(st.integers(0, 5)) == 0 else ""
    return bom + text


def _toml_changed_lines_are_ours(old: str, new: str, new_view, old_view, stdio) -> None:
    """Every line that differs lies in a wrapped entry's command/args (or its inline table)."""
    doc_new, doc_old = tomledit.editable(new), tomledit.editable(old)
    allowed_new, allowed_old = [], []
    for e in stdio:
        for doc, allowed in ((doc_new, allowed_new), (doc_old, allowed_old)):
            node = doc
            for k in e.locator:
                node = node[k]
                if type(node).__name__ == "InlineTable":
                    allowed.append(str(node.as_string()))  # an inline table is one line: ours
            for key in ("command", "args"):
                if key in node:
                    allowed.append(tomledit.item_text(node, key) or "")
    a, b = old.splitlines(), new.splitlines()

    def core(line: str) -> str:  # the value text of a line (the generator's comments have no quotes)
        value = line.split(" = ", 1)[-1] if " = " in line else line
        return re.sub(r"\s*#[^\"']*$", "", value).strip().rstrip(",").strip()

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for line in b[j1:j2]:
            assert any(core(line) in t for t in allowed_new) or PROXY[0] in line, line
        for line in a[i1:i2]:
            assert any(core(line) in t for t in allowed_old), line


@given(toml_doc())
def test_toml_wrap_changes_only_the_wrapped_values_and_unwrap_gives_back_every_byte(text):
    try:
        tomllib.loads(text.lstrip("\ufeff"))
    except tomllib.TOMLDecodeError:
        assume(False)
    family = TALLY["TOML wrap → unwrap"]
    family["tried"] += 1
    raw = text.encode("utf-8")
    adapter = adapter_for(get_descriptor("codex"))
    view = adapter.read(_location("codex"), raw)
    stdio = _stdio(view)
    done, refused = [], 0
    for e in stdio:  # as install does: a change that cannot be made is reported, not forced
        try:
            adapter.render(view, [Wrap(e.locator, PROXY)])
            done.append(e)
        except EntryShapeError as exc:
            refused += 1
            REASONS[str(exc).split(":")[0][:70]] += 1
    if not done:  # every entry refused (e.g. tomlkit cannot reproduce the file): reported, untouched
        family["refused" if stdio else "survived"] += 1
        return
    changes = [Wrap(e.locator, PROXY) for e in done]
    rendered = adapter.render(view, changes)
    new = adapter.read(_location("codex"), rendered.data)
    assert value_sha(new.value) == value_sha(expected_after(view.value, changes))
    _toml_changed_lines_are_ours(view.text, new.text, new, view, done)
    back = adapter.render(new, [Unwrap(r) for r in reversed(rendered.records)])
    assert back.data == raw
    for r in rendered.records:
        assert not isinstance(r.get("orig_args"), str) and not isinstance(r.get("orig_command"), str)
    family["survived" if not refused else "refused"] += 1


@given(toml_doc(), st.integers(0, 10**6), st.sampled_from(["[", "]", "=", '"', "x = ", "\n[a]\n[a]\n", "{"]))
def test_toml_a_file_that_does_not_parse_is_refused(text, at, junk):
    cut = at % (len(text) + 1)
    broken = text[:cut] + junk + text[cut:]
    try:
        tomllib.loads(broken.lstrip("\ufeff"))
        assume(False)
    except tomllib.TOMLDecodeError:
        pass
    family = TALLY["TOML unparsable → refused"]
    family["tried"] += 1
    with pytest.raises(ConfigParseError):
        adapter_for(get_descriptor("codex")).read(_location("codex"), broken.encode())
    family["survived"] += 1


# ---------------------------------------------------------------------------------------------
# End to end through install / uninstall on real files (fewer examples: each is a few files)

@settings(max_examples=int(os.environ.get("SYNARTESIS_E2E_EXAMPLES", "25")))
@given(st.data())
def test_install_then_uninstall_is_byte_identical_on_disk(data):
    import tempfile
    from pathlib import Path

    from installkit import install, make_env, place, uninstall

    family = TALLY["install → uninstall on disk (JSON + TOML)"]
    value = data.draw(DOC)
    jtext = data.draw(json_text(value))
    ttext = data.draw(toml_doc())
    try:
        tomllib.loads(ttext.lstrip("\ufeff"))
    except tomllib.TOMLDecodeError:
        assume(False)
    family["tried"] += 1
    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        home.mkdir()
        old = {k: os.environ.get(k) for k in ("HOME", "SYNARTESIS_HOME", "CODEX_HOME", "XDG_CONFIG_HOME",
                                                "CLAUDE_CONFIG_DIR")}
        os.environ.update(HOME=str(home), SYNARTESIS_HOME=str(home / ".synartesis"), CODEX_HOME=str(home / ".codex"),
                          XDG_CONFIG_HOME=str(home / ".config"), CLAUDE_CONFIG_DIR=str(home / ".claude"))
        try:
            cursor = place(home, "cursor", jtext.encode())
            codex = place(home, "codex", ttext.encode())
            env = make_env(home)
            try:
                install(env, Path(d))
            except Exception as exc:  # a policy the generated names cannot make is a refusal
                from synartesis.errors import SynartesisError

                assert isinstance(exc, SynartesisError), exc
                assert cursor.read_bytes() == jtext.encode() and codex.read_bytes() == ttext.encode()
                family["refused"] += 1
                return
            uninstall(env)
            assert cursor.read_bytes() == jtext.encode()
            assert codex.read_bytes() == ttext.encode()
            assert not list(home.rglob("*.synartesis-tmp"))
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    family["survived"] += 1
