"""The coordinator's records as bytes: what the broker appends to its group log and replays on start.

``encode_record(record) -> (key, value)`` and ``decode_record(key, value) -> record``; a ``None`` value
is a tombstone. The layouts are big-endian with Kafka's primitive encodings (int16-length strings,
``-1`` for null; int32-length bytes; int32-count arrays):

* :class:`~kgroup.group.OffsetCommitted` is Kafka's own ``__consumer_offsets`` record, byte for byte
  what Kafka 4.0 writes: ``OffsetCommitKey`` v1 (group, topic, partition) and ``OffsetCommitValue`` v3
  (offset, leader epoch, metadata, commit timestamp). Decoding also reads key v0 and values v0–v3
  (v1's expire timestamp is read and dropped; v0–v2 have no leader epoch: -1).
* :class:`~kgroup.group.GroupDeleted` is Kafka's group tombstone: ``GroupMetadataKey`` v2 with no value.
* The consumer group's (KIP-848) records are Kafka's own ``ConsumerGroup*`` records (types 3, 5, 6, 7,
  8 and 16), byte for byte what Kafka 4.4 writes: :mod:`kgroup.group.records.consumer_serde`. Like
  Kafka's, they are upserts and tombstones keyed by what they describe.
* The share group's (KIP-932) records are Kafka's own ``ShareGroup*`` records (types 10–15), byte for
  byte what Kafka 4.4 writes: :mod:`kgroup.group.records.share_serde`.
* Every other record is kgroup's own (Kafka persists only a whole-group ``GroupMetadataValue`` per
  completed rebalance; kgroup's log is a finer-grained superset, see ``docs/coordinator.md``). Its key
  starts with key version :data:`KGROUP_KEY_VERSION` (1000: Kafka's record keys use 0–15, so the two
  never collide), then an int16 record type and the group id; its value starts with an int16 value
  version (:data:`KGROUP_VALUE_VERSION`, 0) and then the record's fields in declaration order.

kgroup's classic-group records are deltas, applied in order: a log of them must be replayed whole,
never compacted by key. Corrupt bytes (short, trailing garbage, unknown versions or types, bad UTF-8) raise
:class:`~kgroup.model.PeerError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TypeVar

from kgroup.group.records import (
    ClassicGroupMember,
    GenerationStarted,
    GroupCreated,
    GroupDeleted,
    GroupLeaderChanged,
    GroupProtocolTypeChanged,
    GroupRestored,
    GroupStateChanged,
    InitialDelayUpdated,
    MemberRemoved,
    MemberUpserted,
    OffsetAndMetadata,
    OffsetCommitted,
    Parked,
    PendingMemberAdded,
    PendingMemberRemoved,
    PendingSyncMemberRemoved,
    PendingSyncMembersSet,
    Record,
    StaticMemberReplaced,
    TimerArmed,
    TimerDisarmed,
    TxnOffsetCommitted,
    TxnOffsetsEnded,
)
from kgroup.group.records.consumer import ConsumerGroupRecord
from kgroup.group.records.consumer_serde import (
    CONSUMER_GROUP_RECORD_TYPES,
    decode_consumer_group_record,
    encode_consumer_group_record,
)
from kgroup.group.records.primitives import I16, I32, MAX_STRING_BYTES, Reader, Writer
from kgroup.group.records.share import ShareGroupRecord
from kgroup.group.records.share_serde import (
    SHARE_GROUP_RECORD_TYPES,
    decode_share_group_record,
    encode_share_group_record,
)
from kgroup.group.states import GroupState
from kgroup.group.timers import TimerKey
from kgroup.messages import JoinGroupProtocol
from kgroup.model import PeerError, TopicPartition
from kgroup.wire.record_batch import HEADER_SIZE, record_size
from kgroup.wire.varint import uvarint_size

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "KGROUP_KEY_VERSION",
    "KGROUP_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION",
    "decode_record",
    "encode_record",
    "offset_commit_batch_bytes",
]

#: ``OffsetCommitKey`` version Kafka 4.0 writes (v0 is read too)
OFFSET_COMMIT_KEY_VERSION = 1
#: ``OffsetCommitValue`` version Kafka 4.0 writes without an expire timestamp
OFFSET_COMMIT_VALUE_VERSION = 3
#: ``GroupMetadataKey``'s only version
GROUP_METADATA_KEY_VERSION = 2
#: the key version of kgroup's own records (Kafka's keys use 0–15)
KGROUP_KEY_VERSION = 1000
#: the value version of kgroup's own records
KGROUP_VALUE_VERSION = 0
#: the first two bytes of every OffsetCommitKey kgroup writes
_OFFSET_COMMIT_KEY_V1 = I16.pack(OFFSET_COMMIT_KEY_VERSION)


T = TypeVar("T")


# --- kgroup's own records ------------------------------------------------------------------------------

# record type numbers: stable, never reused (a new field means a new value version)
_TYPES: dict[type, int] = {
    GroupCreated: 1,
    GroupStateChanged: 2,
    GenerationStarted: 3,
    GroupLeaderChanged: 4,
    GroupProtocolTypeChanged: 5,
    MemberUpserted: 6,
    MemberRemoved: 7,
    StaticMemberReplaced: 8,
    PendingMemberAdded: 9,
    PendingMemberRemoved: 10,
    PendingSyncMembersSet: 11,
    PendingSyncMemberRemoved: 12,
    InitialDelayUpdated: 13,
    TimerArmed: 14,
    TimerDisarmed: 15,
    GroupRestored: 16,
    TxnOffsetCommitted: 17,
    TxnOffsetsEnded: 18,
}
_STATES = {state.kafka_name: state for state in GroupState}
_CONSUMER_GROUP_KEY_VERSIONS = frozenset(CONSUMER_GROUP_RECORD_TYPES.values())
_SHARE_GROUP_KEY_VERSIONS = frozenset(SHARE_GROUP_RECORD_TYPES.values())


def _write_parked(w: Writer, parked: Parked | None) -> None:
    w.boolean(parked is not None)
    if parked is not None:
        w.string(parked.connection)
        w.i32(parked.correlation_id)


def _read_parked(r: Reader) -> Parked | None:
    if not r.boolean():
        return None
    return Parked(r.string(), r.i32())


def _write_member(w: Writer, m: ClassicGroupMember) -> None:
    w.string(m.member_id)
    w.string(m.group_instance_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.i32(m.rebalance_timeout_ms)
    w.i32(m.session_timeout_ms)
    w.string(m.protocol_type)
    w.i32(len(m.protocols))
    for protocol in m.protocols:
        w.string(protocol.name)
        w.raw(protocol.metadata)
    w.raw(m.assignment)
    _write_parked(w, m.awaiting_join)
    _write_parked(w, m.awaiting_sync)
    w.boolean(m.is_new)


def _read_member(r: Reader) -> ClassicGroupMember:
    return ClassicGroupMember(
        member_id=r.string(),
        group_instance_id=r.nullable_string(),
        client_id=r.string(),
        client_host=r.string(),
        rebalance_timeout_ms=r.i32(),
        session_timeout_ms=r.i32(),
        protocol_type=r.string(),
        protocols=r.array(lambda: JoinGroupProtocol(r.string(), r.raw())),
        assignment=r.raw(),
        awaiting_join=_read_parked(r),
        awaiting_sync=_read_parked(r),
        is_new=r.boolean(),
    )


def _write_restored(w: Writer, g: GroupRestored) -> None:
    w.string(g.state.kafka_name)
    w.string(g.previous_state.kafka_name)
    w.i64(g.state_timestamp_ms)
    w.i32(g.generation)
    w.string(g.protocol_type)
    w.string(g.protocol_name)
    w.string(g.leader)
    w.i32(len(g.members))
    for member in g.members:
        _write_member(w, member)
    w.i32(g.member_capacity)
    w.strings(g.pending_join)
    w.strings(g.pending_sync)
    w.boolean(g.new_member_added)
    w.optional_i64(None if g.initial_delay is None else g.initial_delay[0])
    w.optional_i64(None if g.initial_delay is None else g.initial_delay[1])


def _state(r: Reader) -> GroupState:
    name = r.string()
    state = _STATES.get(name)
    if state is None:
        raise PeerError(f"{r.what}: unknown group state {name!r}")
    return state


def _read_restored(group_id: str, r: Reader) -> GroupRestored:
    state, previous_state, timestamp = _state(r), _state(r), r.i64()
    generation = r.i32()
    protocol_type, protocol_name, leader = r.nullable_string(), r.nullable_string(), r.nullable_string()
    members = r.array(lambda: _read_member(r))
    capacity = r.i32()
    pending_join, pending_sync = r.array(r.string), r.array(r.string)
    new_member_added = r.boolean()
    delay, remaining = r.optional_i64(), r.optional_i64()
    return GroupRestored(
        group_id,
        state,
        previous_state,
        timestamp,
        generation,
        protocol_type,
        protocol_name,
        leader,
        members,
        capacity,
        pending_join,
        pending_sync,
        new_member_added,
        None if delay is None or remaining is None else (delay, remaining),
    )


def _timer_key(r: Reader) -> TimerKey:
    parts = r.array(r.string)
    key = TimerKey.from_parts(parts)
    if key is None:
        raise PeerError(f"{r.what}: unknown timer key {parts!r}")
    return key


def _write_kgroup_value(w: Writer, record: Record) -> None:
    if isinstance(record, GroupCreated):
        w.i64(record.timestamp_ms)
    elif isinstance(record, GroupStateChanged):
        w.string(record.state.kafka_name)
        w.i64(record.timestamp_ms)
    elif isinstance(record, GenerationStarted):
        w.i32(record.generation)
        w.string(record.protocol_name)
    elif isinstance(record, GroupLeaderChanged):
        w.string(record.leader)
    elif isinstance(record, GroupProtocolTypeChanged):
        w.string(record.protocol_type)
    elif isinstance(record, MemberUpserted):
        _write_member(w, record.member)
    elif isinstance(record, StaticMemberReplaced):
        w.string(record.old_member_id)
        _write_member(w, record.member)
    elif isinstance(
        record, (MemberRemoved, PendingMemberAdded, PendingMemberRemoved, PendingSyncMemberRemoved)
    ):
        w.string(record.member_id)
    elif isinstance(record, PendingSyncMembersSet):
        w.strings(record.member_ids)
    elif isinstance(record, InitialDelayUpdated):
        w.boolean(record.new_member_added)
        w.optional_i64(record.delay_ms)
        w.optional_i64(record.remaining_ms)
    elif isinstance(record, TimerArmed):
        w.strings(record.key.parts())
        w.i64(record.deadline_ms)
    elif isinstance(record, TimerDisarmed):
        w.strings(record.key.parts())
    elif isinstance(record, GroupRestored):
        _write_restored(w, record)
    elif isinstance(record, TxnOffsetCommitted):
        w.i64(record.producer_id)
        w.i16(record.producer_epoch)
        w.string(record.partition.topic)
        w.i32(record.partition.partition)
        value = record.value
        w.i64(value.offset)
        w.i32(value.leader_epoch)
        w.string(value.metadata)
        w.i64(value.commit_timestamp_ms)
    elif isinstance(record, TxnOffsetsEnded):
        w.i64(record.producer_id)
        w.boolean(record.committed)
    else:  # pragma: no cover - _TYPES and this chain list the same records
        raise AssertionError(f"no kgroup layout for {type(record).__name__}")


def _read_kgroup_value(kind: int, group_id: str, r: Reader) -> Record:
    if kind == 1:
        return GroupCreated(group_id, r.i64())
    if kind == 2:
        name = r.string()
        state = _STATES.get(name)
        if state is None:
            raise PeerError(f"{r.what}: unknown group state {name!r}")
        return GroupStateChanged(group_id, state, r.i64())
    if kind == 3:
        return GenerationStarted(group_id, r.i32(), r.nullable_string())
    if kind == 4:
        return GroupLeaderChanged(group_id, r.nullable_string())
    if kind == 5:
        return GroupProtocolTypeChanged(group_id, r.nullable_string())
    if kind == 6:
        return MemberUpserted(group_id, _read_member(r))
    if kind == 7:
        return MemberRemoved(group_id, r.string())
    if kind == 8:
        return StaticMemberReplaced(group_id, r.string(), _read_member(r))
    if kind == 9:
        return PendingMemberAdded(group_id, r.string())
    if kind == 10:
        return PendingMemberRemoved(group_id, r.string())
    if kind == 11:
        return PendingSyncMembersSet(group_id, r.array(r.string))
    if kind == 12:
        return PendingSyncMemberRemoved(group_id, r.string())
    if kind == 13:
        return InitialDelayUpdated(group_id, r.boolean(), r.optional_i64(), r.optional_i64())
    if kind == 14:
        return TimerArmed(_timer_key(r), r.i64())
    if kind == 15:
        return TimerDisarmed(_timer_key(r))
    if kind == 16:
        return _read_restored(group_id, r)
    if kind == 17:
        producer_id, epoch, topic, partition = r.i64(), r.i16(), r.string(), r.i32()
        value = OffsetAndMetadata(r.i64(), r.i32(), r.nullable_string(), r.i64())
        return TxnOffsetCommitted(group_id, producer_id, epoch, TopicPartition(topic, partition), value)
    if kind == 18:
        return TxnOffsetsEnded(group_id, r.i64(), r.boolean())
    raise PeerError(f"{r.what}: unknown kgroup record type {kind}")


# --- the two entry points ------------------------------------------------------------------------------


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    """The record's key and value bytes (``None``: a tombstone)."""
    if isinstance(record, OffsetCommitted):  # the bulk of any log: packed whole, not field by field
        return _encode_offset_commit(record)
    key = Writer()
    if isinstance(record, ConsumerGroupRecord):
        return encode_consumer_group_record(record)
    if isinstance(record, ShareGroupRecord):
        return encode_share_group_record(record)
    if isinstance(record, GroupDeleted):
        key.i16(GROUP_METADATA_KEY_VERSION)
        key.string(record.group_id)
        return key.bytes(), None
    kind = _TYPES.get(type(record))
    if kind is None:
        raise TypeError(f"record: {type(record).__name__} is not a coordinator record")
    key.i16(KGROUP_KEY_VERSION)
    key.i16(kind)
    key.string(record.group_id)
    value = Writer()
    value.i16(KGROUP_VALUE_VERSION)
    _write_kgroup_value(value, record)
    return key.bytes(), value.bytes()


