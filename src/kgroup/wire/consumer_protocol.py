"""The consumer protocol's bytes: ``ConsumerProtocolSubscription`` (v0–v3) and ``ConsumerProtocolAssignment``.

These are the opaque ``metadata`` of a JoinGroup protocol and the opaque assignment of a SyncGroup:
the coordinator stores and forwards them untouched; consumers (kgroup's member, the simulator, the
kafka-python / aiokafka plug-ins) encode and decode them here. The layout is Kafka's
``ConsumerProtocol``: a big-endian int16 version, then the message of that version. As in Java:

* encoding sorts the topics (``Collections.sort``: Java string order) and the owned partitions by
  (topic, partition), grouping consecutive partitions of one topic; a missing generation is -1;
* an assignment groups partitions by topic in order of first appearance;
* decoding a version newer than 3 reads it as version 3 (forward compatible: trailing fields are
  ignored), an empty rack id means "no rack", and short or garbled bytes raise :class:`PeerError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import data as assignment_v0
from kio.schema.consumer_protocol_assignment.v1 import data as assignment_v1
from kio.schema.consumer_protocol_assignment.v2 import data as assignment_v2
from kio.schema.consumer_protocol_assignment.v3 import data as assignment_v3
from kio.schema.consumer_protocol_subscription.v0 import data as subscription_v0
from kio.schema.consumer_protocol_subscription.v1 import data as subscription_v1
from kio.schema.consumer_protocol_subscription.v2 import data as subscription_v2
from kio.schema.consumer_protocol_subscription.v3 import data as subscription_v3
from kio.serial import entity_reader
from kio.serial.errors import SerialError

from kgroup.javacompat import java_string_key
from kgroup.messages import NO_GENERATION, ConsumerAssignment, ConsumerSubscription
from kgroup.model import KgroupError, PeerError, TopicPartition

__all__ = [
    "ASSIGNMENT_VERSION",
    "SUBSCRIPTION_VERSION",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

#: ``ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION`` (what Kafka 4.0's consumer sends)
SUBSCRIPTION_VERSION = 3
#: ``ConsumerProtocolAssignment.HIGHEST_SUPPORTED_VERSION``
ASSIGNMENT_VERSION = 3

_SUBSCRIPTION_MODULES = (subscription_v0, subscription_v1, subscription_v2, subscription_v3)
_ASSIGNMENT_MODULES = (assignment_v0, assignment_v1, assignment_v2, assignment_v3)
_VERSION = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL16 = _VERSION.pack(-1)
_NULL32 = _INT32.pack(-1)

_readers: dict[tuple[str, int], Callable[[bytes, int], tuple[Any, int]]] = {}


def _reader(kind: str, version: int, cls: type) -> Callable[[bytes, int], tuple[Any, int]]:
    key = (kind, version)
    if key not in _readers:
        _readers[key] = entity_reader(cls)
    return _readers[key]


def _check_encode_version(version: int, highest: int, what: str) -> int:
    if version < 0:
        raise KgroupError(f"version: {what} version {version} does not exist; use 0..{highest}")
    return min(version, highest)  # Kafka's checkXVersion: newer versions are written as the highest


def _read_version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise PeerError(f"{what}: {len(data)} bytes is too short for the consumer protocol's version header")
    (version,) = _VERSION.unpack_from(data, 0)
    if version < 0:
        raise PeerError(f"{what}: unsupported consumer protocol version {version}")
    return int(version)


def _topic_partition_key(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_string_key(tp.topic), tp.partition)


def _partitions(entries: Any) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(entry.topic, int(p)) for entry in entries for p in entry.partitions)


def _put_string(parts: list[bytes], text: str | None, what: str) -> None:
    if text is None:
        parts.append(_NULL16)
        return
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise KgroupError(f"{what}: {len(data)} bytes is longer than a Kafka string (32767); shorten it")
    parts.append(_VERSION.pack(len(data)))
    parts.append(data)


def _put_bytes(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(_NULL32)
        return
    parts.append(_INT32.pack(len(data)))
    parts.append(bytes(data))


def _put_partitions(parts: list[bytes], grouped: list[tuple[str, list[int]]], what: str) -> None:
    parts.append(_INT32.pack(len(grouped)))
    for topic, numbers in grouped:
        _put_string(parts, topic, what)
        parts.append(_INT32.pack(len(numbers)))
        try:
            parts.append(struct.pack(f">{len(numbers)}i", *numbers))
        except struct.error:
            raise KgroupError(f"{what}: a partition number of {topic!r} is not a Java int") from None


# The consumer protocol's schemas are not flexible, so their bytes are plain big-endian fields; they
# are written here with struct (several times faster than kio's generic writer, which the tests use
# as the reference: the bytes are the same).


def encode_subscription(subscription: ConsumerSubscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    """Kafka's ``ConsumerProtocol.serializeSubscription``: the version header, then the message."""
    version = _check_encode_version(version, SUBSCRIPTION_VERSION, "subscription")
    parts: list[bytes] = [_VERSION.pack(version)]
    topics = sorted(subscription.topics, key=java_string_key)
    parts.append(_INT32.pack(len(topics)))
    for topic in topics:
        _put_string(parts, topic, "subscription.topics")
    _put_bytes(parts, subscription.user_data)
    if version >= 1:
        owned = sorted(subscription.owned_partitions, key=_topic_partition_key)
        grouped: list[tuple[str, list[int]]] = []
        for tp in owned:
            if not grouped or grouped[-1][0] != tp.topic:
                grouped.append((tp.topic, []))
            grouped[-1][1].append(tp.partition)
        _put_partitions(parts, grouped, "subscription.owned_partitions")
    if version >= 2:
        try:
            parts.append(_INT32.pack(subscription.generation_id))
        except struct.error:
            raise KgroupError("subscription.generation_id: not a Java int") from None
    if version >= 3:
        _put_string(parts, subscription.rack_id, "subscription.rack_id")
    return b"".join(parts)


