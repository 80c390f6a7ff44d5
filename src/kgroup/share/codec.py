"""``__share_group_state``'s records as bytes, exactly as Kafka 4.4.0's share coordinator writes them
(``ShareSnapshotKey/Value``, ``ShareUpdateKey/Value`` in ``kafka-share-coordinator-4.4.0.jar``).

A key is the record type (int16: 0 snapshot, 1 update) then the key struct (version 0, not flexible:
``GroupId`` string, ``TopicId`` uuid, ``Partition`` int32). A value is its version (int16, 0) then the
value struct (flexible: compact array of state batches, tagged fields; ``DeliveryCompleteCount`` is
tagged field 0, written only when it is not −1). A null value is a tombstone.
"""

from __future__ import annotations

import struct

from kgroup.model import PeerError, TopicId
from kgroup.share.persist import ShareKey, ShareSnapshot, ShareStateRecord, ShareUpdate
from kgroup.share.records import PersisterStateBatch
from kgroup.wire.varint import encode_uvarint, read_uvarint

__all__ = [
    "SHARE_SNAPSHOT_TYPE",
    "SHARE_UPDATE_TYPE",
    "decode_share_record",
    "encode_share_record",
    "encode_share_tombstone",
]

SHARE_SNAPSHOT_TYPE = 0
SHARE_UPDATE_TYPE = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_BATCH = struct.Struct(">qqbh")


def _key_bytes(record_type: int, key: ShareKey) -> bytes:
    group = key.group_id.encode("utf-8")
    if len(group) > 0x7FFF:
        raise ValueError("group id: longer than 32767 bytes")
    return b"".join(
        (
            _I16.pack(record_type),
            _I16.pack(len(group)),
            group,
            TopicId.from_string(key.topic_id).to_int().to_bytes(16, "big"),
            _I32.pack(key.partition),
        )
    )


def encode_share_tombstone(key: ShareKey) -> tuple[bytes, None]:
    """``newShareStateTombstoneRecord``: the partition's ``ShareSnapshotKey`` with a null value
    (``DeleteShareGroupState``)."""
    return _key_bytes(0, key), None


def _batches_bytes(batches: tuple[PersisterStateBatch, ...]) -> bytes:
    parts = [encode_uvarint(len(batches) + 1)]
    for b in batches:
        parts.append(_BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count))
        parts.append(b"\x00")
    return b"".join(parts)


def _tags(delivery_complete_count: int) -> bytes:
    if delivery_complete_count == -1:
        return b"\x00"
    return b"\x01\x00\x04" + _I32.pack(delivery_complete_count)


def encode_share_record(record: ShareStateRecord) -> tuple[bytes, bytes]:
    """The record's key and value bytes."""
    if isinstance(record, ShareSnapshot):
        value = b"".join(
            (
                _I16.pack(0),
                struct.pack(
                    ">iiiqqq",
                    record.snapshot_epoch,
                    record.state_epoch,
                    record.leader_epoch,
                    record.start_offset,
                    record.create_timestamp,
                    record.write_timestamp,
                ),
                _batches_bytes(record.batches),
                _tags(record.delivery_complete_count),
            )
        )
        return _key_bytes(SHARE_SNAPSHOT_TYPE, record.key), value
    value = b"".join(
        (
            _I16.pack(0),
            struct.pack(">iiq", record.snapshot_epoch, record.leader_epoch, record.start_offset),
            _batches_bytes(record.batches),
            _tags(record.delivery_complete_count),
        )
    )
    return _key_bytes(SHARE_UPDATE_TYPE, record.key), value


class _Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise PeerError(f"{self.what}: ends early (needs {n} bytes at {self.pos}, has {len(self.data)})")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self.take(fmt.size))

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.data, self.pos, len(self.data))
        except (ValueError, IndexError) as exc:
            raise PeerError(f"{self.what}: bad varint at {self.pos}") from exc
        return value

    def end(self) -> None:
        if self.pos != len(self.data):
            raise PeerError(f"{self.what}: {len(self.data) - self.pos} bytes after the end of the record")


def _read_key(data: bytes) -> tuple[int, ShareKey]:
    r = _Reader(data, "__share_group_state key")
    (record_type,) = r.unpack(_I16)
    if record_type not in (SHARE_SNAPSHOT_TYPE, SHARE_UPDATE_TYPE):
        raise PeerError(f"__share_group_state key: unknown record type {record_type}")
    (n,) = r.unpack(_I16)
    try:
        group = r.take(n).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PeerError("__share_group_state key: group id is not UTF-8") from exc
    topic = str(TopicId.from_int(int.from_bytes(r.take(16), "big")))
    (partition,) = r.unpack(_I32)
    r.end()
    return record_type, ShareKey(group, topic, partition)


def _read_batches(r: _Reader) -> tuple[PersisterStateBatch, ...]:
    n = r.uvarint() - 1
    if n < 0 or n * (_BATCH.size + 1) > len(r.data) - r.pos:
        raise PeerError(f"{r.what}: bad state batch count")
    out = []
    for _ in range(n):
        first, last, state, count = r.unpack(_BATCH)
        _skip_tags(r, {})
        out.append(PersisterStateBatch(first, last, state, count))
    return tuple(out)


def _skip_tags(r: _Reader, into: dict[int, bytes]) -> None:
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        into[tag] = r.take(r.uvarint())


def decode_share_record(key: bytes, value: bytes | None) -> ShareStateRecord | tuple[ShareKey, None]:
    """The record the bytes hold; a tombstone (null value) as ``(key, None)``. Bad bytes raise
    :class:`~kgroup.model.PeerError` naming what is wrong."""
    record_type, share_key = _read_key(key)
    if value is None:
        return share_key, None
    r = _Reader(value, "__share_group_state value")
    (version,) = r.unpack(_I16)
    if version != 0:
        raise PeerError(f"__share_group_state value: unsupported version {version}")
    tags: dict[int, bytes] = {}
    if record_type == SHARE_SNAPSHOT_TYPE:
        snapshot_epoch, state_epoch, leader_epoch, start, created, written = r.unpack(
            struct.Struct(">iiiqqq")
        )
        batches = _read_batches(r)
        _skip_tags(r, tags)
        r.end()
        return ShareSnapshot(
            share_key,
            snapshot_epoch,
            state_epoch,
            leader_epoch,
            start,
            _delivery_complete_count(tags),
            created,
            written,
            batches,
        )
    snapshot_epoch, leader_epoch, start = r.unpack(struct.Struct(">iiq"))
    batches = _read_batches(r)
    _skip_tags(r, tags)
    r.end()
    return ShareUpdate(
        share_key, snapshot_epoch, leader_epoch, start, _delivery_complete_count(tags), batches
    )


def _delivery_complete_count(tags: dict[int, bytes]) -> int:
    raw = tags.get(0)
    if raw is None:
        return -1
    if len(raw) != 4:
        raise PeerError("__share_group_state value: DeliveryCompleteCount is not 4 bytes")
    (count,) = _I32.unpack(raw)
    return int(count)
