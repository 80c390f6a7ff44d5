"""The records inside a RecordBatch v2, walked as Kafka's record iterators walk them.

A record (``DefaultRecord``) is::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint
    | (headerKeyLength varint | headerKey | headerValueLength varint | headerValue) * headerCount

:func:`walk_records` reads ``count`` of them and checks what ``DefaultRecord.readFrom`` and the batch
iterator check: each record's length against what its fields take and what is left, no negative
header count or header key length, and no bytes left after the declared count. Any failure is
``INVALID_RECORD``, the code Kafka answers for an ``InvalidRecordException`` from its iterator. Keys,
values and headers are skipped, not copied.

Timestamps are Java ``long`` arithmetic: ``baseTimestamp + timestampDelta`` wraps around at 2^63, as
it does in Kafka (a base of 2^63-1 with a delta of 2^62 is a negative timestamp there, not an error).
"""

from __future__ import annotations

from typing import Any

from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

__all__ = [
    "RecordTimestamps",
    "java_long",
    "kernel_loaded",
    "load_kernel",
    "walk_record_timestamps",
    "walk_records",
]

_LONG = 1 << 64
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_VARINT_MASK = (1 << 32) - 1
_VARLONG_MASK = (1 << 64) - 1


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's ``long`` arithmetic wraps it."""
    return (value - _LONG_MIN) % _LONG + _LONG_MIN


def _invalid(message: str) -> PeerError:
    return PeerError(message, LogErrorCode.INVALID_RECORD)


