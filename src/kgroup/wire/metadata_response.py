"""The Metadata response (API key 3) written by hand.

A Metadata answer holds a small record per partition (error, index, leader, epoch, three replica
lists), so a topic of thousands of partitions costs kio's generic writer tens of milliseconds to build
and encode (entity objects first, then a walk over them). This encoder packs the same fields straight
from the handler's data into one buffer, and :class:`PartitionsCache` keeps each topic's encoded
partition array until its topic or the brokers' leadership change, so a client's periodic Metadata
of a big topic costs the broker a copy.

The bytes are exactly what ``encode_response(correlation_id, build(response_class(3, version),
data))`` makes for every version in :data:`VERSIONS` (``tests/wire/test_metadata_response.py``
compares the two on random answers): the version-free data :func:`kgroup.wire.codec.build` takes —
fields a version lacks are dropped, fields left out take the schema's default. v1 adds the rack, the
controller and ``is_internal``; v2 the cluster id; v3 the throttle time; v5 the offline replicas; v7
the leader epoch; v8 the authorized operations (the cluster's only in v8-v10); v9 the compact,
tagged encoding; v10 the topic id; v12 a nullable topic name; v13 a top-level error code.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from kgroup.wire.field_bytes import compact_string, millis, uuid_bytes
from kgroup.wire.framing import Pieces
from kgroup.wire.varint import encode_uvarint

__all__ = ["VERSIONS", "PartitionsCache", "encode_partitions", "metadata_response"]

#: the Metadata versions this encoder writes: those kgroup's broker answers
VERSIONS = range(0, 14)

_RACK_FROM = 1  # and controller id, is_internal
_CLUSTER_ID_FROM = 2
_THROTTLE_FROM = 3
_OFFLINE_FROM = 5
_LEADER_EPOCH_FROM = 7
_AUTHORIZED_FROM = 8
_CLUSTER_AUTHORIZED_UNTIL = 10
_FLEXIBLE_FROM = 9
_TOPIC_ID_FROM = 10
_NULLABLE_NAME_FROM = 12
_TOP_ERROR_FROM = 13

#: topics a :class:`PartitionsCache` keeps before it starts afresh
_MAX_TOPICS = 100_000
#: the schema's default for an authorized-operations field: not asked for
_OMITTED = -2147483648

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">hii")  # error code, partition index, leader id
_PARTITION_HEAD_EPOCH = struct.Struct(">hiii")  # ... and the leader epoch (v7+)
_NO_TAGS = b"\x00"


def _string(value: str | None, flexible: bool, nullable: bool, field: str) -> bytes:
    if value is None:
        if not nullable:
            raise ValueError(f"Metadata response: {field} may not be null in this version")
        return b"\x00" if flexible else b"\xff\xff"
    if flexible:
        return compact_string(value)
    raw = value.encode()
    return _I16.pack(len(raw)) + raw


def _count(count: int, flexible: bool) -> bytes:
    return encode_uvarint(count + 1) if flexible else _I32.pack(count)


def _int32s(values: Sequence[int], flexible: bool) -> bytes:
    return _count(len(values), flexible) + struct.pack(f">{len(values)}i", *values)


def encode_partitions(version: int, partitions: Sequence[Mapping[str, Any]]) -> bytes:
    """A topic's ``partitions`` array as ``version`` writes it (its count first)."""
    flexible = version >= _FLEXIBLE_FROM
    epoch = version >= _LEADER_EPOCH_FROM
    offline = version >= _OFFLINE_FROM
    out = bytearray(_count(len(partitions), flexible))
    for partition in partitions:
        if epoch:
            out += _PARTITION_HEAD_EPOCH.pack(
                int(partition["error_code"]),
                int(partition["partition_index"]),
                int(partition["leader_id"]),
                int(partition.get("leader_epoch", -1)),
            )
        else:
            out += _PARTITION_HEAD.pack(
                int(partition["error_code"]), int(partition["partition_index"]), int(partition["leader_id"])
            )
        out += _int32s(partition.get("replica_nodes", ()), flexible)
        out += _int32s(partition.get("isr_nodes", ()), flexible)
        if offline:
            out += _int32s(partition.get("offline_replicas", ()), flexible)
        if flexible:
            out += _NO_TAGS
    return bytes(out)


