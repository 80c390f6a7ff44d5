"""A faster ``__init__`` for kgroup's frozen, slotted dataclasses (the protocol's messages and records).

A frozen dataclass sets each field with ``object.__setattr__(self, name, value)``, which looks the
field up by name through the class every time; the simulator and the broker build hundreds of
thousands of these small values a second, and that lookup is most of their cost. :func:`fast_init`
replaces the generated ``__init__`` with one that calls each slot's own descriptor directly. Nothing
else changes: the class stays a frozen dataclass (equality, hashing, ``repr``, ``replace``, pickling,
``FrozenInstanceError`` on assignment), with the same signature, defaults, default factories and
``__post_init__``.

:func:`replace` is ``dataclasses.replace`` for such classes, equally without the field-by-field
walk it does on every call.

Usage, above the dataclass decorator::

    @fast_init
    @dataclass(frozen=True, slots=True)
    class Heartbeat: ...

or both at once, as kgroup's messages and records are declared::

    @value_type
    class Heartbeat: ...
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform

__all__ = ["fast_init", "replace", "value_type"]

T = TypeVar("T")

_FACTORY = object()  # the default of a field with a default_factory: "call the factory"


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its slots directly."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"fast_init: {cls.__name__} must be a @dataclass(frozen=True, slots=True)")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            raise TypeError(f"fast_init: {cls.__name__}.{f.name} has init=False; not supported")
        name = f.name
        namespace[f"_set_{name}"] = getattr(cls, name).__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = f.default
            param = f"{name}=_default_{name}"
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            param = f"{name}=_FACTORY"
            body.append(f"    if {name} is _FACTORY:\n        {name} = _factory_{name}()")
        else:
            param = name
        (keyword if f.kw_only else positional).append(param)
        body.append(f"    _set_{name}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    # replace(): the class called with every field, each taken from the changes or the original
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    kw_only = {f.name for f in dataclasses.fields(cls) if f.kw_only}  # type: ignore[arg-type]
    arguments = ", ".join(
        f"{n}=changes.get({n!r}, self.{n})" if n in kw_only else f"changes.get({n!r}, self.{n})"
        for n in names
    )
    namespace["_FIELDS"] = frozenset(names)
    namespace["_cls"] = cls
    source += (
        "def __kgroup_replace__(self, changes):\n"
        "    if not changes.keys() <= _FIELDS:\n"
        "        raise TypeError(f'{_cls.__name__}: no field(s) {sorted(changes.keys() - _FIELDS)}')\n"
        f"    return _cls({arguments})\n"
    )
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    cls.__kgroup_replace__ = namespace["__kgroup_replace__"]  # type: ignore[attr-defined]
    return cls


@dataclass_transform(frozen_default=True)
def value_type(cls: type[T]) -> type[T]:
    """``cls`` as a frozen, slotted dataclass with :func:`fast_init`'s ``__init__`` (a message or record)."""
    return fast_init(dataclasses.dataclass(frozen=True, slots=True)(cls))


def replace(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace``, without its per-call field walk for :func:`fast_init` classes."""
    fast = getattr(type(obj), "__kgroup_replace__", None)
    if fast is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    result: T = fast(obj, changes)
    return result