#: OffsetCommitValue v3 up to its metadata's bytes: version, offset, leader epoch, metadata length
_OFFSET_VALUE_HEAD = struct.Struct(">hqih")
_I64 = struct.Struct(">q")


def _utf8(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > MAX_STRING_BYTES:
        raise ValueError(f"string of {len(data)} bytes is longer than Kafka's {MAX_STRING_BYTES}")
    return data


def _encode_offset_commit(record: OffsetCommitted) -> tuple[bytes, bytes]:
    """OffsetCommitKey v1 and OffsetCommitValue v3 (the same bytes ``Writer`` would make, in one join;
    out-of-range numbers raise ``struct.error`` as the field-by-field writer does)."""
    group = _utf8(record.group_id)
    topic = _utf8(record.partition.topic)
    v = record.value
    metadata = _utf8(v.metadata if v.metadata is not None else "")  # Kafka's metadata is never null
    key = b"".join(
        (
            _OFFSET_COMMIT_KEY_V1,
            I16.pack(len(group)),
            group,
            I16.pack(len(topic)),
            topic,
            I32.pack(record.partition.partition),
        )
    )
    value = b"".join(
        (
            _OFFSET_VALUE_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, v.offset, v.leader_epoch, len(metadata)),
            metadata,
            _I64.pack(v.commit_timestamp_ms),
        )
    )
    return key, value


