"""A partition's transactions: the ongoing ones (the last stable offset), the aborted ones (what a
``read_committed`` fetch is told to skip) and the control batches that end them (Kafka's
``EndTransactionMarker``), as Kafka's ``ProducerStateManager`` and ``TransactionIndex`` keep them.

* a transactional data batch of a producer with no transaction open on the partition opens one at its
  base offset; the **last stable offset** is the first offset of the oldest open transaction (the high
  watermark when none is open);
* a marker (a control batch: transactional and control attributes, producer id and epoch, one record
  whose key is version 0 and the type, 0 abort or 1 commit, and whose value is version 0 and the
  coordinator epoch) closes the producer's transaction; an aborted one is remembered as (producer id,
  first offset, the marker's offset) — Kafka's ``AbortedTxn``;
* rebuilt from the batches when the log opens (kgroup keeps no index file: the headers are replayed, and
  each control batch's key read).
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from kgroup.log.batch import BatchHeader
from kgroup.wire.record_batch import CONTROL_MASK, HEADER_SIZE, TRANSACTIONAL_MASK, record_batch
from kgroup.wire.varint import read_uvarint

__all__ = [
    "ABORT",
    "COMMIT",
    "AbortedTxn",
    "TransactionIndex",
    "control_batch",
    "control_type",
]

ABORT, COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_CONTROL_VALUE = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An aborted transaction of a partition: its producer, its first offset, its marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int


def control_batch(
    producer_id: int, producer_epoch: int, committed: bool, coordinator_epoch: int, timestamp_ms: int
) -> bytes:
    """The marker batch ``WriteTxnMarkers`` appends (``MemoryRecords.withEndTransactionMarker``): base
    offset 0 (the log assigns it), no sequence, one control record."""
    key = _CONTROL_KEY.pack(0, COMMIT if committed else ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    attributes = TRANSACTIONAL_MASK | CONTROL_MASK
    return record_batch(
        [(key, value)],
        timestamp_ms,
        attributes=attributes,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def control_type(batch: bytes | memoryview) -> int | None:
    """ABORT or COMMIT, read off a control batch's first record key (None if it has no readable one)."""
    view = memoryview(batch)
    end = len(view)
    at = HEADER_SIZE
    try:
        _, at = read_uvarint(view, at, end)  # record length
        at += 1  # attributes
        _, at = read_uvarint(view, at, end)  # timestamp delta
        _, at = read_uvarint(view, at, end)  # offset delta
        raw, at = read_uvarint(view, at, end)
        key_length = (raw >> 1) ^ -(raw & 1)
        if key_length < _CONTROL_KEY.size or at + key_length > end:
            return None
        _, kind = _CONTROL_KEY.unpack_from(view, at)
    except (ValueError, IndexError, struct.error):
        return None
    return int(kind)


class TransactionIndex:
    """The open and aborted transactions of one partition."""

    def __init__(self) -> None:
        #: producer id -> the first offset of its open transaction
        self.ongoing: dict[int, int] = {}
        #: in the order of their markers (so by last offset)
        self.aborted: list[AbortedTxn] = []
        self._aborted_ends: list[int] = []  # each one's last offset, for the bisection

    def on_batch(self, header: BatchHeader, kind: int | None = None) -> None:
        """An appended (or replayed) batch, its base offset assigned; ``kind`` is a control batch's type."""
        if not header.is_transactional:
            return
        if header.is_control:
            first = self.ongoing.pop(header.producer_id, None)
            if kind == ABORT and first is not None:
                self.aborted.append(AbortedTxn(header.producer_id, first, header.base_offset))
                self._aborted_ends.append(header.base_offset)
            return
        self.ongoing.setdefault(header.producer_id, header.base_offset)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions a fetch of offsets [start, end) may hold records of: those whose
        marker is at or after ``start`` (found by bisection) and whose first record is before ``end``."""
        first = bisect.bisect_left(self._aborted_ends, start)
        return [a for a in self.aborted[first:] if a.first_offset < end]

    def evict_before(self, log_start_offset: int) -> None:
        """Retention removed the log's start: the transactions wholly before it are forgotten."""
        gone = bisect.bisect_left(self._aborted_ends, log_start_offset)
        del self.aborted[:gone]
        del self._aborted_ends[:gone]
