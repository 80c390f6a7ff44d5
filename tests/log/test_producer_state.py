"""Idempotent producers on a partition log: duplicates, sequence and epoch errors, state after reopen."""

from __future__ import annotations

import pytest
from tests.log.batches import decode, kio_batch
from tests.log.conftest import OpenLog

from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

PID = 1000


def batch(sequence: int, count: int = 2, *, epoch: int = 0, pid: int = PID) -> bytes:
    return kio_batch([b"s%d" % (sequence + i) for i in range(count)], producer_id=pid, producer_epoch=epoch,
                     base_sequence=sequence)  # fmt: skip


def error_of(log: object, raw: bytes) -> int:
    with pytest.raises(PeerError) as info:
        log.append(raw, now_ms=1)  # type: ignore[attr-defined]
    return info.value.error_code


def test_a_retried_batch_is_acknowledged_with_its_original_offsets(open_log: OpenLog) -> None:
    log = open_log()
    log.append(kio_batch([b"other"]), now_ms=1)
    first = log.append(batch(0), now_ms=1)
    again = log.append(batch(0), now_ms=1)
    assert again.duplicate
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset)
    assert log.log_end_offset == 3  # not appended twice
    assert len(decode(log.read(0, 1 << 20))) == 3


def test_any_of_the_last_five_batches_is_a_duplicate_but_not_the_sixth(open_log: OpenLog) -> None:
    log = open_log()
    results = [log.append(batch(2 * n), now_ms=1) for n in range(6)]
    for n in range(1, 6):
        duplicate = log.append(batch(2 * n), now_ms=1)
        assert duplicate.duplicate and duplicate.base_offset == results[n].base_offset
    assert error_of(log, batch(0)) == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # fell out of the five
    assert log.log_end_offset == 12


def test_out_of_order_sequence(open_log: OpenLog) -> None:
    log = open_log()
    log.append(batch(0), now_ms=1)
    assert error_of(log, batch(3)) == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
    assert error_of(log, batch(1)) == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # overlaps, not a retry
    assert log.append(batch(2), now_ms=1).base_offset == 2
    assert log.log_end_offset == 4


def test_epochs(open_log: OpenLog) -> None:
    log = open_log()
    log.append(batch(0, epoch=3), now_ms=1)
    assert error_of(log, batch(2, epoch=2)) == LogErrorCode.INVALID_PRODUCER_EPOCH  # fenced
    assert error_of(log, batch(2, epoch=4)) == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch not at 0
    assert not log.append(batch(0, epoch=4), now_ms=1).duplicate  # a new epoch starts over at 0
    assert error_of(log, batch(2, epoch=3)) == LogErrorCode.INVALID_PRODUCER_EPOCH


def test_a_first_batch_may_start_anywhere_and_producers_are_independent(open_log: OpenLog) -> None:
    log = open_log()
    log.append(batch(50), now_ms=1)  # no state for this producer: any sequence (as after retention)
    log.append(batch(0, pid=7), now_ms=1)
    log.append(batch(52), now_ms=1)
    log.append(batch(2, pid=7), now_ms=1)
    assert log.log_end_offset == 8


def test_sequence_wraps_at_int_max(open_log: OpenLog) -> None:
    log = open_log()
    log.append(batch(2**31 - 2, count=2), now_ms=1)  # last sequence = Int.MAX
    assert log.append(batch(0), now_ms=1).base_offset == 2


def test_producer_state_is_rebuilt_from_the_log_on_open(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=300)
    offsets = [log.append(batch(2 * n, epoch=1), now_ms=1).base_offset for n in range(8)]
    assert len(log.segment_base_offsets) > 1
    for recover_tail in (True, False):
        reopened = open_log(segment_bytes=300, recover_tail=recover_tail)
        retry = reopened.append(batch(12, epoch=1), now_ms=1)
        assert retry.duplicate and retry.base_offset == offsets[6]
        assert error_of(reopened, batch(20, epoch=1)) == LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert error_of(reopened, batch(16, epoch=0)) == LogErrorCode.INVALID_PRODUCER_EPOCH
    assert open_log(segment_bytes=300).append(batch(16, epoch=1), now_ms=1).base_offset == 16


def test_retention_forgets_producers_whose_batches_are_gone(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=250, retention_bytes=1)
    log.append(batch(0, pid=5), now_ms=1)
    for n in range(6):
        log.append(batch(2 * n), now_ms=1)
    assert log.apply_retention(now_ms=1) > 0
    assert log.producers.entry(5) is None
    assert log.producers.entry(PID) is not None
    assert not log.append(batch(40, pid=5), now_ms=1).duplicate  # unknown again: any sequence
