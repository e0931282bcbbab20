"""Frozen records (synartesis.frozen): what the policy model and paths.Env need of a frozen dataclass."""

from __future__ import annotations

import pytest

from synartesis.frozen import FrozenError, factory, fields, is_record, record


@record
class Point:
    """A test record."""

    x: int
    y: int = 0
    tags: dict = factory(dict)


def test_a_record_takes_its_fields_by_position_or_name_with_defaults_and_fresh_factories():
    a, b = Point(1), Point(x=1, y=0)
    assert (a.x, a.y, a.tags) == (1, 0, {})
    assert a == b and a.tags is not b.tags
    assert Point(1, 2, {"k": 1}).tags == {"k": 1}
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags={})"
    assert Point(1) != Point(2) and Point(1) != (1, 0, {})
    assert fields(Point) == ("x", "y", "tags") and is_record(a) and not is_record(Point) and not is_record(1)
    assert Point.y == 0  # a plain default stays a class attribute, as with dataclasses
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))  # hashable when its values are


def test_a_record_refuses_changes_and_bad_arguments():
    p = Point(1)
    with pytest.raises(FrozenError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, z=3)
    with pytest.raises(TypeError):
        Point(1, 2, {}, 4)
    with pytest.raises(TypeError):
        record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))