class PartitionsCache:
    """Each topic's encoded ``partitions`` array per version, kept while the topic is the same object
    (compared by identity: the broker's topic objects are immutable, a topic made again is a new one)
    and its ``stamp`` (the leadership's version) holds."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[object, Hashable, dict[int, bytes]]] = {}

    def get(self, topic: object, stamp: Hashable, version: int) -> bytes | None:
        found = self._entries.get(id(topic))
        if found is None or found[0] is not topic or found[1] != stamp:
            return None
        return found[2].get(version)

    def put(self, topic: object, stamp: Hashable, version: int, encoded: bytes) -> None:
        found = self._entries.get(id(topic))
        if found is None or found[0] is not topic or found[1] != stamp:
            if len(self._entries) >= _MAX_TOPICS:
                self._entries.clear()  # topics made and deleted over and over: start afresh
            found = (topic, stamp, {})
            self._entries[id(topic)] = found
        found[2][version] = encoded


class EncodedPartitions:
    """A topic's ``partitions`` already encoded for one version (:class:`PartitionsCache`); the
    encoder copies it as it is. ``len()`` is the partition count."""

    __slots__ = ("count", "encoded", "version")

    def __init__(self, version: int, encoded: bytes, count: int) -> None:
        self.version = version
        self.encoded = encoded
        self.count = count

    def __len__(self) -> int:
        return self.count


def metadata_response(correlation_id: int, version: int, data: Mapping[str, Any]) -> Pieces:
    """The Metadata response frame of ``version`` (header and body, without the size prefix), as the
    one piece the broker's encoders hand the connection."""
    if version not in VERSIONS:
        raise ValueError(
            f"Metadata v{version}: the hand-written encoder writes v{VERSIONS[0]}-v{VERSIONS[-1]}"
        )
    flexible = version >= _FLEXIBLE_FROM
    out = bytearray(_I32.pack(correlation_id))
    if flexible:
        out += _NO_TAGS  # response header v1: no tagged fields
    if version >= _THROTTLE_FROM:
        out += _I32.pack(millis(data["throttle_time"]))
    brokers: Sequence[Mapping[str, Any]] = data["brokers"]
    out += _count(len(brokers), flexible)
    for broker in brokers:
        out += _I32.pack(int(broker["node_id"]))
        out += _string(broker["host"], flexible, False, "a broker's host")
        out += _I32.pack(int(broker["port"]))
        if version >= _RACK_FROM:
            out += _string(broker.get("rack"), flexible, True, "rack")
        if flexible:
            out += _NO_TAGS
    if version >= _CLUSTER_ID_FROM:
        out += _string(data.get("cluster_id"), flexible, True, "cluster_id")
    if version >= _RACK_FROM:
        out += _I32.pack(int(data.get("controller_id", -1)))
    topics: Sequence[Mapping[str, Any]] = data["topics"]
    out += _count(len(topics), flexible)
    for topic in topics:
        out += _I16.pack(int(topic["error_code"]))
        out += _string(topic["name"], flexible, version >= _NULLABLE_NAME_FROM, "a topic's name")
        if version >= _TOPIC_ID_FROM:
            out += uuid_bytes(topic["topic_id"])
        if version >= _RACK_FROM:
            out += b"\x01" if topic.get("is_internal", False) else b"\x00"
        partitions = topic["partitions"]
        if isinstance(partitions, EncodedPartitions):
            if partitions.version != version:
                raise ValueError(f"Metadata v{version}: partitions encoded for v{partitions.version}")
            out += partitions.encoded
        else:
            out += encode_partitions(version, partitions)
        if version >= _AUTHORIZED_FROM:
            out += _I32.pack(int(topic.get("topic_authorized_operations", _OMITTED)))
        if flexible:
            out += _NO_TAGS
    if _AUTHORIZED_FROM <= version <= _CLUSTER_AUTHORIZED_UNTIL:
        out += _I32.pack(int(data.get("cluster_authorized_operations", _OMITTED)))
    if version >= _TOP_ERROR_FROM:
        out += _I16.pack(int(data.get("error_code", 0)))
    if flexible:
        out += _NO_TAGS
    return [out]
