"""canonical(), compact() and compact_ascii() use one C encoder built once: they must give
json.dumps's text, and its errors, for every value synartesis encodes."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synartesis.canonical import canonical, compact, compact_ascii

# lone surrogates, non-ASCII, control characters, floats (inf, nan, -0.0), big integers
_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**40, 10**40), st.floats(allow_nan=True), _text)
_json = st.recursive(_scalar, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(_text, kids, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_the_prebuilt_encoders_give_json_dumps_text_for_any_value(value):
    assert canonical(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert compact(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert compact_ascii(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("value", [object(), {"a": {1j}}, [b"bytes"], {(1,): 2}, {1: 2, "a": 3}])
def test_what_json_dumps_refuses_the_prebuilt_encoders_refuse_alike(value):
    with pytest.raises(Exception) as want:
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(type(want.value)):
        canonical(value)


def test_a_value_deeper_than_the_recursion_limit_raises_recursion_error_not_a_crash():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        canonical(deep)


def test_same_state_takes_arrays_as_multisets_only_for_an_unordered_read():
    from synartesis.canonical import same_state
    a = {"entities": [{"name": "X1", "observations": ["a", "b"]}, {"name": "X2", "observations": []}]}
    b = {"entities": [{"name": "X2", "observations": []}, {"name": "X1", "observations": ["b", "a"]}]}
    assert not same_state(a, b) and not same_state(a, b, {"tool": "open_nodes"})
    assert same_state(a, b, {"tool": "open_nodes", "unordered": True})
    assert not same_state(a, {"entities": [{"name": "X1", "observations": ["a"]}]}, {"unordered": True})
    assert not same_state([1, 1, 2], [1, 2, 2], {"unordered": True})  # a multiset, not a set
