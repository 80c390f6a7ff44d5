"""Fetched record batches to Arrow columns, in bulk: the ``kgroup`` source's decoder.

One call of :func:`decode_fetched` takes the ``records`` bytes of one partition's Fetch answer (whole
RecordBatch v2 batches, the last one possibly cut short by the fetch's byte limit) and gives the
records in an offset range as one Arrow record batch in the source's schema. Python walks the batch
headers (a few per megabyte); the records inside are walked and their keys, values and headers
gathered by numba kernels (:mod:`kgroup.spark.source._record_kernels`), so no Python object is made
per record.

What is kept is what Kafka's Java consumer (and so Spark's Kafka source) returns
(``CompletedFetch.nextFetchedRecord``):

* each batch's CRC-32C is checked (``check.crcs``, on by default in Kafka's consumer);
* compressed batches (gzip, snappy, lz4, zstd) are inflated by :mod:`kgroup.log.codecs`;
* control batches (transaction markers) are never returned;
* in ``read_committed``, a transactional batch of a producer whose transaction the broker reports
  aborted (the answer's ``aborted_transactions``, from their first offset on) is skipped, until that
  producer's abort marker;
* records before the range's start (a fetch answers from the start of the batch holding the fetch
  offset) and at or past its end are dropped; offsets are the records' own, so compacted gaps stay
  gaps.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from crc32c import crc32c

from kgroup.log.batch import MAX_INFLATED_BYTES
from kgroup.log.codecs import InflateError, inflate
from kgroup.model import KgroupError
from kgroup.wire.record_batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)

__all__ = ["AbortedTransaction", "FetchedRecords", "arrow_schema", "decode_fetched", "empty_batch"]

_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_ABORT_MARKER = 0  # ControlRecordType.ABORT
_ERRORS = {
    1: "a record runs past the end of its batch",
    2: "a record's fields do not take its declared length",
    3: "a record has a negative header count or header key length",
    4: "the batch's record count does not match its records",
}


def arrow_schema(include_headers: bool) -> Any:
    """The Arrow form of Spark's Kafka schema (what ``DataSourceReader.read`` yields)."""
    import pyarrow as pa

    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(header)))
    return pa.schema(fields)


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """One entry of a Fetch answer's ``aborted_transactions``."""

    producer_id: int
    first_offset: int


@dataclass(slots=True)
class FetchedRecords:
    """What one Fetch answer gave: the records kept (``batch``, None if none) and ``next_offset``, the
    offset after the last whole batch in the answer (the next fetch's offset; unchanged when the
    answer held no whole batch)."""

    batch: Any
    next_offset: int
    rows: int = 0


@dataclass(slots=True)
class _Chunks:
    """The records sections to walk, as the kernel takes them."""

    parts: list[bytes | memoryview] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    base_offset: list[int] = field(default_factory=list)
    base_timestamp: list[int] = field(default_factory=list)
    append_time: list[int] = field(default_factory=list)
    log_append: list[bool] = field(default_factory=list)
    size: int = 0

    def add(self, payload: bytes | memoryview, header: tuple[Any, ...], log_append: bool) -> None:
        self.parts.append(payload)
        self.start.append(self.size)
        self.size += len(payload)
        self.end.append(self.size)
        self.count.append(header[12])
        self.base_offset.append(header[0])
        self.base_timestamp.append(header[7])
        self.append_time.append(header[8])
        self.log_append.append(log_append)


