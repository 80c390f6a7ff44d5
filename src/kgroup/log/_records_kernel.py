"""numba kernel of :func:`kgroup.log.records.walk_records` (loaded by :func:`~kgroup.log.records.load_kernel`:
``kgroup serve`` loads it before it listens).

It reads what the Python walk reads, for well-formed records only: any record it cannot read the
usual way — a varint of more than 4 bytes, a length past its record or batch, a negative header count
or key size, bytes left over — makes it answer 1, and the caller walks the batch in Python, which
raises Kafka's error for it (or reads the long varints). So its answers never differ from the Python
walk's; it only gives them sooner. ``cache=True``: numba keeps the machine code in ``__pycache__``,
only the first process on a machine compiles it. Every byte read is checked against its record's end
(``boundscheck=False`` is safe: no index is used unchecked).
"""

from __future__ import annotations

from typing import Any

from kgroup._njit import njit

__all__ = ["walk_kernel"]


@njit(cache=True, nogil=True, boundscheck=False)
def _varint4(data: Any, position: int, stop: int) -> tuple[int, int]:
    """A zig-zag varint of at most 4 bytes at ``position`` before ``stop``: (value, next), next -1 if
    it is longer or runs past ``stop``."""
    raw = 0
    shift = 0
    for k in range(4):
        p = position + k
        if p >= stop:
            return 0, -1
        byte = int(data[p])
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), p + 1
        shift += 7
    return 0, -1


@njit(cache=True, nogil=True, boundscheck=False)
def walk_kernel(data: Any, start: int, count: int, offset_deltas: Any, timestamp_deltas: Any) -> int:
    """0 when ``count`` records fill ``data[start:]`` exactly, their offset and timestamp deltas
    written to the arrays; 1 when the Python walk must read them."""
    end = data.shape[0]
    position = start
    for i in range(count):
        length, body = _varint4(data, position, end)
        if body < 0 or length < 0 or body + length > end:
            return 1
        stop = body + length
        timestamp_delta, cursor = _varint4(data, body + 1, stop)  # after the attributes byte
        if cursor < 0:
            return 1
        offset_delta, cursor = _varint4(data, cursor, stop)
        if cursor < 0:
            return 1
        key_length, cursor = _varint4(data, cursor, stop)
        if cursor < 0:
            return 1
        if key_length > 0:
            cursor += key_length
        value_length, cursor = _varint4(data, cursor, stop)
        if cursor < 0:
            return 1
        if value_length > 0:
            cursor += value_length
        headers, cursor = _varint4(data, cursor, stop)
        if cursor < 0 or headers < 0 or headers > stop - cursor:
            return 1
        for _ in range(headers):
            key_size, cursor = _varint4(data, cursor, stop)
            if cursor < 0 or key_size < 0:
                return 1
            cursor += key_size
            value_size, cursor = _varint4(data, cursor, stop)
            if cursor < 0:
                return 1
            if value_size > 0:
                cursor += value_size
        if cursor != stop:
            return 1
        offset_deltas[i] = offset_delta
        timestamp_deltas[i] = timestamp_delta
        position = stop
    if position != end:
        return 1
    return 0
