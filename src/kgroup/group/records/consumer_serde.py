"""The consumer group's (KIP-848) coordinator records as Kafka 4.4 writes them to ``__consumer_offsets``.

Six of Kafka's record types, byte for byte as ``GroupCoordinatorRecordSerde`` frames them: the key is
the int16 record type then the ``*Key`` message at version 0 (not flexible: int16-length strings); the
value is the int16 value version (0) then the ``*Value`` message at version 0, which is flexible
(unsigned-varint lengths of compact strings, arrays and bytes, each one more than the length, ``0``
for null; a tagged-field section closing every struct); a tombstone has no value.

=====  ==========================================  =================================================
type   record                                      tagged field (tag 0) and when Kafka writes it
=====  ==========================================  =================================================
3      ConsumerGroupMetadata                       ``MetadataHash``: when not 0
5      ConsumerGroupMemberMetadata                 ``ClassicMemberMetadata``: see below
6      ConsumerGroupTargetAssignmentMetadata       ``AssignmentTimestamp``: when not 0
7      ConsumerGroupTargetAssignmentMember         none
8      ConsumerGroupCurrentMemberAssignment        ``TopicPartitions.AssignmentEpochs``: see below
16     ConsumerGroupRegularExpression              none
=====  ==========================================  =================================================

Kafka's generator omits a tagged field when it equals the field's *Java* default, and for a nullable
struct or array whose schema default is ``null`` that default is still the empty value: so a member
without classic metadata (every consumer-protocol member) carries the tag with a null marker (bytes
``00 01 00``), while a ``ClassicMemberMetadata`` of session timeout 0 and no protocols is left out,
and reads back as exactly that; an empty ``AssignmentEpochs`` list is left out and a topic whose
epochs are missing or of another length than its partitions reads every partition at
``max(member epoch, 0)``, as ``Utils.assignmentFromTopicPartitions`` does. The regular expression's
topics are written sorted as ``String.compareTo`` sorts them (``newConsumerGroupRegularExpressionRecord``);
every other list is written in the record's own order.

Corrupt bytes raise :class:`~kgroup.model.PeerError`; an unknown tag is skipped, as Kafka keeps it
aside unread. A value that cannot be written (a string longer than 32,767 UTF-8 bytes, an integer out
of its field's range) raises ``ValueError`` or ``struct.error``, as the module's other records do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kgroup.group.records.consumer import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    CurrentAssignmentValue,
    MemberAssignmentState,
    MemberMetadataValue,
    PartitionEpochs,
    ResolvedRegularExpression,
    TargetAssignmentMetadataValue,
    TopicAssignment,
)
from kgroup.group.records.keyed import decode_keyed_record, encode_keyed_record
from kgroup.group.records.primitives import I64, Reader, Writer
from kgroup.javacompat import java_string_key
from kgroup.messages import JoinGroupProtocol
from kgroup.model import TopicId

__all__ = [
    "CONSUMER_GROUP_RECORD_TYPES",
    "CONSUMER_GROUP_VALUE_VERSION",
    "decode_consumer_group_record",
    "encode_consumer_group_record",
]

#: Kafka's record type (``CoordinatorRecordType``, the key's int16 prefix) of each record
CONSUMER_GROUP_RECORD_TYPES: dict[type, int] = {
    ConsumerGroupMetadata: 3,
    ConsumerGroupMemberMetadata: 5,
    ConsumerGroupTargetAssignmentMetadata: 6,
    ConsumerGroupTargetAssignmentMember: 7,
    ConsumerGroupCurrentMemberAssignment: 8,
    ConsumerGroupRegularExpression: 16,
}
#: every value's only version
CONSUMER_GROUP_VALUE_VERSION = 0

_NO_CLASSIC = ClassicMemberMetadata(0, ())  # the generated class's default (its empty struct)

T = TypeVar("T")


def _tagged(w: Writer, fields: list[tuple[int, bytes]]) -> None:
    """A struct's tagged-field section: the count, then each (tag, bytes) in tag order."""
    w.uvarint(len(fields))
    for tag, body in fields:
        w.tag(tag, body)


def _int32s(values: list[int]) -> bytes:
    w = Writer()
    w.int32s(values)
    return w.bytes()


def _body(write: Callable[[Writer], None]) -> bytes:
    w = Writer()
    write(w)
    return w.bytes()


def _no_tags(r: Reader) -> None:
    r.tagged({})


# --- the values ------------------------------------------------------------------------------------


def _write_topic_partitions(w: Writer, assignment: TopicAssignment) -> None:
    w.uvarint(len(assignment) + 1)
    for topic_id, partitions in assignment.items():
        w.uuid(topic_id)
        w.int32s(partitions)
        _tagged(w, [])


