"""Undo's sameness check (drift and restored): two values are the same when their canonical
JSON texts are, and the quick value-by-value comparison never says otherwise."""

from __future__ import annotations

from hypothesis import given, strategies as st

from synartesis.canonical import canonical
from synartesis.undo.engine import _same

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True, allow_infinity=False, width=16)
    | st.sampled_from([0.0, -0.0, 1.0]) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=8)


def test_values_python_calls_equal_but_json_writes_differently_are_not_the_same():
    assert not _same(1, True) and not _same(0, False) and not _same(1, 1.0) and not _same(0.0, -0.0)
    assert not _same({"a": [1]}, {"a": [True]}) and not _same({"a": None}, {})


def test_the_same_state_read_twice_is_the_same():
    state = {"present": True, "value": {"content": "é\n" * 500, "n": [1, 2.5, None, False]}}
    assert _same(state, {"present": True, "value": {"n": [1, 2.5, None, False], "content": "é\n" * 500}})
    assert _same(float("nan"), float("nan"))  # canonical text NaN both times


@given(_json, _json)
def test_same_means_equal_canonical_texts(a, b):
    assert _same(a, b) == (canonical(a) == canonical(b))
    assert _same(a, a)
