"""The Produce request (API key 0) read by hand: each partition's records stay a view of the frame.

kio's reader copies every partition's records out of the frame into new ``bytes`` (about 0.3-0.5 ms
a megabyte on this project's machines: fresh memory faulted in page by page); this reader gives
the same request with the records as read-only ``memoryview`` slices of the frame, which the log
validates and writes as they are. It runs after :func:`kgroup.wire.guard.check_body` (as kio's does,
in :func:`kgroup.wire.codec.decode_request`), so lengths and element counts are already known to be
sound; it refuses what kio refuses past the guard — a negative length other than null, a string that
is not UTF-8, any tagged field (Produce v9-v13 define none: kio refuses an unknown tag) — with a
``ValueError`` (the codec answers ``PeerError``, as for kio's). ``tests/wire/test_produce_request.py``
compares it with kio on random and damaged requests of every version. v13 names each topic by its
id (16 bytes) instead of its name; the all-zero id reads as ``None``, as kio reads it.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from dataclasses import dataclass

from kgroup.wire.framing import Frame
from kgroup.wire.varint import VarintError, read_uvarint

__all__ = ["VERSIONS", "PartitionProduceData", "ProduceRequest", "TopicProduceData", "read_produce_request"]

#: the Produce versions this reader reads: those kgroup's broker answers
VERSIONS = range(3, 14)
_FLEXIBLE_FROM = 9
_TOPIC_IDS_FROM = 13
_UUID_BYTES = 16

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_ZERO_ID = bytes(_UUID_BYTES)


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    index: int
    records: memoryview | None  # a read-only view of the request's frame


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    name: str | None  # v3-v12 (None in v13)
    partition_data: tuple[PartitionProduceData, ...]
    topic_id: uuid.UUID | None = None  # v13 (None before, or the all-zero id)


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    """The fields kio's ``ProduceRequest`` has (v3-v13), with the records left in the frame."""

    transactional_id: str | None
    acks: int
    timeout: datetime.timedelta
    topic_data: tuple[TopicProduceData, ...]


class _Reader:
    __slots__ = ("data", "position")

    def __init__(self, data: memoryview, position: int) -> None:
        self.data = data
        self.position = position

    def take(self, size: int) -> memoryview:
        start = self.position
        if size < 0 or start + size > len(self.data):
            raise ValueError(f"{size} bytes at {start} run past the end of the frame")
        self.position = start + size
        return self.data[start : start + size]

    def uvarint(self) -> int:
        try:
            value, self.position = read_uvarint(self.data, self.position, len(self.data))
        except VarintError:
            raise ValueError("malformed unsigned varint") from None
        return value

    def unpack(self, layout: struct.Struct) -> tuple[int, ...]:
        try:
            values = layout.unpack_from(self.data, self.position)
        except struct.error:
            raise ValueError(f"{layout.size} bytes at {self.position} run past the frame's end") from None
        self.position += layout.size
        return values

    def length(self, flexible: bool, legacy: struct.Struct) -> int:
        """A length prefix: -1 for null (compact: 0), else the length."""
        if flexible:
            return self.uvarint() - 1
        (size,) = self.unpack(legacy)
        if size < -1:
            raise ValueError("Found negative byte length")
        return int(size)

    def string(self, flexible: bool, *, nullable: bool) -> str | None:
        size = self.length(flexible, _I16)
        if size < 0:
            if nullable:
                return None
            raise ValueError("null in a non-nullable string")
        try:
            return bytes(self.take(size)).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("Failed interpreting bytes as UTF-8") from None

    def count(self, flexible: bool) -> int:
        size = self.length(flexible, _I32)
        if size < 0:
            raise ValueError("null for a non-nullable array")
        return size

    def no_tags(self) -> None:
        tags = self.uvarint()
        if tags:  # kio knows no tagged field of Produce v9-v13, and refuses one it does not know
            raise ValueError(f"Unknown tagged field tag: {self.uvarint()}")


def read_produce_request(frame: Frame, offset: int, version: int) -> ProduceRequest:
    """The Produce request body at ``frame[offset:]`` (``version`` in :data:`VERSIONS`)."""
    if version not in VERSIONS:
        raise ValueError(f"Produce v{version}: the hand-written reader reads v{VERSIONS[0]}-v{VERSIONS[-1]}")
    flexible = version >= _FLEXIBLE_FROM
    by_id = version >= _TOPIC_IDS_FROM
    view = memoryview(frame)
    if not view.readonly:
        view = view.toreadonly()
    read = _Reader(view, offset)
    transactional_id = read.string(flexible, nullable=True)
    acks, timeout_ms = read.unpack(_ACKS_TIMEOUT)
    topics = []
    for _ in range(read.count(flexible)):
        name: str | None = None
        topic_id: uuid.UUID | None = None
        if by_id:
            raw = bytes(read.take(_UUID_BYTES))
            topic_id = None if raw == _ZERO_ID else uuid.UUID(bytes=raw)
        else:
            name = read.string(flexible, nullable=False)
        partitions = []
        for _ in range(read.count(flexible)):
            (index,) = read.unpack(_I32)
            size = read.length(flexible, _I32)
            records = None if size < 0 else read.take(size)
            if flexible:
                read.no_tags()
            partitions.append(PartitionProduceData(index, records))
        if flexible:
            read.no_tags()
        topics.append(TopicProduceData(name, tuple(partitions), topic_id))
    if flexible:
        read.no_tags()
    return ProduceRequest(transactional_id, acks, datetime.timedelta(milliseconds=timeout_ms), tuple(topics))
