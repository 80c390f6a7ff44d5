"""A bounds check of a request body before ``kio``'s native reader sees it.

kio 0.6.5's Rust reader reserves memory for an array from the length on the wire before reading an
element: a 30-byte frame announcing 2^31 elements makes it allocate hundreds of GiB, and the
allocation failure aborts the whole process. A server cannot let a peer do that, so every body is
first walked here, field by field, by the same schema kio reads (Kafka's encoding: fixed-width
numbers, legacy/compact strings, bytes and arrays, nullable structs, tagged fields), checking each
length against the bytes that remain. Anything that does not fit is a :class:`PeerError`
(INVALID_REQUEST), and kio then only ever reads bodies whose every length is plausible.

A string longer than 0x7fff bytes is refused as well, as Kafka's generated readers refuse it ("string
field groupId had invalid length 100000"): such a request cannot be parsed by Kafka, which closes the
connection, and nothing kgroup persists has to carry a longer string than the wire allows.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Callable
from typing import Any

from kgroup.model import ErrorCode, PeerError
from kgroup.wire.framing import Frame
from kgroup.wire.varint import VarintError, read_uvarint

__all__ = ["check_body", "unwrap_hint"]

_FIXED = {
    "int8": 1, "uint8": 1, "bool": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}  # fmt: skip
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
INVALID_REQUEST = ErrorCode.INVALID_REQUEST
#: Kafka's generated readers refuse a string longer than this (``MessageDataGenerator``: ``> 0x7fff``)
MAX_STRING_BYTES = 0x7FFF


class _Budget:
    """How many more array elements this request may carry (one per walk, so threads never share it)."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.left = -1 if limit is None else limit

    def take(self, count: int) -> None:
        if self.limit is None:
            return
        self.left -= count
        if self.left < 0:
            raise PeerError(
                f"request has more than {self.limit} array elements (kgroup's max_request_elements)",
                INVALID_REQUEST,
            )


# (data, offset, end, budget) -> new offset
Step = Callable[[Frame, int, int, _Budget], int]
_ENTITY_STEPS: dict[tuple[type[Any], bool], Step] = {}


def _fail(what: str) -> PeerError:
    return PeerError(f"malformed request: {what}", INVALID_REQUEST)


def _uvarint(data: Frame, offset: int, end: int) -> tuple[int, int]:
    try:
        return read_uvarint(data, offset, end)
    except VarintError as exc:
        raise _fail(str(exc)) from None


def _need(offset: int, size: int, end: int, what: str) -> int:
    if size < 0 or offset + size > end:
        raise _fail(f"{what} of {size} bytes runs past the end of the frame")
    return offset + size


def _fixed(size: int) -> Step:
    def step(data: Frame, offset: int, end: int, budget: _Budget) -> int:
        return _need(offset, size, end, "field")

    return step


def _sized(
    flexible: bool, legacy_prefix: struct.Struct, nullable: bool = True, max_length: int | None = None
) -> Step:
    def step(data: Frame, offset: int, end: int, budget: _Budget) -> int:
        if flexible:
            length, offset = _uvarint(data, offset, end)
            length -= 1  # compact: length + 1, 0 = null
        else:
            _need(offset, legacy_prefix.size, end, "length")
            (length,) = legacy_prefix.unpack_from(data, offset)
            offset += legacy_prefix.size
        if length < 0:
            if not nullable:  # Java's reader: "non-nullable field ... was serialized as null"
                raise _fail("null in a non-nullable string/bytes field")
            return offset  # null
        if max_length is not None and length > max_length:
            raise _fail(f"string field had invalid length {length} (at most {max_length} bytes)")
        return _need(offset, length, end, "string/bytes")

    return step


def _array_count(flexible: bool, data: Frame, offset: int, end: int) -> tuple[int, int]:
    if flexible:
        count, offset = _uvarint(data, offset, end)
        return count - 1, offset
    _need(offset, 4, end, "array length")
    (count,) = _I32.unpack_from(data, offset)
    return count, offset + 4