def _read_topic_partitions(r: Reader) -> dict[TopicId, tuple[int, ...]]:
    def item() -> tuple[TopicId, tuple[int, ...]]:
        topic_id, partitions = r.uuid(), r.int32s()
        _no_tags(r)
        return topic_id, partitions

    return dict(r.compact_array(item))


def _write_epochs(w: Writer, assignment: PartitionEpochs) -> None:
    w.uvarint(len(assignment) + 1)
    for topic_id, epochs in assignment.items():
        w.uuid(topic_id)
        w.int32s(list(epochs.keys()))
        # the generated writer leaves out an empty list (the field's Java default), writes any other
        _tagged(w, [(0, _int32s(list(epochs.values())))] if epochs else [])


def _read_epochs(r: Reader, member_epoch: int) -> dict[TopicId, dict[int, int]]:
    default = max(member_epoch, 0)

    def item() -> tuple[TopicId, dict[int, int]]:
        topic_id, partitions = r.uuid(), r.int32s()
        epochs: list[tuple[int, ...] | None] = [()]

        def read_epochs(t: Reader) -> None:
            n = t.compact_length()
            epochs[0] = None if n is None else tuple(t.i32() for _ in range(n))

        r.tagged({0: read_epochs})
        found = epochs[0]
        if found is not None and len(found) == len(partitions):
            return topic_id, dict(zip(partitions, found, strict=True))
        return topic_id, dict.fromkeys(partitions, default)

    return dict(r.compact_array(item))


def _write_classic(w: Writer, classic: ClassicMemberMetadata) -> None:
    w.i32(classic.session_timeout_ms)
    w.uvarint(len(classic.supported_protocols) + 1)
    for protocol in classic.supported_protocols:
        w.compact_string(protocol.name)
        w.compact_bytes(protocol.metadata)
        _tagged(w, [])
    _tagged(w, [])


def _read_classic(r: Reader) -> ClassicMemberMetadata:
    session_timeout = r.i32()

    def protocol() -> JoinGroupProtocol:
        name, metadata = r.compact_string(), r.compact_bytes()
        _no_tags(r)
        return JoinGroupProtocol(name, metadata)

    protocols = r.compact_array(protocol)
    _no_tags(r)
    return ClassicMemberMetadata(session_timeout, protocols)


def _write_member_metadata(w: Writer, v: MemberMetadataValue) -> None:
    w.compact_string(v.instance_id)
    w.compact_string(v.rack_id)
    w.compact_string(v.client_id)
    w.compact_string(v.client_host)
    w.compact_strings(v.subscribed_topic_names)
    w.compact_string(v.subscribed_topic_regex)
    w.i32(v.rebalance_timeout_ms)
    w.compact_string(v.server_assignor)
    classic = v.classic_member_metadata
    if classic is None:  # not the Java default (an empty struct): written, as a null marker
        _tagged(w, [(0, b"\x00")])
    elif classic == _NO_CLASSIC:
        _tagged(w, [])
    else:
        _tagged(w, [(0, b"\x01" + _body(lambda b: _write_classic(b, classic)))])


def _read_member_metadata(r: Reader) -> MemberMetadataValue:
    instance_id, rack_id = r.compact_nullable_string(), r.compact_nullable_string()
    client_id, client_host = r.compact_string(), r.compact_string()
    names = r.compact_array(r.compact_string)
    regex = r.compact_nullable_string()
    rebalance_timeout = r.i32()
    assignor = r.compact_nullable_string()
    classic: list[ClassicMemberMetadata | None] = [_NO_CLASSIC]

    def read_classic(t: Reader) -> None:
        classic[0] = _read_classic(t) if t.uvarint() > 0 else None

    r.tagged({0: read_classic})
    return MemberMetadataValue(
        instance_id=instance_id,
        rack_id=rack_id,
        client_id=client_id,
        client_host=client_host,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        rebalance_timeout_ms=rebalance_timeout,
        server_assignor=assignor,
        classic_member_metadata=classic[0],
    )


def _write_value(w: Writer, record: ConsumerGroupRecord) -> None:
    if isinstance(record, ConsumerGroupMetadata):
        assert record.value is not None
        epoch, metadata_hash = record.value
        w.i32(epoch)
        _tagged(w, [(0, I64.pack(metadata_hash))] if metadata_hash != 0 else [])
    elif isinstance(record, ConsumerGroupMemberMetadata):
        assert record.value is not None
        _write_member_metadata(w, record.value)
    elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
        assert record.value is not None
        w.i32(record.value.assignment_epoch)
        timestamp = record.value.assignment_timestamp_ms
        _tagged(w, [(0, I64.pack(timestamp))] if timestamp != 0 else [])
    elif isinstance(record, ConsumerGroupTargetAssignmentMember):
        assert record.value is not None
        _write_topic_partitions(w, record.value)
        _tagged(w, [])
    elif isinstance(record, ConsumerGroupCurrentMemberAssignment):
        current = record.value
        assert current is not None
        w.i32(current.member_epoch)
        w.i32(current.previous_member_epoch)
        w.i8(int(current.state))
        _write_epochs(w, current.assigned_partitions)
        _write_epochs(w, current.partitions_pending_revocation)
        _tagged(w, [])
    else:
        resolved = record.value
        assert resolved is not None
        topics = sorted(resolved.topics, key=java_string_key)
        w.uvarint(len(topics) + 1)
        for topic in topics:
            w.compact_string(topic)
        w.i64(resolved.version)
        w.i64(resolved.timestamp_ms)
        _tagged(w, [])