def _varint(data: bytes | memoryview, position: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zig-zag varint (``ByteUtils.readVarint``/``readVarlong``) at ``position``: (value, next)."""
    raw = 0
    shift = 0
    for index in range(max_bytes):
        if position + index >= end:
            raise _invalid("Found invalid record structure (the record ends inside a varint)")
        byte = data[position + index]
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            raw &= _VARINT_MASK if max_bytes == 5 else _VARLONG_MASK  # Java's int/long drop the rest
            return (raw >> 1) ^ -(raw & 1), position + index + 1
        shift += 7
    raise _invalid("Found invalid record structure (a varint is longer than its maximum size)")


class RecordTimestamps:
    """What a walk of a batch's records read: each record's (offset delta, timestamp), and the
    oldest and newest timestamp (None without records).

    The numba kernel's walk keeps them in its arrays, the bounds taken there: a validated batch of a
    thousand records needs no Python object per record unless a record is out of range and
    :meth:`entries` is asked for.
    """

    __slots__ = ("_entries", "_offsets", "_timestamps", "newest", "oldest")

    def __init__(
        self,
        entries: list[tuple[int, int]] | None,
        *,
        arrays: tuple[Any, Any] | None = None,
        oldest: int | None = None,
        newest: int | None = None,
    ) -> None:
        self._entries = entries
        self._offsets: Any = None  # the kernel's numpy arrays, when it read the records
        self._timestamps: Any = None
        if arrays is not None:
            self._offsets, self._timestamps = arrays
        if entries is not None:
            stamps = [stamp for _, stamp in entries]
            oldest, newest = (min(stamps), max(stamps)) if stamps else (None, None)
        self.oldest: int | None = oldest
        self.newest: int | None = newest

    def entries(self) -> list[tuple[int, int]]:
        """(offset delta, timestamp) of every record, in order."""
        if self._entries is None:
            self._entries = list(zip(self._offsets.tolist(), self._timestamps.tolist(), strict=True))
        return self._entries


def walk_records(
    data: bytes | memoryview, start: int, count: int, base_timestamp: int, log_append_time: int | None
) -> list[tuple[int, int]]:
    """(offset delta, timestamp) of each of the ``count`` records in ``data[start:]``: the entries of
    :func:`walk_record_timestamps`."""
    return walk_record_timestamps(data, start, count, base_timestamp, log_append_time).entries()


def walk_record_timestamps(
    data: bytes | memoryview, start: int, count: int, base_timestamp: int, log_append_time: int | None
) -> RecordTimestamps:
    """(offset delta, timestamp) of each of the ``count`` records in ``data[start:]``.

    ``log_append_time`` (a LogAppendTime batch's max timestamp) is every record's timestamp, as in
    Kafka's iterator. Raises :class:`PeerError` (INVALID_RECORD) for records Kafka refuses to read.

    The produce path walks every record of every batch, so the varints that fit in one byte (small
    deltas, null keys, header counts) and the lengths and deltas that fit in two (up to 8191) are read
    inline here; longer ones, and any varint at the edge of its record, go through :func:`_varint`,
    which raises Kafka's errors. Both give the same values.
    """
    if (
        _KERNEL_MIN_RECORDS <= count <= len(data) - start
        and -_NO_WRAP < base_timestamp < _NO_WRAP
        and _kernel is not None
    ):
        read = _walk_kernel(data, start, count, base_timestamp, log_append_time)
        if read is not None:
            return read
    entries: list[tuple[int, int]] = []
    append = entries.append
    position = start
    end = len(data)
    varint = _varint
    for _ in range(count):
        if position >= end:
            raise _invalid("Incorrect declared batch size, premature EOF reached")
        byte = data[position]
        if byte < 0x80:
            length, body = (byte >> 1) ^ -(byte & 1), position + 1
        elif position + 1 < end and data[position + 1] < 0x80:
            raw = (byte & 0x7F) | (data[position + 1] << 7)
            length, body = (raw >> 1) ^ -(raw & 1), position + 2
        else:
            length, body = varint(data, position, end, 5)
        if length < 0 or body + length > end:
            raise _invalid(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {end - body} remaining bytes."
            )
        stop = body + length
        cursor = body + 1  # attributes
        if cursor < stop and (byte := data[cursor]) < 0x80:
            timestamp_delta, cursor = (byte >> 1) ^ -(byte & 1), cursor + 1
        elif cursor + 1 < stop and (byte := data[cursor]) & 0x80 and data[cursor + 1] < 0x80:
            raw = (byte & 0x7F) | (data[cursor + 1] << 7)
            timestamp_delta, cursor = (raw >> 1) ^ -(raw & 1), cursor + 2
        else:
            timestamp_delta, cursor = varint(data, cursor, stop, 10)
        if cursor < stop and (byte := data[cursor]) < 0x80:
            offset_delta, cursor = (byte >> 1) ^ -(byte & 1), cursor + 1
        elif cursor + 1 < stop and (byte := data[cursor]) & 0x80 and data[cursor + 1] < 0x80:
            raw = (byte & 0x7F) | (data[cursor + 1] << 7)
            offset_delta, cursor = (raw >> 1) ^ -(raw & 1), cursor + 2
        else:
            offset_delta, cursor = varint(data, cursor, stop, 5)
        if cursor < stop and (byte := data[cursor]) < 0x80:
            key_length, cursor = (byte >> 1) ^ -(byte & 1), cursor + 1
        else:
            key_length, cursor = varint(data, cursor, stop, 5)
        if key_length > 0:
            cursor += key_length
        if cursor < stop and (byte := data[cursor]) < 0x80:
            value_length, cursor = (byte >> 1) ^ -(byte & 1), cursor + 1
        elif cursor + 1 < stop and (byte := data[cursor]) & 0x80 and data[cursor + 1] < 0x80:
            raw = (byte & 0x7F) | (data[cursor + 1] << 7)
            value_length, cursor = (raw >> 1) ^ -(raw & 1), cursor + 2
        else:
            value_length, cursor = varint(data, cursor, stop, 5)
        if value_length > 0:
            cursor += value_length
        if cursor < stop and (byte := data[cursor]) < 0x80:
            headers, cursor = (byte >> 1) ^ -(byte & 1), cursor + 1
        else:
            headers, cursor = varint(data, cursor, stop, 5)
        if headers:
            cursor = _skip_headers(data, cursor, stop, headers)
        if cursor != stop:
            raise _invalid(
                f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                f"read {cursor - body}"
            )
        if log_append_time is None:
            stamp = base_timestamp + timestamp_delta
            if not _LONG_MIN <= stamp <= _LONG_MAX:
                stamp = java_long(stamp)
            append((offset_delta, stamp))
        else:
            append((offset_delta, log_append_time))
        position = stop
    if position != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return RecordTimestamps(entries)


#: from this many records on, a batch is walked by the compiled kernel first, once it is loaded
#: (below, setting up its arrays costs more than it saves)
_KERNEL_MIN_RECORDS = 16
#: a base timestamp of smaller magnitude plus a delta the kernel reads (under 2^27) cannot overflow
_NO_WRAP = 1 << 62


_kernel: Any = None


def kernel_loaded() -> bool:
    """Whether :func:`walk_records` uses the numba kernel (after :func:`load_kernel`)."""
    return _kernel is not None


def load_kernel() -> Any:
    """The numba kernel of :func:`walk_records`, loaded now if it is not yet; from then on every batch
    of many records is walked by it first. Loading imports numba and reads the kernel's cached machine
    code (compiled once per machine): a second or more of CPU holding the GIL, so ``kgroup serve``
    does it before it listens, never while requests wait."""
    global _kernel
    if _kernel is None:
        import numpy as np

        from kgroup.log._records_kernel import walk_kernel

        # numba compiles (or reads from its cache) on the first call: make it now, with the argument
        # types of every later call (a read-only byte array of the request's bytes)
        none = np.empty(0, np.int64)
        walk_kernel(np.frombuffer(b"", np.uint8), 0, 0, none, none)
        _kernel = walk_kernel
    return _kernel


def _walk_kernel(
    data: bytes | memoryview, start: int, count: int, base_timestamp: int, log_append_time: int | None
) -> RecordTimestamps | None:
    """What :func:`walk_record_timestamps` answers, from the numba kernel, kept in its arrays; None
    when it leaves the batch to the Python walk (a malformed record, a varint over 4 bytes)."""
    import numpy as np

    walk_kernel = load_kernel()
    offset_deltas = np.empty(count, np.int64)
    timestamp_deltas = np.empty(count, np.int64)
    if walk_kernel(np.frombuffer(data, np.uint8), start, count, offset_deltas, timestamp_deltas) != 0:
        return None
    if log_append_time is not None:
        timestamps = np.full(count, log_append_time, np.int64)
    else:  # |base| < 2^62 and a delta read in 4 varint bytes is under 2^27: no int64 wraps
        timestamps = timestamp_deltas + base_timestamp
    return RecordTimestamps(
        None,
        arrays=(offset_deltas, timestamps),
        oldest=int(timestamps.min()),
        newest=int(timestamps.max()),
    )


def _walk_compiled(
    data: bytes | memoryview, start: int, count: int, base_timestamp: int, log_append_time: int | None
) -> list[tuple[int, int]] | None:
    """The entries :func:`_walk_kernel` read, or None (its tests' view)."""
    read = _walk_kernel(data, start, count, base_timestamp, log_append_time)
    return None if read is None else read.entries()


def _skip_headers(data: bytes | memoryview, cursor: int, stop: int, headers: int) -> int:
    """Past ``headers`` record headers from ``cursor`` (``DefaultRecord.readHeaders``' checks)."""
    if headers < 0:
        raise _invalid(f"Found invalid number of record headers {headers}")
    if headers > stop - cursor:
        raise _invalid(
            f"Found invalid number of record headers. {headers} is larger than the remaining size "
            "of the buffer"
        )
    for _ in range(headers):
        header_key_length, cursor = _varint(data, cursor, stop, 5)
        if header_key_length < 0:
            raise _invalid(f"Invalid negative header key size {header_key_length}")
        cursor += header_key_length
        header_value_length, cursor = _varint(data, cursor, stop, 5)
        if header_value_length > 0:
            cursor += header_value_length
    return cursor