def _label(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _is_abort_marker(payload: bytes | memoryview) -> bool:
    """Whether a control batch's first record is an ABORT marker (its key: version, type)."""
    data = bytes(payload[:64])
    position = 0

    def varint() -> int:
        nonlocal position
        raw = shift = 0
        while position < len(data):
            byte = data[position]
            position += 1
            raw |= (byte & 0x7F) << shift
            if byte < 0x80:
                return (raw >> 1) ^ -(raw & 1)
            shift += 7
        return -1

    varint()  # length
    position += 1  # attributes
    varint()  # timestamp delta
    varint()  # offset delta
    key_length = varint()
    if key_length < _CONTROL_KEY.size or position + _CONTROL_KEY.size > len(data):
        return False
    _version, kind = _CONTROL_KEY.unpack_from(data, position)
    return bool(kind == _ABORT_MARKER)


def decode_fetched(
    records: bytes | None,
    *,
    topic: str,
    partition: int,
    fetch_offset: int,
    until_offset: int,
    read_committed: bool = False,
    aborted: Sequence[AbortedTransaction] = (),
    include_headers: bool = False,
) -> FetchedRecords:
    """The records ``[fetch_offset, until_offset)`` of one partition's Fetch answer, as Arrow."""
    view = memoryview(records or b"")
    label = _label(topic, partition)
    chunks = _Chunks()
    next_offset = fetch_offset
    pending = sorted((t.first_offset, t.producer_id) for t in aborted) if read_committed else []
    aborted_producers: set[int] = set()
    position = 0
    total = len(view)
    while total - position >= HEADER_SIZE:
        (batch_length,) = _INT32.unpack_from(view, position + 8)
        size = batch_length + LOG_OVERHEAD
        if total - position < size:
            break  # the fetch's byte limit cut this batch: the next fetch starts at it
        if size < HEADER_SIZE:
            raise KgroupError(f"fetching {label}: a record batch of {size} bytes is shorter than its header")
        header = HEADER.unpack_from(view, position)
        base_offset, magic, crc, attributes = header[0], header[3], header[4], header[5]
        last_offset = base_offset + header[6]
        if magic != MAGIC_V2:
            raise KgroupError(
                f"fetching {label}: record batch at offset {base_offset} has message format v{magic}; "
                "the kgroup source reads format v2 (Kafka 0.11+) only"
            )
        batch = view[position : position + size]
        position += size
        if last_offset < next_offset:
            continue  # wholly before the fetch offset (an answer may start with such a batch)
        if crc32c(batch[CRC_START:]) != crc:
            raise KgroupError(
                f"fetching {label}: record batch at offset {base_offset} is corrupt (CRC-32C mismatch)"
            )
        next_offset = last_offset + 1
        producer_id = header[9]
        is_control = bool(attributes & CONTROL_MASK)
        payload: bytes | memoryview = batch[HEADER_SIZE:]
        codec = attributes & COMPRESSION_MASK
        if codec:
            try:
                payload = inflate(codec, payload, MAX_INFLATED_BYTES)
            except InflateError as exc:
                raise KgroupError(
                    f"fetching {label}: record batch at offset {base_offset}: {exc.message}"
                ) from None
        if read_committed and producer_id >= 0:
            while pending and pending[0][0] <= last_offset:
                aborted_producers.add(heapq.heappop(pending)[1])
            if is_control and _is_abort_marker(payload):
                aborted_producers.discard(producer_id)
            elif attributes & TRANSACTIONAL_MASK and producer_id in aborted_producers:
                continue  # an aborted transaction's records
        if is_control or base_offset >= until_offset:
            continue
        chunks.add(payload, header, bool(attributes & TIMESTAMP_TYPE_MASK))
    out = FetchedRecords(None, next_offset)
    if chunks.count:
        out.batch = _to_arrow(chunks, topic, partition, fetch_offset, until_offset, include_headers, label)
        out.rows = 0 if out.batch is None else out.batch.num_rows
    return out


def _to_arrow(
    chunks: _Chunks,
    topic: str,
    partition: int,
    low: int,
    high: int,
    include_headers: bool,
    label: str,
) -> Any:
    from kgroup.spark.source import _record_kernels as k

    buf = np.frombuffer(b"".join(chunks.parts), dtype=np.uint8)
    capacity = sum(chunks.count)
    offsets = np.empty(capacity, np.int64)
    stamps = np.empty(capacity, np.int64)
    types = np.empty(capacity, np.int32)
    key_pos = np.empty(capacity, np.int64)
    key_len = np.empty(capacity, np.int64)
    value_pos = np.empty(capacity, np.int64)
    value_len = np.empty(capacity, np.int64)
    headers_pos = np.empty(capacity, np.int64)
    headers_count = np.empty(capacity, np.int64)
    n, error, at = k.records_kernel(
        buf,
        np.asarray(chunks.start, np.int64),
        np.asarray(chunks.end, np.int64),
        np.asarray(chunks.count, np.int64),
        np.asarray(chunks.base_offset, np.int64),
        np.asarray(chunks.base_timestamp, np.int64),
        np.asarray(chunks.append_time, np.int64),
        np.asarray(chunks.log_append, np.bool_),
        low,
        high,
        offsets,
        stamps,
        types,
        key_pos,
        key_len,
        value_pos,
        value_len,
        headers_pos,
        headers_count,
    )
    if error != k.ERR_NONE:
        raise KgroupError(
            f"fetching {label}: record batch at offset {chunks.base_offset[at]} is corrupt "
            f"({_ERRORS.get(error, 'unreadable records')})"
        )
    if n == 0:
        return None
    import pyarrow as pa

    arrays = [
        _binary(k, buf, key_pos[:n], key_len[:n], pa.binary()),
        _binary(k, buf, value_pos[:n], value_len[:n], pa.binary()),
        _repeated_string(topic, n),
        pa.array(np.full(n, partition, np.int32)),
        pa.array(offsets[:n]),
        pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), n, [None, pa.py_buffer(stamps[:n] * 1000)]),
        pa.array(types[:n]),
    ]
    if include_headers:
        arrays.append(_headers(k, buf, headers_pos[:n], headers_count[:n]))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


def _binary(k: Any, buf: Any, positions: Any, lengths: Any, arrow_type: Any) -> Any:
    """An Arrow binary (or string) array of the fields at ``positions``; a negative length is null."""
    import pyarrow as pa

    n = positions.shape[0]
    total = int(lengths[lengths > 0].sum())
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(total, np.uint8)
    k.gather_kernel(buf, positions, lengths, offsets, data)
    valid = lengths >= 0
    null_count = int(n - np.count_nonzero(valid))
    bitmap = None if null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        arrow_type, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=null_count
    )


def _repeated_string(text: str, n: int) -> Any:
    import pyarrow as pa

    raw = text.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _headers(k: Any, buf: Any, positions: Any, counts: Any) -> Any:
    """``headers``: a list of (key string, value binary) per record, null when it has none (as the
    source has always given a record without headers)."""
    import pyarrow as pa

    n = positions.shape[0]
    total = int(counts.sum())
    key_pos = np.empty(total, np.int64)
    key_len = np.empty(total, np.int64)
    value_pos = np.empty(total, np.int64)
    value_len = np.empty(total, np.int64)
    k.headers_kernel(buf, positions, counts, key_pos, key_len, value_pos, value_len)
    keys = _binary(k, buf, key_pos, key_len, pa.string())
    values = _binary(k, buf, value_pos, value_len, pa.binary())
    entries = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
    list_offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=list_offsets[1:])
    valid = counts > 0
    null_count = int(n - np.count_nonzero(valid))
    bitmap = None if null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    list_type = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
    return pa.Array.from_buffers(
        list_type, n, [bitmap, pa.py_buffer(list_offsets)], null_count=null_count, children=[entries]
    )


def empty_batch(include_headers: bool) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([], schema=arrow_schema(include_headers))
