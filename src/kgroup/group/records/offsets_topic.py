"""The records of Kafka's ``__consumer_offsets`` topic as a reader of the topic sees them.

:func:`decode_offsets_record` turns one record's key and value (``None``: a tombstone) into what it
says about a group, for every record type a Kafka 4.x coordinator writes about consumer groups:

* ``GroupMetadataKey`` (type 2) / ``GroupMetadataValue`` v0–v4: a classic group's whole state after a
  completed rebalance (:class:`GroupMetadata`; Kafka 4.x writes v3). A tombstone: the group is gone.
* ``OffsetCommitKey`` (types 0 and 1) / ``OffsetCommitValue`` v0–v4: one committed offset
  (:class:`OffsetCommit`; Kafka 4.4 writes v4, with the topic id as a tagged field, and v1 when the
  commit carries an expiry). A tombstone: the offset was deleted or expired.
* The consumer group's (KIP-848) records, types 3, 5, 6, 7, 8 and 16, decoded by
  :mod:`kgroup.group.records.consumer_serde`.

Other record types (share and streams groups, the retired ``ConsumerGroupPartitionMetadata``) decode
to :class:`OtherRecord`: a reader skips them. :func:`encode_group_metadata_value` writes a
``GroupMetadataValue`` as Kafka's generated serializer does. Corrupt bytes raise
:class:`~kgroup.model.PeerError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kgroup.group.records.consumer import ConsumerGroupRecord
from kgroup.group.records.consumer_serde import CONSUMER_GROUP_RECORD_TYPES, decode_consumer_group_record
from kgroup.group.records.primitives import Reader
from kgroup.model import PeerError, TopicPartition
from kgroup.wire.varint import encode_uvarint

__all__ = [
    "GROUP_METADATA_TYPE",
    "GroupMetadata",
    "GroupMetadataMember",
    "OffsetCommit",
    "OffsetsTopicRecord",
    "OtherRecord",
    "decode_offsets_record",
    "encode_group_metadata_value",
    "record_group_id",
]

GROUP_METADATA_TYPE = 2
_OFFSET_COMMIT_TYPES = (0, 1)
_CONSUMER_GROUP_TYPES = frozenset(CONSUMER_GROUP_RECORD_TYPES.values())

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class GroupMetadataMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A classic group as Kafka stored it; ``value`` ``None`` is the group's tombstone."""

    group_id: str
    value: GroupMetadataValue | None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int  # -1 before v2
    members: tuple[GroupMetadataMember, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One committed offset; ``offset`` ``None`` is a tombstone (the offset was deleted)."""

    group_id: str
    partition: TopicPartition
    offset: int | None
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class OtherRecord:
    """A record type this reader does not follow (share or streams groups, retired types)."""

    record_type: int


OffsetsTopicRecord = GroupMetadata | OffsetCommit | ConsumerGroupRecord | OtherRecord


def _string(r: Reader, flexible: bool, nullable: bool = False) -> str | None:
    """A string of a schema whose later versions are flexible (compact) and earlier ones are not."""
    value = r.compact_nullable_string() if flexible else r.nullable_string()
    if value is None and not nullable:
        raise PeerError(f"{r.what}: a null string where Kafka's schema allows none")
    return value


def _text(r: Reader, flexible: bool) -> str:
    value = _string(r, flexible)
    assert value is not None
    return value


def _raw(r: Reader, flexible: bool) -> bytes:
    return r.compact_bytes() if flexible else r.raw()


def _array_length(r: Reader, flexible: bool) -> int:
    if flexible:
        n = r.compact_length()
        if n is None:
            raise PeerError(f"{r.what}: a null array where Kafka's schema allows none")
        return n
    n = r.i32()
    if n < 0 or n > len(r.data) - r.pos:
        raise PeerError(f"{r.what}: an array of {n} items cannot fit the record")
    return n


def record_group_id(key: bytes) -> str | None:
    """The group a record's key names (every group record's key starts with it after the type);
    ``None`` for keys of other coordinators' or unknown types."""
    r = Reader(bytes(key), "record key")
    kind = r.i16()
    if kind in _OFFSET_COMMIT_TYPES or kind == GROUP_METADATA_TYPE or kind in _CONSUMER_GROUP_TYPES:
        return _text(r, False)
    return None


