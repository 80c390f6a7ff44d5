"""Record batches for the log tests, built by real encoders: kio's record writers and kafka-python's.

kio writes uncompressed batches from typed records; kafka-python's ``DefaultRecordBatchBuilder`` is a
real client's encoder (the one its producer sends), used here for compressed (gzip) batches.
"""

from __future__ import annotations

import datetime
import io
import warnings
from collections.abc import Sequence

from kio.records.schema import NewRecordBatch, Record, RecordHeader
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

BASE_TIME_MS = 1_700_000_000_000


def kio_batch(
    values: Sequence[bytes],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int = BASE_TIME_MS,
    timestamps: Sequence[int] | None = None,
    keys: Sequence[bytes | None] | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> bytes:
    """An uncompressed RecordBatch v2 with base offset 0, as a producer sends it (kio's writer)."""
    stamps = list(timestamps) if timestamps is not None else [timestamp_ms + n for n in range(len(values))]
    records = tuple(
        Record(
            attributes=i8(0),
            timestamp=TZAwareMicros.parse(datetime.datetime.fromtimestamp(stamps[n] / 1000, datetime.UTC)),
            offset=i64(n),
            key=keys[n] if keys is not None else b"k%d" % n,
            value=value,
            headers=tuple(RecordHeader(key=k, value=v) for k, v in headers),
        )
        for n, value in enumerate(values)
    )
    batch = NewRecordBatch(
        producer_id=i64(producer_id),
        producer_epoch=i16(producer_epoch),
        partition_leader_epoch=i32(-1),
        base_sequence=i32(base_sequence),
        records=records,
        attributes=i16(0),
    )
    buffer = io.BytesIO()
    write_new_batch(buffer, batch)
    return buffer.getvalue()


def client_batch(
    values: Sequence[bytes],
    *,
    compression: int = DefaultRecordBatch.CODEC_GZIP,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int = BASE_TIME_MS,
) -> bytes:
    """A batch from kafka-python's own encoder (gzip by default), base offset 0.

    Like its producer, kafka-python sends the batch uncompressed when gzip would not make it smaller.
    """
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for n, value in enumerate(values):
        builder.append(n, timestamp=timestamp_ms + n, key=b"k%d" % n, value=value, headers=[])
    return bytes(builder.build())


def decode(fetched: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record in fetched bytes, read by kafka-python's reader."""
    out = []
    records = MemoryRecords(fetched)
    while (batch := records.next_batch()) is not None:
        for record in batch:
            out.append((record.offset, record.timestamp, record.key, record.value))
    return out