def _decode_offset_commit_v1_v3(key: bytes, value: bytes) -> OffsetCommitted | None:
    """The record of a well-formed OffsetCommitKey v1 / OffsetCommitValue v3 pair (what kgroup
    writes), read in a few unpacks; ``None`` for anything else, which the field-by-field reader then
    decodes or refuses with its exact error."""
    try:
        group_end = 4 + I16.unpack_from(key, 2)[0]
        topic_end = group_end + 2 + I16.unpack_from(key, group_end)[0]
        version, offset, leader_epoch, metadata_length = _OFFSET_VALUE_HEAD.unpack_from(value, 0)
        metadata_end = 16 + metadata_length
        if (
            group_end < 4
            or topic_end < group_end + 2
            or topic_end + 4 != len(key)
            or version != OFFSET_COMMIT_VALUE_VERSION
            or metadata_length < 0
            or metadata_end + 8 != len(value)
        ):
            return None
        return OffsetCommitted(
            str(key[4:group_end], "utf-8"),
            TopicPartition(str(key[group_end + 2 : topic_end], "utf-8"), I32.unpack_from(key, topic_end)[0]),
            OffsetAndMetadata(
                offset,
                leader_epoch,
                str(value[16:metadata_end], "utf-8"),
                _I64.unpack_from(value, metadata_end)[0],
            ),
        )
    except (struct.error, UnicodeDecodeError):
        return None


