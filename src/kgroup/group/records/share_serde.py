"""The share group's (KIP-932) coordinator records as Kafka 4.4 writes them to ``__consumer_offsets``.

Six of Kafka's record types, framed as ``GroupCoordinatorRecordSerde`` frames them (see
:mod:`kgroup.group.records.consumer_serde`): the int16 record type and the version-0 ``*Key``
(int16-length strings); the int16 value version (0) and the flexible version-0 ``*Value``.

=====  ======================================  ==============================================
type   record                                  tagged field (tag 0) and when Kafka writes it
=====  ======================================  ==============================================
10     ShareGroupMemberMetadata                none
11     ShareGroupMetadata                      none (``MetadataHash`` is a plain int64 here)
12     ShareGroupTargetAssignmentMetadata      ``AssignmentTimestamp``: when not 0
13     ShareGroupTargetAssignmentMember        none
14     ShareGroupCurrentMemberAssignment       none
15     ShareGroupStatePartitionMetadata        none
=====  ======================================  ==============================================

Corrupt bytes raise :class:`~kgroup.model.PeerError`; an unknown tag is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.group.records.consumer import TargetAssignmentMetadataValue
from kgroup.group.records.keyed import decode_keyed_record, encode_keyed_record
from kgroup.group.records.primitives import I64, Reader, Writer
from kgroup.group.records.share import (
    ShareCurrentAssignmentValue,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupRecord,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    ShareMemberMetadataValue,
    SharePartitionsInfo,
    ShareStatePartitionValue,
)
from kgroup.model import TopicId

__all__ = ["SHARE_GROUP_RECORD_TYPES", "decode_share_group_record", "encode_share_group_record"]

#: Kafka's record type (``CoordinatorRecordType``, the key's int16 prefix) of each record
SHARE_GROUP_RECORD_TYPES: dict[type, int] = {
    ShareGroupMemberMetadata: 10,
    ShareGroupMetadata: 11,
    ShareGroupTargetAssignmentMetadata: 12,
    ShareGroupTargetAssignmentMember: 13,
    ShareGroupCurrentMemberAssignment: 14,
    ShareGroupStatePartitionMetadata: 15,
}
_VALUE_VERSION = 0
#: how many strings each type's key holds after the type: the group id, then the member id
_KEY_STRINGS = {10: 2, 11: 1, 12: 1, 13: 2, 14: 2, 15: 1}


def _no_tags(w: Writer) -> None:
    w.uvarint(0)


def _write_assignment(w: Writer, assignment: Mapping[TopicId, Sequence[int]]) -> None:
    w.uvarint(len(assignment) + 1)
    for topic_id, partitions in assignment.items():
        w.uuid(topic_id)
        w.int32s(list(partitions))
        _no_tags(w)


def _read_assignment(r: Reader) -> dict[TopicId, tuple[int, ...]]:
    def item() -> tuple[TopicId, tuple[int, ...]]:
        topic_id, partitions = r.uuid(), r.int32s()
        r.tagged({})
        return topic_id, partitions

    return dict(r.compact_array(item))


def _write_infos(w: Writer, infos: tuple[SharePartitionsInfo, ...]) -> None:
    w.uvarint(len(infos) + 1)
    for info in infos:
        w.uuid(info.topic_id)
        w.compact_string(info.topic_name)
        w.int32s(list(info.partitions))
        _no_tags(w)


def _read_infos(r: Reader) -> tuple[SharePartitionsInfo, ...]:
    def item() -> SharePartitionsInfo:
        topic_id, name, partitions = r.uuid(), r.compact_string(), r.int32s()
        r.tagged({})
        return SharePartitionsInfo(topic_id, name, partitions)

    return r.compact_array(item)


def _write_value(w: Writer, record: ShareGroupRecord) -> None:
    if isinstance(record, ShareGroupMemberMetadata):
        m = record.value
        assert m is not None
        w.compact_string(m.rack_id)
        w.compact_string(m.client_id)
        w.compact_string(m.client_host)
        w.compact_strings(m.subscribed_topic_names)
    elif isinstance(record, ShareGroupMetadata):
        assert record.value is not None
        epoch, metadata_hash = record.value
        w.i32(epoch)
        w.i64(metadata_hash)
    elif isinstance(record, ShareGroupTargetAssignmentMetadata):
        assert record.value is not None
        w.i32(record.value.assignment_epoch)
        timestamp = record.value.assignment_timestamp_ms
        if timestamp != 0:
            w.uvarint(1)
            w.tag(0, I64.pack(timestamp))
            return
    elif isinstance(record, ShareGroupTargetAssignmentMember):
        assert record.value is not None
        _write_assignment(w, record.value)
    elif isinstance(record, ShareGroupCurrentMemberAssignment):
        c = record.value
        assert c is not None
        w.i32(c.member_epoch)
        w.i32(c.previous_member_epoch)
        w.i8(c.state)
        _write_assignment(w, c.assigned_partitions)
    else:
        s = record.value
        assert s is not None
        _write_infos(w, s.initializing)
        _write_infos(w, s.initialized)
        w.uvarint(len(s.deleting) + 1)
        for topic_id, name in s.deleting:
            w.uuid(topic_id)
            w.compact_string(name)
            _no_tags(w)
    _no_tags(w)


def _read_value(kind: int, key: tuple[str, ...], r: Reader) -> ShareGroupRecord:
    group_id = key[0]
    record: ShareGroupRecord
    if kind == 10:
        rack = r.compact_nullable_string()
        client_id, client_host = r.compact_string(), r.compact_string()
        names = r.compact_array(r.compact_string)
        record = ShareGroupMemberMetadata(
            group_id, key[1], ShareMemberMetadataValue(rack, client_id, client_host, names)
        )
    elif kind == 11:
        epoch, metadata_hash = r.i32(), r.i64()
        record = ShareGroupMetadata(group_id, (epoch, metadata_hash))
    elif kind == 12:
        epoch = r.i32()
        timestamp = [0]

        def read_timestamp(t: Reader) -> None:
            timestamp[0] = t.i64()

        r.tagged({0: read_timestamp})
        return ShareGroupTargetAssignmentMetadata(
            group_id, TargetAssignmentMetadataValue(epoch, timestamp[0])
        )
    elif kind == 13:
        record = ShareGroupTargetAssignmentMember(group_id, key[1], _read_assignment(r))
    elif kind == 14:
        member_epoch, previous, state = r.i32(), r.i32(), r.i8()
        record = ShareGroupCurrentMemberAssignment(
            group_id, key[1], ShareCurrentAssignmentValue(member_epoch, previous, state, _read_assignment(r))
        )
    else:
        initializing, initialized = _read_infos(r), _read_infos(r)

        def deleting_item() -> tuple[TopicId, str]:
            topic_id, name = r.uuid(), r.compact_string()
            r.tagged({})
            return topic_id, name

        deleting = r.compact_array(deleting_item)
        record = ShareGroupStatePartitionMetadata(
            group_id, ShareStatePartitionValue(initializing, initialized, deleting)
        )
    r.tagged({})
    return record


def _tombstone(kind: int, key: tuple[str, ...]) -> ShareGroupRecord:
    group_id = key[0]
    if kind == 10:
        return ShareGroupMemberMetadata(group_id, key[1], None)
    if kind == 11:
        return ShareGroupMetadata(group_id, None)
    if kind == 12:
        return ShareGroupTargetAssignmentMetadata(group_id, None)
    if kind == 13:
        return ShareGroupTargetAssignmentMember(group_id, key[1], None)
    if kind == 14:
        return ShareGroupCurrentMemberAssignment(group_id, key[1], None)
    return ShareGroupStatePartitionMetadata(group_id, None)


def encode_share_group_record(record: ShareGroupRecord) -> tuple[bytes, bytes | None]:
    """The key and value bytes Kafka 4.4 writes for ``record`` (``None``: a tombstone)."""
    kind = SHARE_GROUP_RECORD_TYPES[type(record)]
    strings: tuple[str, ...] = (record.group_id,)
    if _KEY_STRINGS[kind] == 2:
        strings += (record.member_id,)  # type: ignore[union-attr]
    return encode_keyed_record(kind, strings, _VALUE_VERSION, record, _write_value)


def decode_share_group_record(key: bytes, value: bytes | None) -> ShareGroupRecord:
    """The record of a key whose int16 type is one of :data:`SHARE_GROUP_RECORD_TYPES`' (and its
    value, ``None`` for a tombstone); :class:`PeerError` when the bytes are corrupt."""
    return decode_keyed_record(
        key,
        value,
        family="share group",
        key_string_counts=_KEY_STRINGS,
        value_version=_VALUE_VERSION,
        tombstone=_tombstone,
        read_value=_read_value,
    )
