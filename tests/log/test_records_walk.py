"""``walk_records``' fast paths — inline varint reads, the numba kernel — give what the plain walk
(one ``_varint`` call per field, the walker before the fast paths) gives: the same entries for every
record, the same error for every malformed one.

Records are encoded here field by field, with varints of every width (including non-minimal encodings,
which Kafka's ``ByteUtils`` reads too), then damaged at random (a byte overwritten, the buffer cut, the
declared count off by one).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.log import records as records_module
from kgroup.log.records import (
    _invalid,
    _varint,
    _walk_compiled,
    java_long,
    walk_record_timestamps,
    walk_records,
)
from kgroup.model import PeerError


def _reference_walk(
    data: bytes, start: int, count: int, base_timestamp: int, log_append_time: int | None
) -> list[tuple[int, int]]:
    """The plain walk: every varint through ``_varint``; the checks of ``DefaultRecord.readFrom``."""
    entries: list[tuple[int, int]] = []
    position, end = start, len(data)
    for _ in range(count):
        if position >= end:
            raise _invalid("Incorrect declared batch size, premature EOF reached")
        length, body = _varint(data, position, end, 5)
        if length < 0 or body + length > end:
            raise _invalid(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {end - body} remaining bytes."
            )
        stop = body + length
        cursor = body + 1
        timestamp_delta, cursor = _varint(data, cursor, stop, 10)
        offset_delta, cursor = _varint(data, cursor, stop, 5)
        key_length, cursor = _varint(data, cursor, stop, 5)
        cursor += max(key_length, 0)
        value_length, cursor = _varint(data, cursor, stop, 5)
        cursor += max(value_length, 0)
        headers, cursor = _varint(data, cursor, stop, 5)
        if headers < 0:
            raise _invalid(f"Found invalid number of record headers {headers}")
        if headers > stop - cursor:
            raise _invalid(
                f"Found invalid number of record headers. {headers} is larger than the remaining size "
                "of the buffer"
            )
        for _ in range(headers):
            key_size, cursor = _varint(data, cursor, stop, 5)
            if key_size < 0:
                raise _invalid(f"Invalid negative header key size {key_size}")
            cursor += key_size
            value_size, cursor = _varint(data, cursor, stop, 5)
            cursor += max(value_size, 0)
        if cursor != stop:
            raise _invalid(
                f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                f"read {cursor - body}"
            )
        if log_append_time is None:
            entries.append((offset_delta, java_long(base_timestamp + timestamp_delta)))
        else:
            entries.append((offset_delta, log_append_time))
        position = stop
    if position != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return entries


def _varint_bytes(value: int, bits: int, extra: int) -> bytes:
    """Zig-zag ``value``, then ``extra`` more continuation bytes than needed (a non-minimal encoding)."""
    raw = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while True:
        byte = raw & 0x7F
        raw >>= 7
        if raw or extra:
            out.append(byte | 0x80)
            if not raw:
                extra -= 1
        else:
            out.append(byte)
            return bytes(out)


# short blobs (one-byte length varints) and long ones up to past 8 KiB (two and three bytes)
_blob = st.one_of(st.none(), st.binary(max_size=40), st.integers(41, 8300).map(lambda n: b"\x07" * n))
_record = st.tuples(
    st.integers(-(2**40), 2**40),  # timestamp delta
    st.integers(0, 2**20),  # offset delta
    _blob,  # key
    _blob,  # value
    st.lists(st.tuples(st.binary(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=3),
    st.integers(0, 1),  # extra varint bytes
)


Spec = tuple[int, int, bytes | None, bytes | None, list[tuple[bytes, bytes | None]], int]


def _encode(record: Spec) -> bytes:
    stamp, offset, key, value, headers, extra = record
    body = bytearray(b"\x00")
    body += _varint_bytes(stamp, 64, extra) + _varint_bytes(offset, 32, extra)
    for blob in (key, value):
        body += _varint_bytes(-1 if blob is None else len(blob), 32, extra) + (blob or b"")
    body += _varint_bytes(len(headers), 32, extra)
    for name, content in headers:
        body += _varint_bytes(len(name), 32, 0) + name
        body += _varint_bytes(-1 if content is None else len(content), 32, 0) + (content or b"")
    return _varint_bytes(len(body), 32, extra) + bytes(body)


def _outcome(walk: Callable[..., list[tuple[int, int]]], *args: object) -> object:
    try:
        return walk(*args)
    except PeerError as exc:
        return ("error", exc.error_code, exc.message)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(_record, min_size=1, max_size=6),
    base=st.one_of(st.integers(-(2**63), 2**63 - 1), st.just(1_700_000_000_000)),
    append_time=st.one_of(st.none(), st.just(1_700_000_000_123)),
    damage=st.one_of(
        st.none(),
        st.tuples(st.just("byte"), st.integers(0, 10_000), st.integers(0, 255)),
        st.tuples(st.just("cut"), st.integers(0, 10_000), st.just(0)),
        st.tuples(st.just("count"), st.sampled_from([-1, 1]), st.just(0)),
    ),
    compiled=st.booleans(),
)
def test_fast_walk_equals_the_plain_walk(
    records: list[Spec],
    base: int,
    append_time: int | None,
    damage: tuple[str, int, int] | None,
    compiled: bool,
) -> None:
    prefix = b"\xff" * 7  # records start after a header in a batch
    data = prefix + b"".join(_encode(r) for r in records)
    count = len(records)
    if damage is not None:
        kind, where, value = damage
        if kind == "byte":
            spot = len(prefix) + where % (len(data) - len(prefix))
            data = data[:spot] + bytes([value]) + data[spot + 1 :]
        elif kind == "cut":
            data = data[: len(prefix) + where % (len(data) - len(prefix))]
        else:
            count = max(count + where, 0)
    args = (data, len(prefix), count, base, append_time)
    # the numba kernel for every batch, or for none
    records_module.load_kernel()
    saved = records_module._KERNEL_MIN_RECORDS
    records_module._KERNEL_MIN_RECORDS = 1 if compiled else 1 << 40
    try:
        expected = _outcome(_reference_walk, *args)
        assert _outcome(walk_records, *args) == expected
        if isinstance(expected, list):  # the bounds the produce path checks, from the kernel's arrays too
            walked = walk_record_timestamps(*args)  # type: ignore[arg-type]
            stamps = [stamp for _, stamp in expected]
            assert (walked.oldest, walked.newest) == (min(stamps), max(stamps))
    finally:
        records_module._KERNEL_MIN_RECORDS = saved


def test_an_undamaged_walk_gives_every_record() -> None:
    records = [(-5, 0, None, b"x" * 1024, [], 0), (3, 1, b"k", b"", [(b"h", None)], 1),
               (2**40, 2, b"k" * 9000, None, [], 0)]
    data = b"".join(_encode(r) for r in records)
    assert walk_records(data, 0, 3, 1_000, None) == [(0, 995), (1, 1_003), (2, 1_000 + 2**40)]
    assert walk_records(data, 0, 3, 1_000, 77) == [(0, 77), (1, 77), (2, 77)]


def test_the_kernel_reads_a_batch_of_many_records_and_leaves_long_varints_to_python() -> None:
    records = [(n % 7 - 3, n, None, b"v" * 1024, [(b"h", b"x")] if n % 5 == 0 else [], 0) for n in range(40)]
    data = b"".join(_encode(r) for r in records)
    read = _walk_compiled(data, 0, 40, 1_000, None)
    assert read == [(n, 1_000 + n % 7 - 3) for n in range(40)]
    assert read == _reference_walk(data, 0, 40, 1_000, None)
    # a timestamp delta of 5 varint bytes: the kernel declines, the Python walk reads it
    far = [(2**40, 0, None, b"v", [], 0), *records[1:]]
    data = b"".join(_encode(r) for r in far)
    assert _walk_compiled(data, 0, 40, 1_000, None) is None
    assert walk_records(data, 0, 40, 1_000, None)[0] == (0, 1_000 + 2**40)
