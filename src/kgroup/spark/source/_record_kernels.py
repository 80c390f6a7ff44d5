"""numba kernels of the bulk record decoder (imported lazily by :mod:`kgroup.spark.source.record_columns`).

They walk the records section of RecordBatch v2 payloads (already inflated) as Kafka's
``DefaultRecord.readFrom`` walks them, and gather keys, values and headers into Arrow's contiguous
buffers — no Python object per record. Module-level functions with ``cache=True`` (numba keeps the
machine code in ``__pycache__``); ``nogil=True`` so a task's socket reads can overlap them.

A record (``DefaultRecord``)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint
    | (headerKeyLength varint | headerKey | headerValueLength varint | headerValue) * headerCount

Every position is checked against the end of its record and of its chunk; a record that does not
parse stops the walk with an error code (the caller names it), never an out-of-bounds read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgroup._njit import njit

__all__ = ["ERR_NONE", "gather_kernel", "headers_kernel", "records_kernel"]

ERR_NONE = 0
ERR_TRUNCATED = 1  # a varint or a field runs past its record or the chunk
ERR_LENGTH = 2  # a record's fields do not take exactly its declared length
ERR_HEADERS = 3  # a negative header count or header key length
ERR_COUNT = 4  # bytes left after the declared record count, or fewer records than declared

_M7 = np.uint64(0x7F)
_MASK32 = np.uint64(0xFFFFFFFF)
_ONE = np.uint64(1)


@njit(cache=True, nogil=True, boundscheck=False)
def _varint(buf: Any, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zig-zag varint (``max_bytes`` 5) or varlong (10) at ``pos``: (value, next); next = -1 when it
    runs past ``end`` or is longer than its maximum size."""
    raw = np.uint64(0)
    shift = np.uint64(0)
    for _ in range(max_bytes):
        if pos >= end:
            return 0, -1
        byte = np.uint64(buf[pos])
        pos += 1
        raw |= (byte & _M7) << shift
        if byte < 0x80:
            if max_bytes == 5:
                raw &= _MASK32  # Java's int drops the rest
            value = int(np.int64(raw >> _ONE) ^ -np.int64(raw & _ONE))
            return value, pos
        shift += np.uint64(7)
    return 0, -1


@njit(cache=True, nogil=True, boundscheck=False)
def records_kernel(
    buf: Any,
    chunk_start: Any,
    chunk_end: Any,
    chunk_count: Any,
    chunk_base_offset: Any,
    chunk_base_timestamp: Any,
    chunk_append_time: Any,
    chunk_log_append: Any,
    low: int,
    high: int,
    out_offset: Any,
    out_timestamp: Any,
    out_type: Any,
    out_key_pos: Any,
    out_key_len: Any,
    out_value_pos: Any,
    out_value_len: Any,
    out_headers_pos: Any,
    out_headers_count: Any,
) -> tuple[int, int, int]:
    """Every record of every chunk whose offset is in ``[low, high)``, into the ``out_*`` arrays.

    A chunk is one batch's records section: ``buf[chunk_start:chunk_end]``, ``chunk_count`` records.
    Returns (records written, error code, index of the chunk with the error).
    """
    n = 0
    for c in range(chunk_start.shape[0]):
        pos = chunk_start[c]
        end = chunk_end[c]
        base_offset = chunk_base_offset[c]
        base_ts = chunk_base_timestamp[c]
        log_append = chunk_log_append[c]
        for _ in range(chunk_count[c]):
            if pos >= end:
                return n, ERR_COUNT, c
            length, body = _varint(buf, pos, end, 5)
            if body < 0:
                return n, ERR_TRUNCATED, c
            stop = body + length
            if length < 0 or stop > end:
                return n, ERR_TRUNCATED, c
            cursor = body + 1  # attributes
            ts_delta, cursor = _varint(buf, cursor, stop, 10)
            if cursor < 0:
                return n, ERR_TRUNCATED, c
            offset_delta, cursor = _varint(buf, cursor, stop, 5)
            if cursor < 0:
                return n, ERR_TRUNCATED, c
            key_len, cursor = _varint(buf, cursor, stop, 5)
            if cursor < 0:
                return n, ERR_TRUNCATED, c
            key_pos = cursor
            if key_len > 0:
                cursor += key_len
            value_len, cursor = _varint(buf, cursor, stop, 5)
            if cursor < 0:
                return n, ERR_TRUNCATED, c
            value_pos = cursor
            if value_len > 0:
                cursor += value_len
            header_count, cursor = _varint(buf, cursor, stop, 5)
            if cursor < 0:
                return n, ERR_TRUNCATED, c
            if header_count < 0 or header_count > stop - cursor:
                return n, ERR_HEADERS, c
            headers_pos = cursor
            for _h in range(header_count):
                hk_len, cursor = _varint(buf, cursor, stop, 5)
                if cursor < 0:
                    return n, ERR_TRUNCATED, c
                if hk_len < 0:
                    return n, ERR_HEADERS, c
                cursor += hk_len
                hv_len, cursor = _varint(buf, cursor, stop, 5)
                if cursor < 0:
                    return n, ERR_TRUNCATED, c
                if hv_len > 0:
                    cursor += hv_len
            if cursor != stop:
                return n, ERR_LENGTH, c
            pos = stop
            offset = base_offset + offset_delta
            if low <= offset < high:
                out_offset[n] = offset
                if log_append:
                    out_timestamp[n] = chunk_append_time[c]
                    out_type[n] = 1
                else:
                    out_timestamp[n] = base_ts + ts_delta  # wraps as Java's long does
                    out_type[n] = 0
                out_key_pos[n] = key_pos
                out_key_len[n] = key_len
                out_value_pos[n] = value_pos
                out_value_len[n] = value_len
                out_headers_pos[n] = headers_pos
                out_headers_count[n] = header_count
                n += 1
        if pos != end:
            return n, ERR_COUNT, c
    return n, ERR_NONE, -1


@njit(cache=True, nogil=True, boundscheck=False)
def gather_kernel(buf: Any, positions: Any, lengths: Any, out_offsets: Any, out_data: Any) -> None:
    """Arrow's binary layout of the fields at ``positions`` (``lengths`` < 0: null, no bytes):
    ``out_offsets`` (n + 1 int32) and the bytes, one after another, in ``out_data``."""
    at = 0
    out_offsets[0] = 0
    for i in range(positions.shape[0]):
        size = lengths[i]
        if size > 0:
            start = positions[i]
            out_data[at : at + size] = buf[start : start + size]
            at += size
        out_offsets[i + 1] = at


@njit(cache=True, nogil=True, boundscheck=False)
def headers_kernel(
    buf: Any,
    headers_pos: Any,
    headers_count: Any,
    out_key_pos: Any,
    out_key_len: Any,
    out_value_pos: Any,
    out_value_len: Any,
) -> None:
    """The key and value of every header of every record (already checked by :func:`records_kernel`)."""
    h = 0
    for i in range(headers_pos.shape[0]):
        cursor = headers_pos[i]
        end = buf.shape[0]
        for _ in range(headers_count[i]):
            key_len, cursor = _varint(buf, cursor, end, 5)
            out_key_pos[h] = cursor
            out_key_len[h] = key_len
            cursor += key_len
            value_len, cursor = _varint(buf, cursor, end, 5)
            out_value_pos[h] = cursor
            out_value_len[h] = value_len
            if value_len > 0:
                cursor += value_len
            h += 1
