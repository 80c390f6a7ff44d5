"""Compressed batches are inflated and their records checked on append, as Kafka's LogValidator does
(issue 17: random payloads flagged gzip/snappy/lz4/zstd, unknown codecs, an empty gzip payload and
a count of 2^31-1 used to be stored and then stalled every consumer of the partition)."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from tests.log.batches import BASE_TIME_MS
from tests.log.hostile_batches import (
    HOSTILE,
    LONG_MAX,
    VALID,
    batch,
    compressed,
    kafka_lz4,
    record,
    zigzag,
)

from kgroup.log.batch import (
    MAX_INFLATED_BYTES,
    TimestampBounds,
    parse_header,
    record_timestamps,
    stamp_batch,
    validate_produce_records,
)
from kgroup.log.codecs import UndecodablePayload, inflate, xxhash32
from kgroup.log.errors import LogErrorCode, RecordErrors
from kgroup.model import PeerError

MAX = 1 << 20
HOUR = 3_600_000


def _validate(records: bytes, *, now_ms: int = BASE_TIME_MS, after: int | None = HOUR) -> object:
    bounds = TimestampBounds(None, after)
    return validate_produce_records(
        records, max_message_bytes=MAX, log_append_time=False, now_ms=now_ms, bounds=bounds
    )


def _code(records: bytes) -> int:
    try:
        _validate(records)
    except PeerError as error:
        return error.error_code
    return 0


@pytest.mark.parametrize("case", list(HOSTILE))
def test_each_hostile_batch_gets_kafkas_answer(case: str) -> None:
    records, kafka_code = HOSTILE[case]
    assert _code(records) == kafka_code


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_is_read_record_by_record(codec: int) -> None:
    checked = _validate(VALID[codec])
    stored = stamp_batch(checked, base_offset=100, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    assert stored[21:] == VALID[codec][21:]  # kept exactly as produced (its maxTimestamp was right)
    header = parse_header(stored)
    # timestamp lookups are exact for every codec now (snappy, lz4, zstd stopped at the batch)
    assert record_timestamps(stored, header) == [
        (100, BASE_TIME_MS),
        (101, BASE_TIME_MS + 7),
        (102, BASE_TIME_MS + 3),
    ]


def test_a_compressed_batch_gets_its_true_max_timestamp_as_in_kafka() -> None:
    payload = compressed(4, record(timestamp_delta=5) + record(timestamp_delta=9, offset_delta=1))
    understated = batch(payload, codec=4, count=2, max_timestamp=BASE_TIME_MS)
    stored = stamp_batch(_validate(understated), base_offset=0, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    assert parse_header(stored).max_timestamp == BASE_TIME_MS + 9


def test_a_wrapped_timestamp_is_stored_as_kafka_stores_it() -> None:
    """base 2^63-1 + delta 2^62 is -4611686018427387905 in Java's long: accepted (no bound for the
    past), and maxTimestamp becomes -1, as Kafka's starts at NO_TIMESTAMP and no record is above it
    (Apache Kafka 4.4.0 stores exactly this)."""
    records, _ = HOSTILE["timestamp 2^63-1 + 2^62 (wraps)"]
    stored = stamp_batch(_validate(records), base_offset=0, leader_epoch=0, log_append_time_ms=None)  # type: ignore[arg-type]
    header = parse_header(stored)
    assert (header.base_timestamp, header.max_timestamp) == (LONG_MAX, -1)
    assert record_timestamps(stored, header) == [(0, LONG_MAX + 2**62 - 2**64)]


def test_an_out_of_range_timestamp_lists_each_record_as_kafka_does() -> None:
    now = BASE_TIME_MS
    two = record(timestamp_delta=0) + record(timestamp_delta=2 * HOUR, offset_delta=1)
    records = batch(two, count=2, base_timestamp=now)
    with pytest.raises(RecordErrors) as refused:
        _validate(records, now_ms=now)
    assert refused.value.error_code == LogErrorCode.INVALID_TIMESTAMP
    assert refused.value.message == "One or more records have been rejected due to invalid timestamp"
    assert refused.value.record_errors == (
        (
            1,
            f"Timestamp {now + 2 * HOUR} of message with offset 1 is out of range. The timestamp should be "
            f"within [{now - LONG_MAX}, {now + HOUR}]",
        ),
    )


def test_a_bomb_is_refused_without_taking_its_memory() -> None:
    zeros = record(b"\0" * (MAX_INFLATED_BYTES + 1024))
    for codec in (1, 4):  # gzip and zstd inflate ~1000x and more
        payload = compressed(codec, zeros)
        assert len(payload) < MAX
        with pytest.raises(PeerError, match="inflates to more than") as refused:
            _validate(batch(payload, codec=codec))
        assert refused.value.error_code == LogErrorCode.INVALID_RECORD


def test_gzip_members_concatenated_and_trailing_bytes_as_java_reads_them() -> None:
    one, two = record(b"a"), record(b"b", offset_delta=1)
    assert inflate(1, gzip.compress(one) + gzip.compress(two) + b"junk", MAX) == one + two


def test_lz4_frames_as_kafka_reads_them() -> None:
    data = record(b"x" * 100)
    assert inflate(3, kafka_lz4(data), MAX) == data
    framed = bytearray(kafka_lz4(data))
    framed[6] ^= 0xFF  # the header checksum
    with pytest.raises(UndecodablePayload, match="frame descriptor corrupted"):
        inflate(3, bytes(framed), MAX)
    # a block checksum, when flagged, is checked
    descriptor = bytes([0x70, 0x40])
    block = bytes(cramjam.lz4.compress_block(data, store_size=False))
    head = struct.pack("<I", 0x184D2204) + descriptor + bytes([(xxhash32(descriptor) >> 8) & 0xFF])
    good = head + struct.pack("<I", len(block)) + block + struct.pack("<I", xxhash32(block)) + b"\0" * 4
    assert inflate(3, good, MAX) == data
    bad = head + struct.pack("<I", len(block)) + block + struct.pack("<I", xxhash32(block) ^ 1) + b"\0" * 4
    with pytest.raises(UndecodablePayload, match="Block checksum mismatch"):
        inflate(3, bad, MAX)


def test_xxhash32_matches_the_reference_vectors() -> None:
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"a") == 0x550D7456
    assert xxhash32(b"abc") == 0x32D153FF
    assert xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_snappy_raw_and_xerial_framed() -> None:
    data = record(b"s" * 1000)
    assert inflate(2, bytes(cramjam.snappy.compress_raw(data)), MAX) == data
    assert inflate(2, compressed(2, data), MAX) == data


def test_records_are_walked_as_kafkas_iterator_reads_them() -> None:
    headers = zigzag(2) + zigzag(1) + b"h" + zigzag(-1) + zigzag(2) + b"k2" + zigzag(1) + b"v"
    body = bytes([0]) + zigzag(0) + zigzag(0) + zigzag(-1) + zigzag(1) + b"v" + headers
    ok = zigzag(len(body)) + body
    assert _code(batch(ok)) == 0
    assert _code(batch(compressed(4, ok), codec=4)) == 0
    short = zigzag(len(body) + 1) + body + b"\0"  # the declared length is one byte more than read
    assert _code(batch(short)) == LogErrorCode.INVALID_RECORD
    negative_key = bytes([0]) + zigzag(0) * 2 + zigzag(-1) + zigzag(-1) + zigzag(1) + zigzag(-2)
    assert _code(batch(zigzag(len(negative_key)) + negative_key)) == LogErrorCode.INVALID_RECORD
