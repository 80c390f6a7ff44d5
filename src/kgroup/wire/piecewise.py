"""Read a large request body in pieces: the same entity kio's native reader makes, without one long call.

kio's native reader builds a whole request in one call that holds the GIL throughout: a body of a
million array elements is about a second during which no other thread runs Python. The broker reads
large frames in a worker thread (see ``kgroup.broker.dispatch``); for that thread to give the event
loop its turns, the body is read here element by element. The entity's own fields are read with
kio's native field readers, an array of entities one element at a time with kio's native entity
reader (recursively, when the elements themselves hold arrays of entities), so every native call is
short and the interpreter can switch threads between them.

The body must have passed :func:`kgroup.wire.guard.check_body` first: lengths are trusted here.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio._kio_native import entity_reader, get_field_reader

from kgroup.wire.framing import Frame
from kgroup.wire.guard import unwrap_hint
from kgroup.wire.varint import read_uvarint

__all__ = ["read_piecewise"]

_I32 = struct.Struct(">i")

# (data, offset) -> (value, bytes read)
_Reader = Callable[[Frame, int], tuple[Any, int]]


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    read: Callable[[Frame, int], tuple[Any, int]]  # -> (value, new offset)


@dataclass(frozen=True, slots=True)
class _Plan:
    cls: type[Any]
    flexible: bool
    plain: tuple[_Field, ...]
    tagged: dict[int, _Field]


_PLANS: dict[type[Any], _Plan | None] = {}


def _uvarint(data: Frame, offset: int) -> tuple[int, int]:
    return read_uvarint(data, offset, len(data))  # the guard checked the body's varints before


def _native(reader: _Reader) -> Callable[[Frame, int], tuple[Any, int]]:
    def read(data: Frame, offset: int) -> tuple[Any, int]:
        value, size = reader(data, offset)
        return value, offset + size

    return read


def _entity(cls: type[Any]) -> Callable[[Frame, int], tuple[Any, int]]:
    """Read one ``cls``: natively when it holds no array of entities, else field by field."""
    plan = _plan(cls)
    if plan is None:
        return _native(entity_reader(cls))
    return lambda data, offset: _read(plan, data, offset)


def _entity_array(element: type[Any], flexible: bool) -> Callable[[Frame, int], tuple[Any, int]]:
    read_element = _entity(element)

    def read(data: Frame, offset: int) -> tuple[Any, int]:
        if flexible:
            count, offset = _uvarint(data, offset)
            count -= 1
        else:
            (count,) = _I32.unpack_from(data, offset)
            offset += 4
        if count < 0:
            if count != -1:  # kio's reader takes only -1 for null (Java: any negative)
                raise ValueError(f"invalid array length {count}")
            return None, offset
        items = []
        for _ in range(count):
            item, offset = read_element(data, offset)
            items.append(item)
        return tuple(items), offset

    return read


def _nullable(read_inner: Callable[[Frame, int], tuple[Any, int]]) -> Callable[[Frame, int], tuple[Any, int]]:
    def read(data: Frame, offset: int) -> tuple[Any, int]:
        if data[offset] == 0xFF:  # -1: null
            return None, offset + 1
        return read_inner(data, offset + 1)

    return read


def _plan(cls: type[Any]) -> _Plan | None:
    """How to read ``cls`` in pieces, or None when kio's native reader may read it whole."""
    if cls in _PLANS:
        return _PLANS[cls]
    _PLANS[cls] = None  # entities are not recursive in Kafka's schemas; this ends any cycle
    flexible = bool(cls.__flexible__)
    hints = typing.get_type_hints(cls)
    plain: list[_Field] = []
    tagged: dict[int, _Field] = {}
    in_pieces = False
    for field in dataclasses.fields(cls):
        tag = field.metadata.get("tag")
        inner, is_array, optional = unwrap_hint(hints[field.name])
        read: Callable[[Frame, int], tuple[Any, int]] | None = None
        if tag is None and isinstance(inner, type) and dataclasses.is_dataclass(inner):
            if is_array:
                read = _entity_array(inner, flexible)
                in_pieces = True
            elif _plan(inner) is not None:
                read = _entity(inner)
                read = _nullable(read) if optional else read
                in_pieces = True
        if read is None:
            read = _native(get_field_reader(cls, field, False, tag is not None))
        if tag is None:
            plain.append(_Field(field.name, read))
        else:
            tagged[int(tag)] = _Field(field.name, read)
    plan = _Plan(cls, flexible, tuple(plain), tagged) if in_pieces else None
    _PLANS[cls] = plan
    return plan


def _read(plan: _Plan, data: Frame, offset: int) -> tuple[Any, int]:
    values: dict[str, Any] = {}
    for field in plan.plain:
        values[field.name], offset = field.read(data, offset)
    if plan.flexible:
        count, offset = _uvarint(data, offset)
        for _ in range(count):
            tag, offset = _uvarint(data, offset)
            size, offset = _uvarint(data, offset)
            known = plan.tagged.get(tag)
            if known is None:
                raise KeyError(f"unknown tagged field {tag} of {plan.cls.__qualname__}")  # as kio's reader
            values[known.name], _ = known.read(data, offset)
            offset += size
    return plan.cls(**values), offset


def read_piecewise(cls: type[Any], data: Frame, offset: int) -> Any:
    """The ``cls`` entity at ``data[offset:]``, equal to what ``kio``'s native reader returns."""
    value, _ = _entity(cls)(data, offset)
    return value
