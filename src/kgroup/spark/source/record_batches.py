"""Arrow columns to RecordBatch v2, in bulk: what the sink's bulk path sends (the reverse of
:mod:`kgroup.spark.source.record_columns`).

:func:`encode_records` writes the records of an Arrow batch's keys, values and headers, grouped by
(topic, partition) and cut into batches, with one numba kernel (:mod:`._batch_kernels`): no Python
object per record. :func:`seal_batch` then writes a batch's 61-byte header — the producer id, epoch
and base sequence of an idempotent producer, the batch's timestamp — and its CRC-32C. The records
are uncompressed, with CreateTime timestamps (every record of a batch carries the batch's time, as a
Java producer's records carry the time of their ``send()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kgroup.model import KgroupError
from kgroup.wire.record_batch import seal_header

__all__ = ["EncodedBatch", "EncodedRecords", "binary_parts", "encode_records", "group_rows", "seal_batch"]

_NO_NULLS = np.empty(0, np.uint8)
_NO_OFFSETS = np.empty(0, np.int64)


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """One batch's place in :attr:`EncodedRecords.buffer`: bytes ``[start, end)``, its header unwritten."""

    group: int
    records: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class EncodedRecords:
    buffer: Any  # numpy uint8
    batches: tuple[EncodedBatch, ...]


def binary_parts(array: Any) -> tuple[Any, Any, Any]:
    """An Arrow binary or string array (sliced or not, 32- or 64-bit offsets) as the kernel reads it:
    absolute offsets (int64, one more than the rows), its data bytes, and one validity byte per row
    (empty when nothing is null)."""
    import pyarrow as pa

    if pa.types.is_string(array.type):
        array = array.cast(pa.binary())
    elif pa.types.is_large_string(array.type):
        array = array.cast(pa.large_binary())
    n = len(array)
    _validity, offsets_buffer, data_buffer = array.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    if offsets_buffer is None:  # an array of no rows
        offsets = np.zeros(n + 1, np.int64)
    else:
        raw = np.frombuffer(offsets_buffer, offset_type)
        offsets = raw[array.offset : array.offset + n + 1].astype(np.int64)
    data = _NO_NULLS if data_buffer is None else np.frombuffer(data_buffer, np.uint8)
    valid = _NO_NULLS
    if array.null_count:
        valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    return offsets, data, valid


def _header_parts(headers: Any) -> tuple[Any, ...]:
    """The ``headers`` column (``array<struct<key: string, value: binary>>``) as the kernel reads it."""
    import pyarrow as pa

    n = len(headers)
    if headers.null_count:
        headers = headers.fill_null(pa.scalar([], headers.type))
    list_offsets = np.asarray(headers.offsets, dtype=np.int64)
    first = int(list_offsets[0]) if n else 0
    entries = headers.values.slice(first, int(list_offsets[-1]) - first if n else 0)
    keys = entries.field("key")
    if keys.null_count:
        raise KgroupError("headers: a header has a null key; give every header a key (a string)")
    key_offsets, key_data, _ = binary_parts(keys)
    value_offsets, value_data, value_valid = binary_parts(entries.field("value"))
    return list_offsets - first, key_offsets, key_data, value_offsets, value_data, value_valid


def group_rows(groups: Any) -> tuple[Any, Any, Any]:
    """Rows ordered by group (stable: each group's rows keep their order), the bounds of each group in
    that order, and each group's value: ``(order, bounds, values)``."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    bounds = np.concatenate(([0], cuts, [len(groups)])).astype(np.int64)
    return order.astype(np.int64), bounds, ordered[bounds[:-1]]


def encode_records(
    keys: Any, values: Any, headers: Any | None, order: Any, bounds: Any, max_batch_bytes: int
) -> EncodedRecords:
    """The records of rows ``order[bounds[g]:bounds[g+1]]`` of each group ``g`` (keys and values are
    Arrow binary or string arrays, ``headers`` the sink's headers column or None), as batches of at
    most ``max_batch_bytes`` each (a record that alone is larger gets its own batch)."""
    from kgroup.spark.source._batch_kernels import encode_kernel

    key_offsets, key_data, key_valid = binary_parts(keys)
    value_offsets, value_data, value_valid = binary_parts(values)
    if headers is not None:
        parts = _header_parts(headers)
        header_offsets, h_key_offsets, h_key_data, h_value_offsets, h_value_data, h_value_valid = parts
    else:
        header_offsets = h_key_offsets = h_value_offsets = _NO_OFFSETS
        h_key_data = h_value_data = h_value_valid = _NO_NULLS
    out, rows = encode_kernel(
        order,
        bounds,
        key_offsets,
        key_data,
        key_valid,
        value_offsets,
        value_data,
        value_valid,
        header_offsets,
        h_key_offsets,
        h_key_data,
        h_value_offsets,
        h_value_data,
        h_value_valid,
        max_batch_bytes,
    )
    batches = tuple(
        EncodedBatch(group=int(g), records=int(count), start=int(start), end=int(end))
        for start, end, count, g in rows.tolist()
    )
    return EncodedRecords(out, batches)


def seal_batch(
    records: EncodedRecords,
    batch: EncodedBatch,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    timestamp_ms: int,
) -> memoryview:
    """Write ``batch``'s header (uncompressed, CreateTime ``timestamp_ms``) and CRC; its bytes."""
    seal_header(
        records.buffer,
        batch.start,
        batch.end,
        batch.records,
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return memoryview(records.buffer)[batch.start : batch.end]
