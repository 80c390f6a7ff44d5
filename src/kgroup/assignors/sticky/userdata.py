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


_unpack_int16 = _INT16.unpack_from
_unpack_int32 = _INT32.unpack_from


def _read_assignment(data: bytes) -> tuple[list[TopicPartition], int]:
    """Read ``previous_assignment``; returns the partitions and the offset after it.

    Reads Kafka's ``Type`` primitives as ``Schema.read`` does (an array size may not be negative nor
    exceed the bytes left; a string length may not be negative) and raises ``ValueError`` on any
    shortfall. One tight function: a leader decodes a user data per member, a million partitions
    in large groups.
    """
    size = len(data)
    try:
        (topics,) = _unpack_int32(data, 0)
        pos = 4
        if topics < 0 or topics > size - pos:
            raise ValueError(f"array size {topics} is negative or exceeds the {size - pos} bytes left")
        partitions: list[TopicPartition] = []
        extend = partitions.extend
        append = partitions.append
        for _ in range(topics):
            (length,) = _unpack_int16(data, pos)
            pos += 2
            if length < 0 or pos + length > size:
                raise ValueError(f"string length {length} is negative or exceeds the data")
            # Java decodes malformed UTF-8 with replacement characters rather than failing.
            topic = data[pos : pos + length].decode("utf-8", errors="replace")
            pos += length
            (count,) = _unpack_int32(data, pos)
            pos += 4
            if count < 0 or count > size - pos:
                raise ValueError(f"array size {count} is negative or exceeds the {size - pos} bytes left")
            if count == 1:  # the common case in large groups: one partition per topic entry
                append(new_partition((topic, _unpack_int32(data, pos)[0])))
            else:
                extend([new_partition((topic, n)) for n in struct.unpack_from(f">{count}i", data, pos)])
            pos += 4 * count
    except struct.error as exc:
        raise ValueError(f"user data ends early ({size} bytes)") from exc
    return partitions, pos


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """``StickyAssignor.deserializeTopicPartitionAssignment``: (partitions, generation or ``None`` for V0).

    Raises ``ValueError`` when neither schema can read the bytes (Kafka then treats the member as
    owning nothing, with generation -1). V1 and V0 share the partition list, so it is read once: V1
    when four more bytes follow it, else V0.
    """
    try:
        partitions, end = _read_assignment(data)
    except ValueError as exc:
        raise ValueError(f"not sticky assignor user data (V0 or V1): {exc}") from exc
    if len(data) - end >= 4:
        (generation,) = _unpack_int32(data, end)
        return partitions, generation
    return partitions, None


def encode_cooperative_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: the generation as one int32."""
    return _int32(generation, "generation")


def decode_cooperative_user_data(data: bytes) -> int:
    """The generation in cooperative-sticky user data; ``ValueError`` when fewer than 4 bytes."""
    if len(data) < 4:
        raise ValueError(f"cooperative-sticky user data needs 4 bytes, got {len(data)}")
    value: int = _INT32.unpack_from(data)[0]
    return value
