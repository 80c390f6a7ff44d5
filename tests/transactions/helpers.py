"""A transaction coordinator driven as a host drives it: records kept as the log, markers written when
the test says so."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.api import (
    AddOffsetsToTxn,
    AddOffsetsToTxnAnswer,
    AddPartitionsToTxn,
    AddPartitionsToTxnAnswer,
    EndTxn,
    EndTxnAnswer,
    InitProducerId,
    InitProducerIdAnswer,
    TxnResult,
    WriteMarkers,
)
from kgroup.transactions.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from kgroup.transactions.metadata import TxnMetadata
from kgroup.transactions.records import TransactionLogRecord
from kgroup.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TxnState

TXN = "txn-1"
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


@dataclass
class Host:
    """The coordinator, its log and the markers it asked for."""

    config: TxnCoordinatorConfig = field(
        default_factory=lambda: TxnCoordinatorConfig(transaction_log_partitions=4)
    )
    first_id: int = 1000
    now: int = 1_000_000
    log: list[TransactionLogRecord] = field(default_factory=list)
    markers: list[WriteMarkers] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ids: Iterator[int] = itertools.count(self.first_id)
        self.coordinator = TransactionCoordinator(self.config, lambda: next(self.ids))
        self.coordinator.load_all((), self.now)

    def take(self, result: TxnResult) -> TxnResult:
        self.log.extend(result.records)
        self.markers.extend(e for e in result.effects if isinstance(e, WriteMarkers))
        return result

    def init(
        self, txn_id: str | None = TXN, timeout: int = 60_000, pid: int = -1, epoch: int = -1
    ) -> InitProducerIdAnswer:
        answer = self.take(
            self.coordinator.handle(InitProducerId(txn_id, timeout, pid, epoch), self.now)
        ).answer
        assert isinstance(answer, InitProducerIdAnswer)
        return answer

    def add(self, pid: int, epoch: int, *tps: TopicPartition, txn_id: str = TXN, tv: int = TV_0) -> ErrorCode:
        result = self.take(
            self.coordinator.handle(AddPartitionsToTxn(txn_id, pid, epoch, tps or (T0,), tv), self.now)
        )
        answer = result.answer
        assert isinstance(answer, AddPartitionsToTxnAnswer)
        errors = set(answer.errors.values())
        assert len(errors) == 1, "AddPartitionsToTxn answers every partition the same error"
        return errors.pop()

    def add_offsets(self, pid: int, epoch: int, group: str, txn_id: str = TXN) -> ErrorCode:
        answer = self.take(
            self.coordinator.handle(AddOffsetsToTxn(txn_id, pid, epoch, group), self.now)
        ).answer
        assert isinstance(answer, AddOffsetsToTxnAnswer)
        return answer.error

    def end(self, pid: int, epoch: int, commit: bool, tv: int = TV_0, txn_id: str = TXN) -> EndTxnAnswer:
        answer = self.take(self.coordinator.handle(EndTxn(txn_id, pid, epoch, commit, tv), self.now)).answer
        assert isinstance(answer, EndTxnAnswer)
        return answer

    def write_markers(self) -> None:
        """The host writes every marker asked for and reports each transaction's done."""
        while self.markers:
            m = self.markers.pop(0)
            self.take(self.coordinator.markers_written(m.transactional_id, m.producer_id, m.producer_epoch))

    def meta(self, txn_id: str = TXN) -> TxnMetadata:
        m = self.coordinator.metadata(txn_id)
        assert m is not None
        return m

    def put(self, m: TxnMetadata) -> None:
        """Give the coordinator a state as if loaded from its log."""
        self.coordinator.replay(TransactionLogRecord(m.transactional_id, m))


def metadata(
    *,
    state: TxnState,
    producer_id: int = 10,
    epoch: int = 5,
    last_epoch: int = NO_PRODUCER_EPOCH,
    prev_producer_id: int = NO_PRODUCER_ID,
    next_producer_id: int = NO_PRODUCER_ID,
    partitions: tuple[TopicPartition, ...] = (),
    timeout: int = 60_000,
    start: int = 0,
    update: int = 0,
    tv: int = TV_0,
    txn_id: str = TXN,
) -> TxnMetadata:
    return TxnMetadata(
        transactional_id=txn_id,
        producer_id=producer_id,
        prev_producer_id=prev_producer_id,
        next_producer_id=next_producer_id,
        producer_epoch=epoch,
        last_producer_epoch=last_epoch,
        txn_timeout_ms=timeout,
        state=state,
        partitions=partitions,
        txn_start_ms=start,
        txn_last_update_ms=update,
        client_transaction_version=tv,
    )
