"""The reference grammar (issue 9 item 1): what it refuses is a FILE:LINE:COL error at load,
pointing at the character to change; what it accepts round-trips and resolves.

The properties are fuzzed with hypothesis against an independent acceptor: the grammar as
written in the README, translated to one regular expression (``ORACLE``). The example count
is small enough for CI; ``SYNARTESIS_FUZZ_EXAMPLES=N`` raises it for a longer campaign.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synartesis.errors import PolicyError
from synartesis.policy import parse_policy
from synartesis.policy.refs import (
    NAMESPACES,
    RefError,
    RefSyntaxError,
    format_ref,
    parse_template,
    references,
    resolve_template,
)

EXAMPLES = int(os.environ.get("SYNARTESIS_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# The README grammar as one regular expression (keys and namespace words are maximal).
_KEY = r"[A-Za-z_][A-Za-z0-9_-]*(?![A-Za-z0-9_-])"
_SEG = rf"(?:\.{_KEY}|\[[0-9]+\]|\[\])"
_REF = rf"(?:\$(?:snapshot|result)(?![A-Za-z0-9_]){_SEG}*|\$(?=[.\[]){_SEG}+)(?![.\[])"
_LIT = r"(?:[^$]|\$\$|\$(?![A-Za-z_.\[$]))"
ORACLE = re.compile(rf"(?:{_REF}|{_LIT})*", re.S)

# The policy a fuzzed string is loaded in: as the inverse's `content`, on line 9.
POLICY = """version: 1
servers:
  files: {{}}
tools:
  - match: files.write_file
    class: reversible
    snapshot: {{tool: files.read_text_file, args: {{path: "$.path"}}}}
    inverse:
      tool: files.write_file
      args: {{path: "$.path", content: {value}}}
"""
LINE = 10
PREFIX = '      args: {path: "$.path", content: '


def _accepts(text: str) -> bool:
    try:
        parse_template(text)
    except RefSyntaxError:
        return False
    return True


def _load_error(value: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(POLICY.format(value=json.dumps(value)), "p.yaml")
    return info.value


# -- the cases the review found, and their neighbours --------------------------------------

MALFORMED = [
    # (template, offset of the character to change, words of the message)
    ("$snapshot.", 9, "a key must follow '.'"),
    ("$.a[", 3, "never closed"),
    ("$result..x", 7, "remove the extra '.'"),
    ("$snapshot.a[x]", 11, "[x] is not an index"),
    ("$.", 1, "a key must follow '.'"),
    ("$[", 1, "never closed"),
    ("$[items]", 1, "a key goes after a '.': .items"),
    ("$.a.0", 3, "for an index write [0]"),
    ("$.a[-1]", 3, "[-1] is not an index"),
    ("$.a[1", 3, "never closed"),
    ("$.a[ ]", 3, "[ ] is not an index"),
    ("$snapshot.a.", 11, "a key must follow '.'"),
    ("$.-x", 1, "keys are letters"),
    ("$upstream.id", 0, "$upstream is not a namespace"),
    ("$snapshots.content", 0, "did you mean $snapshot?"),
    ("$Result.id", 0, "did you mean $result?"),
    ("$resultx", 0, "is not a namespace"),
    ("restored $snapshot.", 18, "a key must follow '.'"),
    ("see $.a[x] here", 7, "[x] is not an index"),
    ("costs $HOME", 6, "$HOME is not a namespace"),
]


@pytest.mark.parametrize("template,offset,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_reference_is_refused_where_it_goes_wrong(template, offset, words):
    with pytest.raises(RefSyntaxError) as info:
        parse_template(template)
    assert info.value.offset == offset and words in info.value.problem
    err = _load_error(template)
    assert (err.file, err.line, err.col) == ("p.yaml", LINE, len(PREFIX) + 2 + offset), str(err)
    assert words in str(err) and str(err).startswith(f"p.yaml:{LINE}:")
    # and it is never resolved, whatever the scope holds
    with pytest.raises(RefSyntaxError):
        resolve_template(template, {"args": {"a": [1]}, "snapshot": {"a": [1]}, "result": {"x": 1}})


@pytest.mark.parametrize("style,value,col", [
    ("plain", "$snapshot.", 48),
    ("single", "'it''s $snapshot.'", 55),
    ("escaped", '"\\t$snapshot."', 39),  # an escape: the column of the string itself
])
def test_the_column_points_into_the_string_when_the_source_maps_onto_it(style, value, col):
    text = POLICY.replace("{value}", value).replace("{{", "{").replace("}}", "}")
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    assert (info.value.line, info.value.col) == (LINE, col), str(info.value)


@pytest.mark.parametrize("template,expected", [
    ("$snapshot", {"content": "old"}),
    ("[$snapshot.content]", "[old]"),
    ("$.path, then $result", 'a.txt, then {"id":7}'),
    ("costs $5, $ 6 and 7$", "costs $5, $ 6 and 7$"),
    ("$$snapshot.", "$snapshot."),
    ("$result-id", '{"id":7}-id'),
    ("$.path!", "a.txt!"),
])
def test_what_the_grammar_accepts_resolves(template, expected):
    scope = {"args": {"path": "a.txt"}, "snapshot": {"content": "old"}, "result": {"id": 7}}
    assert resolve_template(template, scope) == expected


def test_the_review_repro_never_loads_so_nothing_is_overwritten(tmp_path):
    """The review's `content: "$snapshot."` inverse: check and the proxy refuse the policy."""
    from helpers import FAKE_SERVER, cli, run, synartesis_argv

    policy = tmp_path / "synartesis.yaml"
    text = POLICY.format(value='"$snapshot."').replace("files", "kv")
    policy.write_text(text)
    checked = cli("check", "--manifest", str(policy))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    where = f"{policy}:{LINE}:{len(PREFIX) + 2 + 9}:"
    assert where in checked.stderr and "a key must follow '.'" in checked.stderr
    assert "No problems found" not in checked.stdout
    state = tmp_path / "kv.json"
    proxy = run([*synartesis_argv("proxy", "--server", "kv", "--manifest", str(policy),
                                  "--journal", str(tmp_path / "j.db"), "--"), *FAKE_SERVER, "--state", str(state)],
                input="", text=True, timeout=60)
    assert proxy.returncode == 2 and where in proxy.stderr
    assert proxy.stdout == ""  # not one frame: the proxy never started relaying


