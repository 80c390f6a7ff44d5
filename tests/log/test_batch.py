"""RecordBatch v2 checks on append (Kafka's codes) and what the log writes into a stored batch."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.log.batches import BASE_TIME_MS, client_batch, decode, kio_batch

from kgroup.log.batch import (
    HEADER_SIZE,
    batch_crc_ok,
    check_produce_records_shape,
    parse_header,
    record_timestamps,
    stamp_batch,
    validate_produce_records,
)
from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

MAX = 1024 * 1024 + 12


def validate(records: bytes, *, log_append_time: bool = False) -> object:
    return validate_produce_records(records, max_message_bytes=MAX, log_append_time=log_append_time)


def rejected(records: bytes, **kwargs: bool) -> int:
    with pytest.raises(PeerError) as info:
        validate_produce_records(records, max_message_bytes=MAX, log_append_time=kwargs.get("lat", False))
    return info.value.error_code


def with_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_header_fields_of_an_idempotent_batch() -> None:
    raw = kio_batch([b"a", b"b", b"c"], producer_id=7, producer_epoch=2, base_sequence=10)
    header = parse_header(raw)
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 2, 3)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 10)
    assert header.last_sequence == 12
    assert header.size == len(raw)
    assert batch_crc_ok(raw, header)


def test_a_valid_batch_passes_and_keeps_its_bytes() -> None:
    raw = kio_batch([b"x" * 100, b"y"])
    checked = validate_produce_records(raw, max_message_bytes=MAX, log_append_time=False)
    assert checked.data == raw
    assert checked.records_max_timestamp == BASE_TIME_MS + 1


def test_bad_crc_is_corrupt_message() -> None:
    raw = bytearray(kio_batch([b"hello"]))
    raw[-1] ^= 0x01
    assert rejected(bytes(raw)) == LogErrorCode.CORRUPT_MESSAGE


def test_bad_magic() -> None:
    raw = bytearray(kio_batch([b"hello"]))
    raw[16] = 1
    assert rejected(bytes(raw)) == LogErrorCode.INVALID_RECORD  # Produce v3+ takes magic v2 only
    raw[16] = 7
    assert rejected(bytes(raw)) == LogErrorCode.CORRUPT_MESSAGE  # no such magic at all


def test_length_below_minimum_overhead_is_corrupt() -> None:
    raw = bytearray(kio_batch([b"hello"]))
    struct.pack_into(">i", raw, 8, 5)
    assert rejected(bytes(raw)) == LogErrorCode.CORRUPT_MESSAGE


def test_truncated_batch_is_no_batch_at_all() -> None:
    raw = kio_batch([b"hello", b"world"])
    for cut in (0, 5, 12, 30, HEADER_SIZE, len(raw) - 1):
        assert rejected(raw[:cut]) == LogErrorCode.INVALID_RECORD


def test_trailing_partial_batch_is_ignored_as_kafka_trims_it() -> None:
    raw = kio_batch([b"hello"])
    checked = validate_produce_records(raw + raw[:20], max_message_bytes=MAX, log_append_time=False)
    assert checked.data == raw


def test_two_batches_in_one_partition_are_refused() -> None:
    raw = kio_batch([b"hello"])
    assert rejected(raw + raw) == LogErrorCode.INVALID_RECORD


def _shape(records: bytes, version: int | None = None) -> int:
    with pytest.raises(PeerError) as refused:
        check_produce_records_shape(records, version)
    return refused.value.error_code


def test_the_shape_check_is_kafkas_validate_records_in_its_order() -> None:
    raw = kio_batch([b"hello"])
    assert check_produce_records_shape(raw + raw[:20], 3) == len(raw)
    zstd = bytearray(raw)
    zstd[22] = (zstd[22] & ~0x07) | 4
    for version in (3, 6):  # zstd came with Produce v7
        assert _shape(bytes(zstd), version) == LogErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert check_produce_records_shape(bytes(zstd), 7) == len(raw)
    assert check_produce_records_shape(bytes(zstd)) == len(raw)  # no version: the codec is the log's
    # the first batch is judged before the second is read: a magic-1 first batch before a second
    # whose length is corrupt is INVALID_RECORD (the magic), as Kafka's iterator reads lazily
    magic1 = bytearray(raw)
    magic1[16] = 1
    corrupt = bytearray(raw)
    struct.pack_into(">i", corrupt, 8, 5)
    assert _shape(bytes(magic1) + bytes(corrupt), 9) == LogErrorCode.INVALID_RECORD
    assert _shape(raw + bytes(corrupt), 9) == LogErrorCode.CORRUPT_MESSAGE  # reading the second
    assert _shape(raw + raw, 9) == LogErrorCode.INVALID_RECORD
    assert _shape(raw[:30], 9) == LogErrorCode.INVALID_RECORD


def test_last_offset_delta_and_count_must_agree() -> None:
    raw = bytearray(kio_batch([b"a", b"b"]))
    struct.pack_into(">i", raw, 23, 5)  # lastOffsetDelta 5 but two records
    assert rejected(with_crc(raw)) == LogErrorCode.INVALID_RECORD
    raw = bytearray(kio_batch([b"a", b"b"]))
    struct.pack_into(">i", raw, 57, 0)  # count 0
    assert rejected(with_crc(raw)) == LogErrorCode.INVALID_RECORD


def test_declared_count_must_match_the_record_bytes() -> None:
    # three records' bytes under a header that says two: Kafka's iterator finds bytes left over
    three = bytearray(kio_batch([b"a", b"b", b"c"]))
    struct.pack_into(">i", three, 23, 1)
    struct.pack_into(">i", three, 57, 2)
    assert rejected(with_crc(three)) == LogErrorCode.INVALID_RECORD


def test_base_offset_must_be_zero() -> None:
    raw = bytearray(kio_batch([b"a"]))
    struct.pack_into(">q", raw, 0, 42)  # outside the CRC
    assert rejected(bytes(raw)) == LogErrorCode.INVALID_RECORD


def test_too_large_for_max_message_bytes() -> None:
    raw = kio_batch([b"x" * 2000])
    with pytest.raises(PeerError) as info:
        validate_produce_records(raw, max_message_bytes=1000, log_append_time=False)
    assert info.value.error_code == LogErrorCode.MESSAGE_TOO_LARGE


def test_control_transactional_and_sequence_rules() -> None:
    control = bytearray(kio_batch([b"a"]))
    struct.pack_into(">h", control, 21, 0x20)
    assert rejected(with_crc(control)) == LogErrorCode.INVALID_RECORD
    # a transactional batch is the log's to store (the broker checks it against its transaction first)
    transactional = bytearray(kio_batch([b"a"], producer_id=1, producer_epoch=0, base_sequence=0))
    struct.pack_into(">h", transactional, 21, 0x10)
    assert validate_produce_records(with_crc(transactional), max_message_bytes=10_000, log_append_time=False)
    no_producer = bytearray(kio_batch([b"a"]))
    struct.pack_into(">h", no_producer, 21, 0x10)
    assert rejected(with_crc(no_producer)) == LogErrorCode.INVALID_RECORD
    no_sequence = kio_batch([b"a"], producer_id=1, producer_epoch=0, base_sequence=-1)
    assert rejected(no_sequence) == LogErrorCode.INVALID_RECORD


def test_log_append_time_from_a_producer_on_a_log_append_time_topic() -> None:
    raw = bytearray(kio_batch([b"a"]))
    struct.pack_into(">h", raw, 21, 0x08)
    assert rejected(with_crc(raw), lat=True) == LogErrorCode.INVALID_TIMESTAMP


def test_stamp_sets_offset_and_epoch_outside_the_crc() -> None:
    raw = kio_batch([b"a", b"b"])
    stored = stamp_batch(validate(raw), base_offset=1234, leader_epoch=3, log_append_time_ms=None)  # type: ignore[arg-type]
    header = parse_header(stored)
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (1234, 3, 1235)
    assert stored[21:] == raw[21:]  # the CRC-covered bytes are the producer's
    assert batch_crc_ok(stored, header)
    assert [r[0] for r in decode(stored)] == [1234, 1235]


def test_stamp_log_append_time_rewrites_max_timestamp_and_crc() -> None:
    raw = kio_batch([b"a", b"b"])
    stored = stamp_batch(validate(raw), base_offset=0, leader_epoch=0, log_append_time_ms=99)  # type: ignore[arg-type]
    header = parse_header(stored)
    assert header.is_log_append_time and header.max_timestamp == 99
    assert batch_crc_ok(stored, header)
    assert [r[1] for r in decode(stored)] == [99, 99]  # a reader takes LogAppendTime for every record


def test_stamp_fixes_a_wrong_max_timestamp_of_an_uncompressed_batch() -> None:
    raw = bytearray(kio_batch([b"a", b"b"], timestamps=[BASE_TIME_MS, BASE_TIME_MS + 50]))
    struct.pack_into(">q", raw, 35, BASE_TIME_MS)  # producer's maxTimestamp understated
    checked = validate(with_crc(raw))
    stored = stamp_batch(checked, base_offset=0, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    assert parse_header(stored).max_timestamp == BASE_TIME_MS + 50
    assert batch_crc_ok(stored, parse_header(stored))  # recomputed over the new header and the records


def test_compressed_batch_is_kept_compressed() -> None:
    raw = client_batch([b"v" * 500] * 4)
    header = parse_header(raw)
    assert header.compression == 1  # gzip
    assert len(raw) < 500  # compressed
    stored = stamp_batch(validate(raw), base_offset=10, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    assert stored[21:] == raw[21:]
    assert [r[3] for r in decode(stored)] == [b"v" * 500] * 4
    assert record_timestamps(stored, parse_header(stored)) == [(10 + n, BASE_TIME_MS + n) for n in range(4)]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.binary(max_size=200), min_size=1, max_size=20),
    base=st.integers(0, 2**40),
    gzip=st.booleans(),
)
def test_any_batch_round_trips_through_validate_and_stamp(values: list[bytes], base: int, gzip: bool) -> None:
    raw = client_batch(values) if gzip else kio_batch(values)
    stored = stamp_batch(validate(raw), base_offset=base, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    decoded = decode(stored)
    assert [r[0] for r in decoded] == list(range(base, base + len(values)))
    assert [r[3] for r in decoded] == values


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_batches_raise_peer_error_or_pass_never_anything_else(data: st.DataObject) -> None:
    raw = bytearray(kio_batch([b"a" * 10, b"b" * 3], producer_id=5, producer_epoch=0, base_sequence=0))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        validate(bytes(raw[:cut]))
    except PeerError as error:
        assert error.error_code in set(LogErrorCode)


def test_a_gzip_bomb_is_not_inflated_for_a_timestamp_lookup() -> None:
    import gzip

    from kgroup.log import batch as batch_module

    raw = bytearray(client_batch([b"a"]))
    bomb = gzip.compress(b"\0" * (batch_module.MAX_INFLATED_BYTES + 1024))
    stored = bytearray(raw[:HEADER_SIZE]) + bomb
    struct.pack_into(">i", stored, 8, len(stored) - 12)
    struct.pack_into(">h", stored, 21, 1)  # gzip
    header = parse_header(with_crc(stored))
    assert record_timestamps(bytes(stored), header) is None


def test_garbage_inside_a_gzip_batch_is_refused_and_a_stored_one_leaves_lookups_at_the_batch() -> None:
    """Issue 17: records that do not parse inside a well-compressed payload are INVALID_RECORD, as
    Kafka's record iterator refuses them. Such a batch stored by an older kgroup is not readable
    record by record: a timestamp lookup stays at batch granularity."""
    import gzip

    raw = bytearray(client_batch([b"a"]))
    stored = bytearray(raw[:HEADER_SIZE]) + gzip.compress(b"\x7f" * 50)
    struct.pack_into(">i", stored, 8, len(stored) - 12)
    struct.pack_into(">h", stored, 21, 1)  # gzip
    with pytest.raises(PeerError) as refused:
        validate(with_crc(stored))
    assert refused.value.error_code == LogErrorCode.INVALID_RECORD
    assert record_timestamps(bytes(stored), parse_header(with_crc(stored))) is None


def test_timestamp_bounds_as_log_validator_checks_them() -> None:
    from kgroup.log.batch import TimestampBounds

    now = BASE_TIME_MS + 10_000
    raw = kio_batch([b"a", b"b"], timestamps=[BASE_TIME_MS, now + 500])

    def check(before: int | None, after: int | None, *, lat: bool = False, records: bytes = raw) -> object:
        try:
            validate_produce_records(
                records, max_message_bytes=MAX, log_append_time=lat, now_ms=now,
                bounds=TimestampBounds(before, after),
            )  # fmt: skip
        except PeerError as error:
            return error.error_code
        return None

    assert check(None, None) is None
    assert check(10_000, 500) is None  # both records exactly on the bounds
    assert check(9_999, None) == LogErrorCode.INVALID_TIMESTAMP  # the first record is too old
    assert check(None, 499) == LogErrorCode.INVALID_TIMESTAMP  # the second is too far ahead
    assert check(1, 1, lat=True) is None  # LogAppendTime topics overwrite timestamps: no check
    gzipped = client_batch([b"x" * 300, b"y" * 300], timestamp_ms=now + 2_000)
    assert check(None, 1_000, records=gzipped) == LogErrorCode.INVALID_TIMESTAMP  # from the header


_LONG = st.integers(-(2**63), 2**63 - 1)
_NEAR = st.integers(BASE_TIME_MS - 5_000, BASE_TIME_MS + 5_000)


@settings(max_examples=300, deadline=None)
@given(
    stamps=st.lists(st.one_of(_NEAR, st.just(-1), _LONG), min_size=1, max_size=6),
    now=st.one_of(_NEAR, _LONG),
    before=st.one_of(st.none(), st.integers(0, 10_000), _LONG.filter(lambda n: n >= 0)),
    after=st.one_of(st.none(), st.integers(0, 10_000), _LONG.filter(lambda n: n >= 0)),
)
def test_timestamp_bounds_refuse_exactly_the_records_out_of_range(
    stamps: list[int], now: int, before: int | None, after: int | None
) -> None:
    """Per record, in Java ``long`` arithmetic (``LogValidator.validateTimestamp``), whatever shortcut
    the check takes when every record is in range."""
    from kgroup.log.batch import TimestampBounds, _check_timestamp_bounds
    from kgroup.log.errors import RecordErrors
    from kgroup.log.records import RecordTimestamps, java_long

    limit_before = 2**63 - 1 if before is None else before
    limit_after = 2**63 - 1 if after is None else after
    expected = [
        index
        for index, stamp in enumerate(stamps)
        if stamp != -1
        and (java_long(now - stamp) > limit_before or java_long(-java_long(now - stamp)) > limit_after)
    ]
    entries = [(index, stamp) for index, stamp in enumerate(stamps)]
    # as the Python walk gives them, and as the numba kernel's arrays keep them
    arrays = (np.arange(len(stamps), dtype=np.int64), np.array(stamps, dtype=np.int64))
    for walked in (
        RecordTimestamps(entries),
        RecordTimestamps(None, arrays=arrays, oldest=min(stamps), newest=max(stamps)),
    ):
        try:
            _check_timestamp_bounds(walked, now, TimestampBounds(before, after))
        except RecordErrors as refused:
            assert [index for index, _message in refused.record_errors] == expected
        else:
            assert expected == []
