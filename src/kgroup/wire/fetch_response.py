"""The Fetch response (API key 1) written by hand, around the stored record bytes.

kio's writer copies every partition's records into one new answer buffer (and the transport copies
it again); this encoder packs the header and the fields into small buffers and hands each
partition's records on as they came from the log — bytes, or a region of a segment file — so the
connection writes the answer with ``writev`` and ``sendfile`` and the records are never copied in
Python. The bytes are exactly what
``encode_response(correlation_id, build(response_class(1, version), data))`` makes, for every
version in :data:`VERSIONS` (``tests/wire/test_fetch_response.py`` compares the two on random
answers): the same version-free data as :func:`kgroup.wire.codec.build` takes — fields the version
lacks are dropped, fields left out take the schema's default, and a tagged field (v12+) is written
only when it differs from its default, as Kafka's generated writers (and kio's) do. v13+ name each
topic by its id (16 bytes) instead of its name; v16+ add the leaders' endpoints as the response's
tagged field 0 (``node_endpoints``). v14, v15, v17 and v18 change only the request.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from kgroup.wire.field_bytes import compact_string, millis, uuid_bytes
from kgroup.wire.framing import Pieces
from kgroup.wire.varint import encode_uvarint

__all__ = ["SEPARATE_RECORDS_BYTES", "VERSIONS", "fetch_response"]

#: the Fetch versions this encoder writes: those kgroup's broker answers
VERSIONS = range(4, 19)
#: record bytes at least this long stay a buffer of their own in the answer; shorter ones are copied
#: in with the fields around them (an iovec per small partition would cost more than the copy)
SEPARATE_RECORDS_BYTES = 4096

_FLEXIBLE_FROM = 12
_LOG_START_FROM = 5
_SESSION_FROM = 7
_PREFERRED_REPLICA_FROM = 11
_TOPIC_IDS_FROM = 13
_NODE_ENDPOINTS_FROM = 16

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ABORTED = struct.Struct(">qq")
_PARTITION_V4 = struct.Struct(">ihqq")  # partition index, error code, high watermark, last stable offset
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... and the log start offset
_TOP_V7 = struct.Struct(">ihi")  # throttle time, error code, session id
_EPOCH_END_OFFSET = struct.Struct(">iqB")  # tag 0, diverging_epoch: epoch, end offset, no tags
_LEADER = struct.Struct(">iiB")  # tag 1, current_leader: leader id, leader epoch, no tags
_SNAPSHOT_ID = struct.Struct(">qiB")  # tag 2, snapshot_id: end offset, epoch, no tags
_NO_TAGS = b"\x00"
_BUFFERS = (bytes, bytearray, memoryview)


def _tagged(value: Any, first: str, second: str) -> tuple[int, int] | None:
    """The two fields of a tagged struct (every one of Fetch's has two, defaulting to -1), or None when
    it equals its default and is therefore not written."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        pair = (int(value.get(first, -1)), int(value.get(second, -1)))
    else:  # a kio entity
        pair = (int(getattr(value, first)), int(getattr(value, second)))
    return None if pair == (-1, -1) else pair


def fetch_response(correlation_id: int, version: int, data: Mapping[str, Any]) -> Pieces:
    """The Fetch response frame of ``version`` (header and body, without the size prefix) as the
    pieces that make it up in order: small buffers of packed fields, and each partition's records of
    :data:`SEPARATE_RECORDS_BYTES` or more as given (``bytes`` or a ``memoryview``, not copied), as
    is a :class:`~kgroup.wire.framing.FileRegion` of any size (stored batches sent from their file)."""
    if version not in VERSIONS:
        raise ValueError(f"Fetch v{version}: the hand-written encoder writes v{VERSIONS[0]}-v{VERSIONS[-1]}")
    flexible = version >= _FLEXIBLE_FROM
    pieces: Pieces = []
    out = bytearray(_I32.pack(correlation_id))
    if flexible:
        out += _NO_TAGS  # response header v1: no tagged fields
    throttle = millis(data["throttle_time"])
    if version >= _SESSION_FROM:
        out += _TOP_V7.pack(throttle, int(data["error_code"]), int(data.get("session_id", 0)))
    else:
        out += _I32.pack(throttle)
    partition_head = _PARTITION_V5 if version >= _LOG_START_FROM else _PARTITION_V4
    preferred = version >= _PREFERRED_REPLICA_FROM
    topics: Sequence[Mapping[str, Any]] = data["responses"]
    out += encode_uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    by_id = version >= _TOPIC_IDS_FROM
    for topic in topics:
        if by_id:
            out += uuid_bytes(topic.get("topic_id"))
        else:
            name = topic["topic"].encode()
            out += encode_uvarint(len(name) + 1) if flexible else _I16.pack(len(name))
            out += name
        partitions: Sequence[Mapping[str, Any]] = topic["partitions"]
        out += encode_uvarint(len(partitions) + 1) if flexible else _I32.pack(len(partitions))
        for partition in partitions:
            fields = [
                int(partition["partition_index"]),
                int(partition["error_code"]),
                int(partition["high_watermark"]),
                int(partition.get("last_stable_offset", -1)),
            ]
            if version >= _LOG_START_FROM:
                fields.append(int(partition.get("log_start_offset", -1)))
            out += partition_head.pack(*fields)
            aborted: Sequence[Any] | None = partition["aborted_transactions"]
            if aborted is None:
                out += b"\x00" if flexible else _I32.pack(-1)
            else:
                out += encode_uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                for transaction in aborted:
                    if isinstance(transaction, Mapping):
                        pair = (int(transaction["producer_id"]), int(transaction["first_offset"]))
                    else:
                        pair = (int(transaction.producer_id), int(transaction.first_offset))
                    out += _ABORTED.pack(*pair)
                    if flexible:
                        out += _NO_TAGS
            if preferred:
                out += _I32.pack(int(partition.get("preferred_read_replica", -1)))
            records = partition["records"]
            if records is None:
                out += b"\x00" if flexible else _I32.pack(-1)
            else:
                size = len(records)
                out += encode_uvarint(size + 1) if flexible else _I32.pack(size)
                if size >= SEPARATE_RECORDS_BYTES or not isinstance(records, _BUFFERS):
                    pieces.append(out)
                    pieces.append(records)
                    out = bytearray()
                elif size:
                    out += records
            if flexible:
                _write_partition_tags(out, partition)
        if flexible:
            out += _NO_TAGS  # the topic's
    if flexible:  # the response's tagged fields
        endpoints = data.get("node_endpoints") if version >= _NODE_ENDPOINTS_FROM else None
        if endpoints:
            field = _node_endpoints(endpoints)
            out += b"\x01\x00" + encode_uvarint(len(field)) + field  # one tag: 0
        else:
            out += _NO_TAGS
    pieces.append(out)
    return pieces


def _node_endpoints(endpoints: Sequence[Any]) -> bytes:
    """The ``node_endpoints`` array: node id, host, port, rack and no tags, each."""
    out = bytearray(encode_uvarint(len(endpoints) + 1))
    for endpoint in endpoints:
        if isinstance(endpoint, Mapping):
            node, host, port, rack = (
                endpoint["node_id"],
                endpoint["host"],
                endpoint["port"],
                endpoint.get("rack"),
            )
        else:  # a kio entity
            node, host, port, rack = endpoint.node_id, endpoint.host, endpoint.port, endpoint.rack
        out += _I32.pack(int(node)) + compact_string(host) + _I32.pack(int(port)) + compact_string(rack)
        out += _NO_TAGS
    return bytes(out)


def _write_partition_tags(out: bytearray, partition: Mapping[str, Any]) -> None:
    tags: list[bytes] = []
    diverging = _tagged(partition.get("diverging_epoch"), "epoch", "end_offset")
    if diverging is not None:
        tags.append(b"\x00" + encode_uvarint(_EPOCH_END_OFFSET.size) + _EPOCH_END_OFFSET.pack(*diverging, 0))
    leader = _tagged(partition.get("current_leader"), "leader_id", "leader_epoch")
    if leader is not None:
        tags.append(b"\x01" + encode_uvarint(_LEADER.size) + _LEADER.pack(*leader, 0))
    snapshot = _tagged(partition.get("snapshot_id"), "end_offset", "epoch")
    if snapshot is not None:
        tags.append(b"\x02" + encode_uvarint(_SNAPSHOT_ID.size) + _SNAPSHOT_ID.pack(*snapshot, 0))
    out += encode_uvarint(len(tags))
    for tag in tags:
        out += tag
