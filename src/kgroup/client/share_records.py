"""The records of a ShareFetch answer: RecordBatch v2 read whole (keys, values, headers), as Kafka's
``ShareCompletedFetch`` reads them for the application, keeping only the acquired offsets.

A ShareFetch partition carries log batches (``records``) and the offset ranges acquired for this member
(``acquired_records``: first, last, delivery count). The batches can hold more than was acquired (the
broker sends whole batches; another member may hold the rest): only acquired offsets reach the
application, each with its delivery count. Control batches (transaction markers) are skipped; the
broker never acquires their offsets for delivery. A compressed batch is inflated with the log's codecs
(:mod:`kgroup.log.codecs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kgroup.log.codecs import InflateError, inflate
from kgroup.model import PeerError
from kgroup.wire.record_batch import COMPRESSION_MASK, CONTROL_MASK, HEADER, HEADER_SIZE, LOG_OVERHEAD

__all__ = ["RawRecord", "acquired_records", "read_batches"]

#: the most one batch may inflate to in the client (Kafka's client has no such limit; a guard here)
_INFLATE_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of a batch: its offset, timestamp, key, value and headers (bytes as written)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _varint(data: bytes | memoryview, position: int) -> tuple[int, int]:
    """A zig-zag varint (up to 10 bytes: varlong) at ``position``: (value, next position)."""
    raw = 0
    shift = 0
    for index in range(10):
        if position + index >= len(data):
            raise PeerError("ShareFetch records: a varint runs past the end of its record")
        byte = data[position + index]
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position + index + 1
        shift += 7
    raise PeerError("ShareFetch records: a varint longer than 10 bytes")


def _bytes(data: bytes | memoryview, position: int) -> tuple[bytes | None, int]:
    length, position = _varint(data, position)
    if length < 0:
        return None, position
    end = position + length
    if end > len(data):
        raise PeerError("ShareFetch records: a field runs past the end of its record")
    return bytes(data[position:end]), end


def _records(
    data: bytes | memoryview, count: int, base_offset: int, base_timestamp: int, log_append: int | None
) -> Iterator[RawRecord]:
    position = 0
    for _ in range(count):
        length, position = _varint(data, position)
        stop = position + length
        if length < 0 or stop > len(data):
            raise PeerError("ShareFetch records: a record's length runs past its batch")
        cursor = position + 1  # attributes
        timestamp_delta, cursor = _varint(data, cursor)
        offset_delta, cursor = _varint(data, cursor)
        key, cursor = _bytes(data, cursor)
        value, cursor = _bytes(data, cursor)
        header_count, cursor = _varint(data, cursor)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(max(0, header_count)):
            name, cursor = _bytes(data, cursor)
            header_value, cursor = _bytes(data, cursor)
            headers.append(((name or b"").decode("utf-8", "replace"), header_value))
        if cursor != stop:
            raise PeerError("ShareFetch records: a record's fields do not fill its length")
        timestamp = log_append if log_append is not None else base_timestamp + timestamp_delta
        yield RawRecord(base_offset + offset_delta, timestamp, key, value, tuple(headers))
        position = stop


def read_batches(records: bytes | memoryview | None) -> Iterator[RawRecord]:
    """Every data record of the batches in ``records`` (a partial last batch is ignored, as Kafka's
    client ignores a batch cut by ``max_bytes``)."""
    if not records:
        return
    view = memoryview(records)
    position = 0
    while position + HEADER_SIZE <= len(view):
        (
            base_offset,
            batch_length,
            _leader_epoch,
            magic,
            _crc,
            attributes,
            _last_delta,
            base_timestamp,
            max_timestamp,
            _pid,
            _epoch,
            _seq,
            count,
        ) = HEADER.unpack_from(view, position)
        end = position + LOG_OVERHEAD + batch_length
        if end > len(view):
            return  # cut by max_bytes
        if magic != 2:
            raise PeerError(f"ShareFetch records: batch magic {magic}; kgroup's client reads magic 2 only")
        if not attributes & CONTROL_MASK:
            payload = view[position + HEADER_SIZE : end]
            codec = attributes & COMPRESSION_MASK
            if codec:
                try:
                    payload = memoryview(inflate(codec, payload, _INFLATE_LIMIT))
                except InflateError as exc:
                    raise PeerError(f"ShareFetch records: {exc}") from None
            log_append = max_timestamp if attributes & 0x08 else None
            yield from _records(payload, count, base_offset, base_timestamp, log_append)
        position = end


def acquired_records(
    records: bytes | memoryview | None, acquired: Sequence[tuple[int, int, int]]
) -> tuple[list[tuple[RawRecord, int]], list[int]]:
    """The records of ``records`` whose offsets were acquired, each with its delivery count, in
    offset order (``acquired``: (first offset, last offset, delivery count) ranges), and the acquired
    offsets with no data record (a control record, a record compacted away): Kafka's client
    acknowledges those as gaps (``ShareInFlightBatch.addGap``)."""
    if not acquired:
        return [], []
    ranges = sorted(acquired)
    wanted: dict[int, int] = {}
    for first, last, count in ranges:
        for offset in range(first, last + 1):
            wanted[offset] = count
    out: list[tuple[RawRecord, int]] = []
    seen: set[int] = set()
    for record in read_batches(records):
        delivery = wanted.get(record.offset)
        if delivery is not None and record.offset not in seen:
            seen.add(record.offset)
            out.append((record, delivery))
    gaps = sorted(offset for offset in wanted if offset not in seen)
    return out, gaps
