"""Idempotent producers' state per partition, as Kafka's ``ProducerStateManager`` keeps it.

For each producer id: its epoch and the metadata of its last five batches (``ProducerStateEntry``,
``NUM_BATCHES_TO_RETAIN = 5``). A produced batch is checked against it exactly as
``ProducerAppendInfo`` checks a client's append:

* a batch whose epoch and sequence range equal one of the retained five is a duplicate: it is not
  appended again and the producer gets the original offsets (``UnifiedLog.analyzeAndValidateProducerState``);
* an epoch below the current one is ``INVALID_PRODUCER_EPOCH``;
* a new (higher) epoch must start at sequence 0, unless the producer had no epoch yet;
* within an epoch the first sequence must follow the last one (wrapping at Int.MAX), unless the
  producer's state was lost (no epoch known), when any sequence is accepted.

The state is rebuilt on open by replaying every batch header in the log (Kafka loads a snapshot and
replays the rest; kgroup has no snapshot files and replays the whole log's headers).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kgroup.log.batch import BatchHeader, decrement_sequence
from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

__all__ = ["BatchMetadata", "ProducerStateEntry", "ProducerStateManager"]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer (Kafka's ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """A producer's epoch and its last five batches, oldest first (Kafka's ``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        if epoch != self.producer_epoch:  # maybeUpdateProducerEpoch: a new epoch forgets the old batches
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for metadata in self.batches:
            if metadata.first_seq == first and metadata.last_seq == last:
                return metadata
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """The producer entries of one partition; checks a client's batch, then records it once appended."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerStateEntry] = {}

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def __len__(self) -> int:
        return len(self._producers)

    def check_client_batch(self, header: BatchHeader) -> BatchMetadata | None:
        """The retained batch this one duplicates, or None when it may be appended; raises PeerError.

        ``header`` is the produced batch (its base offset is not yet assigned). Kafka looks for the
        duplicate first, then validates epoch and sequence (``ProducerAppendInfo.maybeValidateDataBatch``).
        """
        if not header.has_producer_id:
            return None
        current = self._producers.get(header.producer_id)
        if current is None:
            current = ProducerStateEntry(header.producer_id)
        duplicate = current.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        epoch, first_seq = header.producer_epoch, header.base_sequence
        if epoch < current.producer_epoch:
            raise PeerError(
                f"epoch of producer {header.producer_id} is {epoch}, which is smaller than the last seen "
                f"epoch {current.producer_epoch}",
                LogErrorCode.INVALID_PRODUCER_EPOCH,
            )
        if epoch != current.producer_epoch:
            if first_seq != 0 and current.producer_epoch != NO_PRODUCER_EPOCH:
                raise PeerError(
                    f"invalid sequence number for new epoch of producer {header.producer_id}: {epoch} "
                    f"(request epoch), {first_seq} (seq. number), {current.producer_epoch} (current epoch)",
                    LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                )
        elif current.producer_epoch != NO_PRODUCER_EPOCH and not _in_sequence(current.last_seq, first_seq):
            raise PeerError(
                f"out of order sequence number for producer {header.producer_id}: {first_seq} "
                f"(incoming seq. number), {current.last_seq} (current end sequence number)",
                LogErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            )
        return None

    def record(self, header: BatchHeader) -> None:
        """Remember an appended batch (``header`` carries its assigned base offset)."""
        if not header.has_producer_id:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None:
            entry = self._producers[header.producer_id] = ProducerStateEntry(header.producer_id)
        if header.is_control:
            # a transaction marker (``appendEndTxnMarker``): the producer's epoch, no sequence of its own
            if header.producer_epoch != entry.producer_epoch:
                entry.batches.clear()
                entry.producer_epoch = header.producer_epoch
            return
        entry.add_batch(
            header.producer_epoch,
            header.last_sequence,
            header.last_offset,
            header.last_offset_delta,
            header.max_timestamp,
        )

    def evict_before(self, log_start_offset: int) -> None:
        """Forget producers whose last batch is gone from the log (retention moved the log start).

        Kafka's ``ProducerStateManager.onLogStartOffsetIncremented`` removes them the same way; the
        producer's next batch is then accepted with any sequence (its epoch is unknown again).
        """
        gone = [pid for pid, entry in self._producers.items() if entry.last_data_offset < log_start_offset]
        for pid in gone:
            del self._producers[pid]