def _group_metadata_value(value: bytes) -> GroupMetadataValue:
    r = Reader(bytes(value), "group metadata value")
    version = r.i16()
    if not 0 <= version <= 4:
        raise PeerError(f"group metadata value: unsupported version {version}; Kafka writes 0-4")
    flex = version >= 4
    protocol_type = _text(r, flex)
    generation = r.i32()
    protocol = _string(r, flex, nullable=True)
    leader = _string(r, flex, nullable=True)
    current_state_timestamp = r.i64() if version >= 2 else -1
    members = []
    for _ in range(_array_length(r, flex)):
        member_id = _text(r, flex)
        instance_id = _string(r, flex, nullable=True) if version >= 3 else None
        client_id = _text(r, flex)
        client_host = _text(r, flex)
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        subscription = _raw(r, flex)
        assignment = _raw(r, flex)
        if flex:
            r.tagged({})
        members.append(
            GroupMetadataMember(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    if flex:
        r.tagged({})
    r.end()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )


def _offset_commit(group_id: str, r: Reader, value: bytes | None) -> OffsetCommit:
    topic = _text(r, False)
    partition = r.i32()
    r.end()
    tp = TopicPartition(topic, partition)
    if value is None:
        return OffsetCommit(group_id, tp, None)
    v = Reader(bytes(value), "offset commit value")
    version = v.i16()
    if not 0 <= version <= 4:
        raise PeerError(f"offset commit value: unsupported version {version}; Kafka writes 0-4")
    flex = version >= 4
    offset = v.i64()
    leader_epoch = v.i32() if version >= 3 else -1
    metadata = _text(v, flex)
    commit_timestamp = v.i64()
    if version == 1:
        v.i64()  # the expire timestamp
    if flex:
        v.tagged({})  # the topic id (tag 0)
    v.end()
    return OffsetCommit(group_id, tp, offset, leader_epoch, metadata, commit_timestamp)


def decode_offsets_record(key: bytes, value: bytes | None) -> OffsetsTopicRecord:
    """What one ``__consumer_offsets`` record says (:class:`PeerError` when its bytes are corrupt)."""
    key = bytes(key)
    r = Reader(key, "record key")
    kind = r.i16()
    if kind in _OFFSET_COMMIT_TYPES:
        return _offset_commit(_text(r, False), r, value)
    if kind == GROUP_METADATA_TYPE:
        group_id = _text(r, False)
        r.end()
        return GroupMetadata(group_id, None if value is None else _group_metadata_value(value))
    if kind in _CONSUMER_GROUP_TYPES:
        return decode_consumer_group_record(key, value)
    return OtherRecord(kind)


def encode_group_metadata_value(value: GroupMetadataValue, version: int = 3) -> bytes:
    """``GroupMetadataValue`` at ``version`` (0–4) as Kafka serializes it (Kafka 4.x writes 3)."""
    if not 0 <= version <= 4:
        raise ValueError(f"version: GroupMetadataValue has versions 0-4, not {version}")
    flex = version >= 4
    out = bytearray(_I16.pack(version))

    def string(s: str | None) -> None:
        if s is None:
            out.extend(encode_uvarint(0) if flex else _I16.pack(-1))
            return
        raw = s.encode("utf-8")
        out.extend(encode_uvarint(len(raw) + 1) if flex else _I16.pack(len(raw)))
        out.extend(raw)

    def raw(b: bytes) -> None:
        out.extend(encode_uvarint(len(b) + 1) if flex else _I32.pack(len(b)))
        out.extend(b)

    string(value.protocol_type)
    out.extend(_I32.pack(value.generation))
    string(value.protocol)
    string(value.leader)
    if version >= 2:
        out.extend(_I64.pack(value.current_state_timestamp_ms))
    out.extend(encode_uvarint(len(value.members) + 1) if flex else _I32.pack(len(value.members)))
    for m in value.members:
        string(m.member_id)
        if version >= 3:
            string(m.group_instance_id)
        string(m.client_id)
        string(m.client_host)
        if version >= 1:
            out.extend(_I32.pack(m.rebalance_timeout_ms))
        out.extend(_I32.pack(m.session_timeout_ms))
        raw(m.subscription)
        raw(m.assignment)
        if flex:
            out.append(0)
    if flex:
        out.append(0)
    return bytes(out)