def _decode_offset_commit(key: Reader, value: bytes | None) -> Record:
    group_id = key.string()
    topic = key.string()
    partition = key.i32()
    key.end()
    if value is None:
        raise PeerError("record key: an offset commit tombstone (offset deletion) is not a kgroup record")
    r = Reader(value, "offset commit value")
    version = r.i16()
    if not 0 <= version <= 3:
        raise PeerError(f"offset commit value: unsupported version {version}; kgroup reads 0-3")
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.i64()
    if version == 1:
        r.i64()  # the expire timestamp, which Kafka 4.0 no longer honours
    r.end()
    return OffsetCommitted(
        group_id,
        TopicPartition(topic, partition),
        OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp),
    )


def decode_record(key: bytes, value: bytes | None) -> Record:
    """The record ``encode_record`` made of these bytes (:class:`PeerError` when they are corrupt)."""
    if key[:2] == _OFFSET_COMMIT_KEY_V1 and value is not None:
        fast = _decode_offset_commit_v1_v3(key, value)
        if fast is not None:
            return fast
    k = Reader(key, "record key")
    version = k.i16()
    if version in (0, OFFSET_COMMIT_KEY_VERSION):
        return _decode_offset_commit(k, value)
    if version == GROUP_METADATA_KEY_VERSION:
        group_id = k.string()
        k.end()
        if value is not None:
            raise PeerError(
                "record value: a group metadata value is not a kgroup record (only its tombstone is)"
            )
        return GroupDeleted(group_id)
    if version in _CONSUMER_GROUP_KEY_VERSIONS:
        return decode_consumer_group_record(key, value)
    if version in _SHARE_GROUP_KEY_VERSIONS:
        return decode_share_group_record(key, value)
    if version != KGROUP_KEY_VERSION:
        raise PeerError(f"record key: unknown key version {version}")
    kind = k.i16()
    group_id = k.string()
    k.end()
    if value is None:
        raise PeerError(f"record value: kgroup record type {kind} has no tombstone")
    r = Reader(value, f"kgroup record type {kind}")
    value_version = r.i16()
    if value_version != KGROUP_VALUE_VERSION:
        raise PeerError(f"{r.what}: unknown value version {value_version}")
    record = _read_kgroup_value(kind, group_id, r)
    r.end()
    return record


