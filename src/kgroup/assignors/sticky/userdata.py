"""The sticky assignors' subscription user data, byte-exact to Kafka.

``StickyAssignor`` (eager) sends its last assignment and generation in its subscription's user data,
in Kafka's old-style ``Struct`` schema (big-endian)::

    V0: previous_assignment: ARRAY(topic: STRING, partitions: ARRAY(INT32))
    V1: V0 + generation: INT32

where ``ARRAY`` is an int32 element count followed by the elements and ``STRING`` an int16 byte length
followed by UTF-8 bytes. Topics are written in the iteration order of the ``java.util.HashMap`` that
``CollectionUtils.groupPartitionsByTopic`` builds, partitions of a topic in the order given, so the
bytes equal what a Java client sends.

``CooperativeStickyAssignor`` sends only its generation: ``generation: INT32``.

Decoding is as lenient as Kafka's ``Schema.read``: trailing bytes are ignored; a V1 read that runs out
of bytes falls back to V0; anything that cannot be read raises :class:`ValueError`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kgroup.assignors.sticky._tp import new_partition
from kgroup.javacompat import hashmap_iteration_order
from kgroup.model import TopicPartition

__all__ = [
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT16_MAX = 2**15 - 1


def _int32(value: int, what: str) -> bytes:
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{what} {value} does not fit in a Java int")
    return _INT32.pack(value)


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """``StickyAssignor.serializeTopicPartitionAssignment``: V1, or V0 when ``generation`` is ``None``."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_int32(len(by_topic), "topic count")]
    for topic in hashmap_iteration_order(by_topic):
        name = topic.encode("utf-8")
        if len(name) > _INT16_MAX:
            raise ValueError(f"topic name of {len(name)} bytes is longer than a Kafka STRING (32767 bytes)")
        out.append(_INT16.pack(len(name)))
        out.append(name)
        numbers = by_topic[topic]
        out.append(_int32(len(numbers), "partition count"))
        out.extend(_int32(n, "partition") for n in numbers)
    if generation is not None:
        out.append(_int32(generation, "generation"))
    return b"".join(out)


class _Reader:
    """Reads Kafka's ``Type`` primitives from a byte string, raising ``ValueError`` on any shortfall."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._data):
            raise ValueError(f"user data ends after {len(self._data)} bytes; needed {end}")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def int16(self) -> int:
        value: int = _INT16.unpack(self.take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self.take(4))[0]
        return value

    def array_size(self) -> int:
        size = self.int32()
        if size < 0:
            raise ValueError(f"array size {size} cannot be negative")
        if size > self.remaining():
            raise ValueError(f"array of size {size} but only {self.remaining()} bytes left")
        return size

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise ValueError(f"string length {length} cannot be negative")
        # Java decodes malformed UTF-8 with replacement characters rather than failing.
        return self.take(length).decode("utf-8", errors="replace")


def _read_assignment(reader: _Reader) -> list[TopicPartition]:
    partitions: list[TopicPartition] = []
    for _ in range(reader.array_size()):
        topic = reader.string()
        count = reader.array_size()
        numbers = struct.unpack(f">{count}i", reader.take(4 * count))
        partitions.extend(new_partition((topic, n)) for n in numbers)
    return partitions


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """``StickyAssignor.deserializeTopicPartitionAssignment``: (partitions, generation or ``None`` for V0).

    Raises ``ValueError`` when neither schema can read the bytes (Kafka then treats the member as
    owning nothing, with generation -1).
    """
    try:
        reader = _Reader(data)
        partitions = _read_assignment(reader)
        return partitions, reader.int32()
    except ValueError:
        pass
    try:
        return _read_assignment(_Reader(data)), None
    except ValueError as exc:
        raise ValueError(f"not sticky assignor user data (V0 or V1): {exc}") from exc


def encode_cooperative_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: the generation as one int32."""
    return _int32(generation, "generation")


def decode_cooperative_user_data(data: bytes) -> int:
    """The generation in cooperative-sticky user data; ``ValueError`` when fewer than 4 bytes."""
    if len(data) < 4:
        raise ValueError(f"cooperative-sticky user data needs 4 bytes, got {len(data)}")
    value: int = _INT32.unpack_from(data)[0]
    return value