def _read_i64_tag(box: list[int]) -> Callable[[Reader], None]:
    def read(t: Reader) -> None:
        box[0] = t.i64()

    return read


def _read_value(kind: int, key: tuple[str, ...], r: Reader) -> ConsumerGroupRecord:
    group_id = key[0]
    if kind == 3:
        epoch = r.i32()
        metadata_hash = [0]
        r.tagged({0: _read_i64_tag(metadata_hash)})
        return ConsumerGroupMetadata(group_id, (epoch, metadata_hash[0]))
    if kind == 5:
        return ConsumerGroupMemberMetadata(group_id, key[1], _read_member_metadata(r))
    if kind == 6:
        assignment_epoch = r.i32()
        timestamp = [0]
        r.tagged({0: _read_i64_tag(timestamp)})
        return ConsumerGroupTargetAssignmentMetadata(
            group_id, TargetAssignmentMetadataValue(assignment_epoch, timestamp[0])
        )
    if kind == 7:
        target = _read_topic_partitions(r)
        _no_tags(r)
        return ConsumerGroupTargetAssignmentMember(group_id, key[1], target)
    if kind == 8:
        member_epoch, previous = r.i32(), r.i32()
        state_byte = r.i8()
        try:
            state = MemberAssignmentState(state_byte)
        except ValueError:  # MemberState.fromValue: an unknown byte is UNKNOWN
            state = MemberAssignmentState.UNKNOWN
        assigned = _read_epochs(r, member_epoch)
        pending = _read_epochs(r, member_epoch)
        _no_tags(r)
        return ConsumerGroupCurrentMemberAssignment(
            group_id, key[1], CurrentAssignmentValue(member_epoch, previous, state, assigned, pending)
        )
    topics = r.compact_array(r.compact_string)
    version, timestamp_ms = r.i64(), r.i64()
    _no_tags(r)
    return ConsumerGroupRegularExpression(
        group_id, key[1], ResolvedRegularExpression(frozenset(topics), version, timestamp_ms)
    )


def _tombstone(kind: int, key: tuple[str, ...]) -> ConsumerGroupRecord:
    group_id = key[0]
    if kind == 3:
        return ConsumerGroupMetadata(group_id, None)
    if kind == 5:
        return ConsumerGroupMemberMetadata(group_id, key[1], None)
    if kind == 6:
        return ConsumerGroupTargetAssignmentMetadata(group_id, None)
    if kind == 7:
        return ConsumerGroupTargetAssignmentMember(group_id, key[1], None)
    if kind == 8:
        return ConsumerGroupCurrentMemberAssignment(group_id, key[1], None)
    return ConsumerGroupRegularExpression(group_id, key[1], None)


# --- the two entry points --------------------------------------------------------------------------

#: how many strings each type's key holds after the type: the group id, then the member id or regex
_KEY_STRINGS = {3: 1, 5: 2, 6: 1, 7: 2, 8: 2, 16: 2}


def _key_strings(record: ConsumerGroupRecord) -> tuple[str, ...]:
    if isinstance(record, ConsumerGroupMetadata | ConsumerGroupTargetAssignmentMetadata):
        return (record.group_id,)
    if isinstance(record, ConsumerGroupRegularExpression):
        return (record.group_id, record.regex)
    return (record.group_id, record.member_id)


def encode_consumer_group_record(record: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    """The key and value bytes Kafka 4.4 writes for ``record`` (``None``: a tombstone)."""
    kind = CONSUMER_GROUP_RECORD_TYPES[type(record)]
    return encode_keyed_record(kind, _key_strings(record), CONSUMER_GROUP_VALUE_VERSION, record, _write_value)


def decode_consumer_group_record(key: bytes, value: bytes | None) -> ConsumerGroupRecord:
    """The record of a key whose int16 type is one of :data:`CONSUMER_GROUP_RECORD_TYPES`' (and its
    value, ``None`` for a tombstone); :class:`PeerError` when the bytes are corrupt."""
    return decode_keyed_record(
        key,
        value,
        family="consumer group",
        key_string_counts=_KEY_STRINGS,
        value_version=CONSUMER_GROUP_VALUE_VERSION,
        tombstone=_tombstone,
        read_value=_read_value,
    )
