"""Frozen records without :mod:`dataclasses` (standard library only, imports nothing).

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis`` and ``tokenize``): the largest
import left on the proxy's path to its first answer (issue 11, start-up). The policy model and
``paths.Env`` are small frozen records that need none of that, so they use :func:`record`:
the same constructor, ``repr``, equality, hash and immutability as ``@dataclass(frozen=True)``.
"""

from __future__ import annotations

__all__ = ["FrozenError", "factory", "fields", "is_record", "record"]

_NO_DEFAULT = object()


class FrozenError(AttributeError):
    """An attempt to change a field of a frozen record."""


class factory:  # lower case: reads like dataclasses.field(default_factory=...)
    """A default made fresh for each record (``env: dict = factory(dict)``)."""

    __slots__ = ("make",)

    def __init__(self, make) -> None:
        self.make = make


def record(cls):
    """Make ``cls`` a frozen record of its annotated class attributes, in order (a default is
    the class attribute's value, or a :class:`factory`). Fields without a default come first,
    as for a dataclass.

    Raises:
        TypeError: a field without a default after one with a default.
    """
    names = [n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("__")]
    defaults = {}
    for n in names:
        value = cls.__dict__.get(n, _NO_DEFAULT)
        if value is not _NO_DEFAULT:
            defaults[n] = value
            if isinstance(value, factory):
                delattr(cls, n)  # as dataclasses do: a plain default stays a class attribute
        elif defaults:
            raise TypeError(f"{cls.__name__}.{n} has no default but follows a field that has one")
    fields_ = tuple(names)

    def __init__(self, *args, **kwargs):
        if len(args) > len(fields_):
            raise TypeError(f"{cls.__name__}() takes {len(fields_)} arguments but {len(args)} were given")
        set_ = object.__setattr__
        for name, value in zip(fields_, args):
            set_(self, name, value)
        for name in fields_[len(args):]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif name in defaults:
                value = defaults[name]
                if isinstance(value, factory):
                    value = value.make()
            else:
                raise TypeError(f"{cls.__name__}() missing argument {name!r}")
            set_(self, name, value)
        if kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected argument {next(iter(kwargs))!r}")

    def _values(self):
        return tuple(getattr(self, n) for n in fields_)

    def __repr__(self):
        return f"{cls.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in fields_)})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _values(self) == _values(other)

    def __hash__(self):
        return hash(_values(self))

    def __setattr__(self, name, value):
        raise FrozenError(f"cannot assign to field {name!r} of a frozen {cls.__name__}")

    def __delattr__(self, name):
        raise FrozenError(f"cannot delete field {name!r} of a frozen {cls.__name__}")

    for fn in (__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__):
        fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
        setattr(cls, fn.__name__, fn)
    cls.__record_fields__ = fields_
    cls.__match_args__ = fields_
    return cls


def is_record(value) -> bool:
    """True for an instance of a :func:`record` class."""
    return hasattr(type(value), "__record_fields__") and not isinstance(value, type)


def fields(value) -> tuple[str, ...]:
    """The field names of a record (or record class), in order."""
    return value.__record_fields__
