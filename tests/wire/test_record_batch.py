"""The one RecordBatch v2 writer in Python (:mod:`kgroup.wire.record_batch`): the bytes it writes, as
Kafka's ``DefaultRecordBatch`` / ``DefaultRecord`` lay them out, pass the checks Kafka's broker runs on a
produced batch; its sizer agrees with its writer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kgroup.log.batch import HEADER_SIZE as LOG_HEADER_SIZE
from kgroup.log.batch import batch_crc_ok, parse_header, validate_produce_records
from kgroup.log.txn_index import COMMIT, control_batch, control_type
from kgroup.wire.record_batch import (
    CONTROL_MASK,
    HEADER_SIZE,
    TRANSACTIONAL_MASK,
    encode_record,
    record_batch,
    record_size,
)


def test_one_record_is_laid_out_as_kafkas_default_record() -> None:
    # length 8 (zig-zag 0x10), attributes 0, timestamp delta 0, offset delta 0, key length 1 (0x02),
    # "k", value length 1, "v", no headers
    assert encode_record(0, b"k", b"v") == bytes.fromhex("10 00 00 00 02 6b 02 76 00")
    # a tombstone and a null key are length -1 (zig-zag 0x01); offset delta 3 is 0x06
    assert encode_record(3, None, None) == bytes.fromhex("0c 00 00 06 01 01 00")


def test_a_batch_passes_kafkas_produce_checks_with_its_header_as_written() -> None:
    data = record_batch([(b"k", b"v"), (b"key", None)], 1_700_000_000_000)
    assert HEADER_SIZE == LOG_HEADER_SIZE == 61
    checked = validate_produce_records(data, max_message_bytes=2**20, log_append_time=False)
    header = checked.header
    assert (header.base_offset, header.records_count, header.last_offset_delta) == (0, 2, 1)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert (header.base_timestamp, header.max_timestamp, header.attributes) == (
        1_700_000_000_000,
        1_700_000_000_000,
        0,
    )
    assert data[HEADER_SIZE:] == encode_record(0, b"k", b"v") + encode_record(1, b"key", None)
    assert header.size == len(data)


def test_a_control_batch_is_transactional_and_control() -> None:
    data = control_batch(producer_id=5, producer_epoch=2, committed=True, coordinator_epoch=0, timestamp_ms=9)
    header = parse_header(data)
    assert header.attributes == TRANSACTIONAL_MASK | CONTROL_MASK
    assert (header.producer_id, header.producer_epoch, header.records_count) == (5, 2, 1)
    assert control_type(data) == COMMIT
    assert batch_crc_ok(data, header)  # (a producer may not send a control batch: no produce checks)


@given(
    delta=st.integers(0, 2**31 - 1),
    key=st.binary(max_size=300),
    value=st.binary(max_size=20_000),
)
def test_the_sizer_agrees_with_the_writer(delta: int, key: bytes, value: bytes) -> None:
    assert record_size(delta, len(key), len(value)) == len(encode_record(delta, key, value))