def decode_subscription(data: bytes) -> ConsumerSubscription:
    """Kafka's ``ConsumerProtocol.deserializeSubscription`` (:class:`PeerError` on bad bytes)."""
    data = bytes(data)
    version = min(_read_version(data, "subscription"), SUBSCRIPTION_VERSION)
    cls = _SUBSCRIPTION_MODULES[version].ConsumerProtocolSubscription
    try:
        message, _size = _reader("subscription", version, cls)(data, 2)
    except (SerialError, ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise PeerError(f"subscription: malformed consumer protocol subscription v{version}: {exc}") from None
    owned: tuple[TopicPartition, ...] = ()
    generation = NO_GENERATION
    rack: str | None = None
    if version >= 1:
        owned = _partitions(message.owned_partitions)
    if version >= 2:
        generation = int(message.generation_id)
    if version >= 3 and message.rack_id:
        rack = message.rack_id
    return ConsumerSubscription(
        topics=tuple(message.topics),
        user_data=message.user_data,
        owned_partitions=owned,
        generation_id=generation,
        rack_id=rack,
    )


def encode_assignment(assignment: ConsumerAssignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    """Kafka's ``ConsumerProtocol.serializeAssignment`` (topics in order of first appearance)."""
    version = _check_encode_version(version, ASSIGNMENT_VERSION, "assignment")
    grouped: dict[str, list[int]] = {}
    for tp in assignment.partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    parts: list[bytes] = [_VERSION.pack(version)]
    _put_partitions(parts, list(grouped.items()), "assignment.partitions")
    _put_bytes(parts, assignment.user_data)
    return b"".join(parts)


def decode_assignment(data: bytes) -> ConsumerAssignment:
    """Kafka's ``ConsumerProtocol.deserializeAssignment``; empty bytes are an empty assignment.

    (A SyncGroup answer with no bytes — a member the leader left out, or a group that failed — is an
    empty assignment to the consumer, as ``ConsumerCoordinator.onJoinComplete`` treats it.)
    """
    data = bytes(data)
    if not data:
        return ConsumerAssignment()
    version = min(_read_version(data, "assignment"), ASSIGNMENT_VERSION)
    cls = _ASSIGNMENT_MODULES[version].ConsumerProtocolAssignment
    try:
        message, _size = _reader("assignment", version, cls)(data, 2)
    except (SerialError, ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise PeerError(f"assignment: malformed consumer protocol assignment v{version}: {exc}") from None
    return ConsumerAssignment(
        partitions=_partitions(message.assigned_partitions),
        user_data=message.user_data,
    )