# --- what Kafka's coordinator would write: the size of a commit's batch --------------------------------

#: the tagged topic id Kafka 4.4 writes into ``OffsetCommitValue`` v4: field count, tag, size, uuid
_TOPIC_ID_TAG_BYTES = 1 + 1 + 1 + 16


def offset_commit_batch_bytes(
    group_id: str, commits: Iterable[tuple[str, str]], *, stop_above: int | None = None
) -> int:
    """The size Kafka 4.4's coordinator estimates for the batch of a commit's offset records.

    ``commits`` are (topic, metadata) of the offsets that will be written, in order. Each record is
    ``OffsetCommitKey`` v1 and ``OffsetCommitValue`` v4 (v3's fields with a compact metadata string and
    the topic id as a tagged field), sized as ``DefaultRecordBatch.sizeInBytes`` sizes a batch
    (timestamp delta 0, no headers). ``CoordinatorRuntime`` refuses a write whose estimate exceeds
    the offsets topic's ``max.message.bytes`` with ``RecordTooLargeException`` before it changes any
    state, and the commit is answered UNKNOWN_SERVER_ERROR. With ``stop_above`` the sum stops as
    soon as it exceeds that many bytes (a commit of millions of offsets is sized in constant time).
    """
    group_bytes = len(group_id.encode("utf-8"))
    total = HEADER_SIZE
    topic_sizes: dict[str, int] = {}
    for delta, (topic, metadata) in enumerate(commits):
        topic_bytes = topic_sizes.get(topic)
        if topic_bytes is None:
            topic_bytes = topic_sizes[topic] = len(topic.encode("utf-8"))
        key_size = 2 + 2 + group_bytes + 2 + topic_bytes + 4
        metadata_bytes = len(metadata.encode("utf-8")) if metadata else 0
        value_size = 2 + 8 + 4 + uvarint_size(metadata_bytes + 1) + metadata_bytes + 8 + _TOPIC_ID_TAG_BYTES
        total += record_size(delta, key_size, value_size)
        if stop_above is not None and total > stop_above:
            return total
    return total
