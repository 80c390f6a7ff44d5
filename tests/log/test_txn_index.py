"""A partition's transactions (``kgroup.log.txn_index``): markers as Kafka writes them, the last stable
offset, the aborted transactions a read_committed fetch is told of, and all of it rebuilt when the log
opens again."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from tests.log.batches import DefaultRecordBatch, kio_batch
from tests.log.conftest import OpenLog

from kgroup.log.batch import parse_header
from kgroup.log.errors import LogErrorCode
from kgroup.log.txn_index import ABORT, COMMIT, AbortedTxn, control_batch, control_type
from kgroup.model import PeerError


def _txn_batch(pid: int, epoch: int, sequence: int, *values: bytes) -> bytes:
    batch = bytearray(kio_batch(list(values), producer_id=pid, producer_epoch=epoch, base_sequence=sequence))
    struct.pack_into(">h", batch, 21, 0x10)  # transactional
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


@pytest.mark.parametrize("committed", [True, False])
def test_a_marker_is_kafkas_control_batch(committed: bool) -> None:
    data = control_batch(7, 3, committed, 11, 1_700_000_000_000)
    header = parse_header(data)
    assert (header.is_control, header.is_transactional, header.producer_id, header.producer_epoch) == (
        True,
        True,
        7,
        3,
    )
    assert (header.base_sequence, header.records_count, header.last_offset_delta) == (-1, 1, 0)
    assert control_type(data) == (COMMIT if committed else ABORT)
    # read by another reader (kafka-python's): a control batch whose CRC holds, its record's key and
    # value Kafka's EndTransactionMarker (version 0, the type; version 0, the coordinator epoch)
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    [record] = list(batch)
    assert record.key == struct.pack(">hh", 0, COMMIT if committed else ABORT)
    assert record.value == struct.pack(">hi", 0, 11)


def test_last_stable_offset_and_aborted_transactions(open_log: OpenLog) -> None:
    log = open_log()
    log.append(kio_batch([b"plain"]), now_ms=0)  # offset 0, no transaction
    log.append(_txn_batch(1, 0, 0, b"a", b"b"), now_ms=0)  # 1-2: producer 1 opens
    log.append(_txn_batch(2, 0, 0, b"c"), now_ms=0)  # 3: producer 2 opens
    assert (log.last_stable_offset, log.high_watermark) == (1, 4)
    log.append_marker(1, 0, False, 0, now_ms=0)  # 4: producer 1 aborts
    assert log.last_stable_offset == 3
    log.append(_txn_batch(1, 0, 2, b"d"), now_ms=0)  # 5: producer 1 opens again (same epoch: v1)
    log.append_marker(2, 0, True, 0, now_ms=0)  # 6: producer 2 commits
    assert log.last_stable_offset == 5
    log.append_marker(1, 0, True, 0, now_ms=0)  # 7
    assert (log.last_stable_offset, log.log_end_offset) == (8, 8)
    assert log.transactions.aborted == [AbortedTxn(1, 1, 4)]
    assert log.transactions.aborted_between(0, 8) == [AbortedTxn(1, 1, 4)]
    assert log.transactions.aborted_between(5, 8) == []  # its marker is before the fetch
    assert log.transactions.aborted_between(0, 1) == []  # its first record is after the fetch
    before = (log.transactions.ongoing, log.transactions.aborted, log.last_stable_offset)

    reopened = open_log()
    assert (
        reopened.transactions.ongoing,
        reopened.transactions.aborted,
        reopened.last_stable_offset,
    ) == before
    # the producer state kept its sequence across the markers: the next batch follows the last data one
    reopened.append(_txn_batch(1, 0, 3, b"e"), now_ms=0)
    assert reopened.last_stable_offset == 8


def test_a_marker_of_an_older_epoch_is_refused(open_log: OpenLog) -> None:
    log = open_log()
    log.append(_txn_batch(1, 2, 0, b"a"), now_ms=0)
    with pytest.raises(PeerError) as refused:
        log.append_marker(1, 1, True, 0, now_ms=0)
    assert refused.value.error_code == LogErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 1 and log.last_stable_offset == 0
    log.append_marker(1, 3, False, 0, now_ms=0)  # a newer epoch (a fenced producer's abort)
    assert log.last_stable_offset == 2
    # the zombie's next batch at its old epoch is refused by the producer state
    with pytest.raises(PeerError) as zombie:
        log.append(_txn_batch(1, 2, 1, b"b"), now_ms=0)
    assert zombie.value.error_code == LogErrorCode.INVALID_PRODUCER_EPOCH


def test_a_client_control_batch_is_still_refused(open_log: OpenLog) -> None:
    with pytest.raises(PeerError) as refused:
        open_log().append(control_batch(1, 0, True, 0, 0), now_ms=0)
    assert refused.value.error_code == LogErrorCode.INVALID_RECORD
