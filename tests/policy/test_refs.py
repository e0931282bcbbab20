"""The reference language: namespaces, paths, projection, typed whole values, embedded text."""

from __future__ import annotations

import pytest

from synartesis.policy.refs import RefError, resolve_template

SCOPE = {
    "args": {"path": "a.txt", "n": 3, "flag": True, "none": None, "items": [{"name": "x"}, {"name": "y"}]},
    "snapshot": {"content": "old", "price": 5, "tags": [{"slug": "a"}, {"slug": "b"}]},
    "result": [{"name": "q", "id": 7}],
}


@pytest.mark.parametrize("template,expected", [
    ("$.path", "a.txt"),
    ("$.n", 3),
    ("$.flag", True),
    ("$.none", None),
    ("$", SCOPE["args"]),
    ("$snapshot", SCOPE["snapshot"]),
    ("$snapshot.price", 5),
    ("$snapshot.tags[].slug", ["a", "b"]),
    ("$.items[1].name", "y"),
    ("$result[0].name", "q"),
    ("$result[].id", [7]),
    ("restore $.path now", "restore a.txt now"),
    ("$.path was reverted", "a.txt was reverted"),  # defect 12: prose after a leading reference
    ("ok=$.flag n=$.n", "ok=true n=3"),
    ("costs $5 per seat", "costs $5 per seat"),
    ("$$.id", "$.id"),
    ("$$100", "$100"),
    ("total: $$$snapshot.price", "total: $5"),
    ({"a": ["$.n", {"b": "$snapshot.content"}]}, {"a": [3, {"b": "old"}]}),
    (42, 42),
])
def test_resolves(template, expected):
    assert resolve_template(template, SCOPE) == expected


@pytest.mark.parametrize("template,words", [
    ("$.missing", "$.missing is unresolvable: missing is absent"),
    ("$.none.x", "nothing to read from"),
    ("$.items[5].name", "index 5 is absent"),
    ("$.path[]", "[] needs a list to walk"),
    ("$.items[].missing", "missing is absent"),
    ("see $.missing here", "$.missing is unresolvable"),
])
def test_failures_name_the_reference(template, words):
    with pytest.raises(RefError) as info:
        resolve_template(template, SCOPE)
    assert words in str(info.value)


def test_unavailable_namespace():
    with pytest.raises(RefError) as info:
        resolve_template("$snapshot.content", {"args": {}})
    assert "not available at this point" in str(info.value)


def test_empty_projection():
    assert resolve_template("$.l[].a", {"args": {"l": []}}) == []