def _array(flexible: bool, element: Step, nullable: bool = True, fixed_size: int = 0) -> Step:
    def step(data: Frame, offset: int, end: int, budget: _Budget) -> int:
        count, offset = _array_count(flexible, data, offset, end)
        if count < 0:
            if not nullable:  # Java's reader refuses a null non-nullable array (INVALID_REQUEST)
                raise _fail("null for a non-nullable array")
            return offset  # null array
        if count > end - offset:  # every element takes at least one byte
            raise _fail(f"array of {count} elements in {end - offset} bytes")
        budget.take(count)
        if fixed_size:  # numbers and uuids: the whole array in one check
            return _need(offset, count * fixed_size, end, f"array of {count} {fixed_size}-byte elements")
        for _ in range(count):
            before = offset
            offset = element(data, offset, end, budget)
            if offset == before:
                raise _fail("zero-width array element")
        return offset

    return step


def _nullable_struct(inner: Step) -> Step:
    def step(data: Frame, offset: int, end: int, budget: _Budget) -> int:
        _need(offset, 1, end, "struct marker")
        marker = data[offset]
        offset += 1
        return offset if marker == 0xFF else inner(data, offset, end, budget)  # -1 = null

    return step


def unwrap_hint(hint: Any) -> tuple[Any, bool, bool]:
    """(element type, is array, is optional)."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = True
        hint = args[0]
        origin = typing.get_origin(hint)
    if origin is tuple:
        return typing.get_args(hint)[0], True, optional
    return hint, False, optional


def _field_step(field: dataclasses.Field[Any], hint: Any, flexible: bool, is_tag: bool) -> Step:
    inner, is_array, optional = unwrap_hint(hint)
    if is_tag:
        optional = False  # a tagged field's presence is its tag (kio's rule too)
    fixed_size = 0
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        element = _entity_step(inner, flexible=bool(getattr(inner, "__flexible__", flexible)))
        if not is_array and optional:
            element = _nullable_struct(element)
    else:
        kafka_type = field.metadata.get("kafka_type")
        value_nullable = optional and not is_array  # array elements are never null in Kafka
        if kafka_type in _FIXED:
            fixed_size = _FIXED[kafka_type]
            element = _fixed(fixed_size)
        elif kafka_type == "string":
            element = _sized(flexible, _I16, value_nullable or is_tag, MAX_STRING_BYTES)
        elif kafka_type in ("bytes", "records"):
            element = _sized(flexible, _I32, value_nullable or is_tag or kafka_type == "records")
        else:
            raise _fail(f"unknown kafka type {kafka_type!r}")
    return _array(flexible, element, optional or is_tag, fixed_size) if is_array else element


def _entity_step(cls: type[Any], *, flexible: bool) -> Step:
    key = (cls, flexible)
    cached = _ENTITY_STEPS.get(key)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    plain: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(cls):
        tag = field.metadata.get("tag")
        step = _field_step(field, hints[field.name], flexible, tag is not None)
        if tag is None:
            plain.append(step)
        else:
            tagged[int(tag)] = step

    def walk(data: Frame, offset: int, end: int, budget: _Budget) -> int:
        for step in plain:
            offset = step(data, offset, end, budget)
        if not flexible:
            return offset
        count, offset = _uvarint(data, offset, end)
        if count > end - offset:
            raise _fail(f"{count} tagged fields in {end - offset} bytes")
        for _ in range(count):
            tag, offset = _uvarint(data, offset, end)
            size, offset = _uvarint(data, offset, end)
            stop = _need(offset, size, end, "tagged field")
            known = tagged.get(tag)
            if known is not None and known(data, offset, stop, budget) != stop:
                raise _fail(f"tagged field {tag} has trailing bytes")
            offset = stop
        return offset

    _ENTITY_STEPS[key] = walk
    return walk


def check_body(cls: type[Any], data: Frame, offset: int, *, max_elements: int | None = None) -> None:
    """Raise :class:`PeerError` unless ``data[offset:]`` holds a structurally sound ``cls``.

    With ``max_elements``, a body whose arrays hold more elements than that in all is refused as
    well (the walk stops there, so its cost is bounded by the limit, not by the frame).
    """
    _entity_step(cls, flexible=bool(cls.__flexible__))(data, offset, len(data), _Budget(max_elements))
