"""RecordBatch v2's layout and its one writer in Python: what every part of kgroup that builds or sizes a
batch reads (the log's produce checks in :mod:`kgroup.log.batch`, the offsets topic's batches, the
control batches of transactions, the Spark sink's header, the group coordinator's size estimate of a
commit, the producer model's batch sizes).

Layout (``org.apache.kafka.common.record.DefaultRecordBatch``), big-endian::

    0  baseOffset i64          12 partitionLeaderEpoch i32   17 crc u32 (CRC-32C of bytes 21..end)
    8  batchLength i32         16 magic i8                   21 attributes i16
    23 lastOffsetDelta i32     27 baseTimestamp i64          35 maxTimestamp i64
    43 producerId i64          51 producerEpoch i16          53 baseSequence i32
    57 recordsCount i32        61 records (compressed as a whole when attributes & 7 != 0)

A record (``DefaultRecord``): its length (varint), attributes (one byte, 0), timestamp delta (varlong),
offset delta (varint), key length (varint, -1 for none) and key, value length (-1 for a tombstone) and
value, the header count (varint) and headers. The numba kernels of the Spark sink and the log's record
walk keep their own copies of these numbers (a kernel cannot read a module's objects); their tests check
them against this module.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from crc32c import crc32c

from kgroup.wire.varint import encode_varint, varint_size

__all__ = [
    "COMPRESSION_MASK",
    "CONTROL_MASK",
    "CRC_AT",
    "CRC_START",
    "HEADER",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "encode_record",
    "record_batch",
    "record_size",
    "seal_header",
]

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61 = DefaultRecordBatch.RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted in batchLength
CRC_AT = 17  # the CRC's place in the header
CRC_START = 21  # the CRC covers attributes .. end of batch
MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

_CRC = struct.Struct(">I")


def encode_record(
    offset_delta: int, key: bytes | None, value: bytes | None, timestamp_delta: int = 0
) -> bytes:
    """One record with no headers, framed by its length; a ``None`` key or value is written as -1."""
    body = bytearray(b"\x00")  # attributes
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    body += encode_varint(-1) if key is None else encode_varint(len(key)) + key
    body += encode_varint(-1) if value is None else encode_varint(len(value)) + value
    body += encode_varint(0)  # no headers
    return encode_varint(len(body)) + body


def record_size(offset_delta: int, key_size: int, value_size: int, timestamp_delta: int = 0) -> int:
    """The bytes :func:`encode_record` writes for a key and a value of these sizes
    (``DefaultRecord.sizeInBytes`` with no headers)."""
    body = (
        1  # attributes
        + varint_size(timestamp_delta)
        + varint_size(offset_delta)
        + varint_size(key_size)
        + key_size
        + varint_size(value_size)
        + value_size
        + 1  # no headers
    )
    return body + varint_size(body)


def seal_header(
    buffer: bytearray | memoryview,
    start: int,
    end: int,
    records: int,
    *,
    timestamp_ms: int,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> None:
    """Write the header of the batch at ``buffer[start:end]`` (its records already after the header's
    :data:`HEADER_SIZE` bytes), then its CRC: base offset 0 (the broker assigns it), no partition leader
    epoch, offset deltas 0 .. ``records - 1``, every record at CreateTime ``timestamp_ms``."""
    HEADER.pack_into(
        buffer,
        start,
        0,
        end - start - LOG_OVERHEAD,
        NO_PARTITION_LEADER_EPOCH,
        MAGIC_V2,
        0,  # the CRC, written below
        attributes,
        records - 1,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
    )
    _CRC.pack_into(buffer, start + CRC_AT, crc32c(memoryview(buffer)[start + CRC_START : end]))


def record_batch(
    entries: Sequence[tuple[bytes | None, bytes | None]],
    timestamp_ms: int,
    *,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """One uncompressed batch of ``entries`` as (key, value) records (see :func:`seal_header`)."""
    out = bytearray(HEADER_SIZE)
    for delta, (key, value) in enumerate(entries):
        out += encode_record(delta, key, value)
    seal_header(
        out,
        0,
        len(out),
        len(entries),
        timestamp_ms=timestamp_ms,
        attributes=attributes,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return bytes(out)