# -- properties ------------------------------------------------------------------------------

keys = st.builds(str.__add__, st.sampled_from("abqxAZ_"), st.text(alphabet="az09_-", max_size=3))
leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(alphabet="ab$.\u00e9", max_size=3))


@st.composite
def reference_and_value(draw):
    """A reference, a value its namespace holds, and what the reference resolves to in it."""
    ns = draw(st.sampled_from(NAMESPACES))
    path = draw(st.lists(st.one_of(keys, st.integers(0, 3), st.none()), max_size=4))
    if ns == "args" and not path:
        path = [draw(keys)]

    def build(steps):
        if not steps:
            leaf = draw(leaves)
            return leaf, leaf
        step, rest = steps[0], steps[1:]
        if step is None:
            pairs = [build(rest) for _ in range(draw(st.integers(0, 3)))]
            return [v for v, _ in pairs], [e for _, e in pairs]
        if isinstance(step, int):
            others = draw(st.lists(leaves, min_size=step + 1, max_size=step + 2))
            value, expected = build(rest)
            others[step] = value
            return others, expected
        value, expected = build(rest)
        noise = draw(st.dictionaries(keys, leaves, max_size=2))
        return {**noise, step: value}, expected

    value, expected = build(path)
    return ns, tuple(path), value, expected


@FUZZ
@given(reference_and_value())
def test_generated_valid_references_round_trip_and_resolve(case):
    ns, path, value, expected = case
    text = format_ref(ns, path)
    whole = parse_template(text).whole
    assert whole is not None and (whole.ns, whole.path) == (ns, path)
    assert resolve_template(text, {ns: value}) == expected
    assert list(references({"a": [text]})) == [(text, ns)]


# after a reference, literal text must not continue its path or its last key
_after = st.text(alphabet=" ,;:!?)/=+\n", min_size=1, max_size=3)
_plain = st.text(alphabet=st.characters(blacklist_characters="$", blacklist_categories=("Cs",)), max_size=6)


@FUZZ
@given(st.lists(st.tuples(reference_and_value(), _after, _plain), min_size=1, max_size=3,
                unique_by=lambda piece: piece[0][0]), _plain)
def test_generated_references_inside_text_are_substituted_as_text(pieces, head):
    text, expected, scope = head, head, {}
    for (ns, path, value, want), sep, tail in pieces:
        scope[ns] = value
        text += format_ref(ns, path) + sep + tail
        expected += (want if isinstance(want, str) else json.dumps(want, ensure_ascii=False, separators=(",", ":"))) \
            + sep + tail
    assert parse_template(text).whole is None  # text around it: substituted, never a typed value
    assert resolve_template(text, scope) == expected


_ALPHABET = "$$$..[[]]_-abx09 rst"
_words = st.sampled_from(["$snapshot", "$result", "$.", "$[", "$$", "snapshot", "result", "$"])
fuzzed = st.lists(st.one_of(st.text(alphabet=_ALPHABET, max_size=4), _words), max_size=8).map("".join)


@FUZZ
@given(fuzzed)
def test_the_parser_accepts_exactly_what_the_written_grammar_accepts(text):
    assert _accepts(text) is bool(ORACLE.fullmatch(text)), text


@FUZZ
@given(fuzzed.filter(lambda t: '"' not in t and "\\" not in t))
def test_a_refused_string_is_a_located_load_error_and_an_accepted_one_never_fails_to_parse(text):
    if ORACLE.fullmatch(text):
        parse_policy(POLICY.format(value=json.dumps(text)), "p.yaml")  # loads
        scope = {"args": {"a": 1}, "snapshot": {}, "result": None}
        try:
            resolve_template(text, scope)
        except RefSyntaxError as exc:  # pragma: no cover - the property
            raise AssertionError(f"{text!r} loaded but failed to parse at resolve time: {exc}")
        except RefError:
            pass  # unresolvable against this scope: allowed, that is a run-time fact
        return
    err = _load_error(text)
    offset = err.col - (len(PREFIX) + 2)
    assert err.line == LINE and 0 <= offset < len(text), (text, str(err))
    assert text[offset] in "$.[", (text, offset, str(err))


@FUZZ
@given(fuzzed)
def test_an_accepted_template_prints_back_to_the_same_parse(text):
    if not ORACLE.fullmatch(text):
        return
    parsed = parse_template(text)
    printed = "".join(p.replace("$", "$$") if isinstance(p, str) else p.text for p in parsed.parts)
    assert [(type(p), p if isinstance(p, str) else (p.ns, p.path)) for p in parse_template(printed).parts] == \
           [(type(p), p if isinstance(p, str) else (p.ns, p.path)) for p in parsed.parts]
