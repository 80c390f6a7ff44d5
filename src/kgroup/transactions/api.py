"""What the transaction coordinator is asked, what it answers, and the effects it hands its host.

Version-free: the host (the broker's handlers, the simulator) translates Kafka's requests into these and
the answers back (the per-version details, such as AddPartitionsToTxn v0-v3 answering one error for every
partition, are noted where they live here).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.records import TransactionLogRecord
from kgroup.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0

__all__ = [
    "AddOffsetsToTxn",
    "AddOffsetsToTxnAnswer",
    "AddPartitionsToTxn",
    "AddPartitionsToTxnAnswer",
    "DescribeTransactions",
    "DescribedTransaction",
    "EndTxn",
    "EndTxnAnswer",
    "InitProducerId",
    "InitProducerIdAnswer",
    "ListTransactions",
    "ListTransactionsAnswer",
    "ListedTransaction",
    "ScheduleTxnTimer",
    "TransactionalProducer",
    "TxnEffect",
    "TxnRequest",
    "TxnResult",
    "TxnTimer",
    "VerifyPartitionsInTxn",
    "WriteMarkers",
    "error_for_version",
]


# --- requests -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerId:
    """InitProducerId: ``transactional_id`` ``None`` is an idempotent producer (just an id). A producer
    recovering (KIP-360) gives its current ``producer_id`` and ``producer_epoch``; both -1 otherwise."""

    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TransactionalProducer:
    """The producer a transaction's request or effect is for: its ``transactional.id`` and the producer
    id and epoch it holds (the first fields of each, in Kafka's order)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxn(TransactionalProducer):
    """AddPartitionsToTxn adding partitions: a client's (v0-v3, ``client_transaction_version`` 0) or a
    partition leader's for a transactions-v2 producer (v4+ without ``verify_only``: ``TV_2`` from v4 on,
    ``TransactionVersion.transactionVersionForAddPartitionsToTxn``)."""

    partitions: tuple[TopicPartition, ...]
    client_transaction_version: int = TV_0


@dataclass(frozen=True, slots=True)
class VerifyPartitionsInTxn(TransactionalProducer):
    """AddPartitionsToTxn v4+ with ``verify_only`` (KIP-890): are these partitions in the transaction?
    A query: it writes nothing."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxn(TransactionalProducer):
    """AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition (transaction version 0)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class EndTxn(TransactionalProducer):
    """EndTxn: ``committed`` commits, else aborts; ``client_transaction_version`` is 2 from EndTxn v5
    (``TransactionVersion.transactionVersionForEndTxn``), else 0."""

    committed: bool
    client_transaction_version: int = TV_0


@dataclass(frozen=True, slots=True)
class DescribeTransactions:
    transactional_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListTransactions:
    """ListTransactions: the filters empty or -1 filter nothing; ``duration_filter_ms`` (v1) keeps the
    transactions running longer than it; ``transactional_id_pattern`` (v2) an RE2/J regular expression the
    whole id matches (empty or ``None``: no filter)."""

    state_filters: tuple[str, ...] = ()
    producer_id_filters: tuple[int, ...] = ()
    duration_filter_ms: int = -1
    transactional_id_pattern: str | None = None


TxnRequest = (
    InitProducerId
    | AddPartitionsToTxn
    | VerifyPartitionsInTxn
    | AddOffsetsToTxn
    | EndTxn
    | DescribeTransactions
    | ListTransactions
)


# --- answers ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerIdAnswer:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnAnswer:
    """Each partition's error. AddPartitionsToTxn v0-v3 and a non-verifying v4+ give every partition the
    one error; verification answers each partition on its own."""

    errors: Mapping[TopicPartition, ErrorCode]

    @property
    def error(self) -> ErrorCode:
        """The first error that is not NONE (NONE if none)."""
        return next((e for e in self.errors.values() if e is not ErrorCode.NONE), ErrorCode.NONE)


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnAnswer:
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class EndTxnAnswer:
    """EndTxn's answer: from v5 (transactions v2) the producer id and epoch the producer goes on with."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    transactional_id: str
    error: ErrorCode
    state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    #: (topic, partitions) in Kafka's order
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsAnswer:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTransaction, ...] = ()


# --- effects ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteMarkers(TransactionalProducer):
    """Write a commit or abort marker to every one of ``partitions`` (``WriteTxnMarkers``) with this
    producer id and epoch; when all are written the host calls ``TransactionCoordinator.markers_written``
    with the same ``transactional_id``, ``producer_id`` and ``producer_epoch``."""

    committed: bool
    partitions: tuple[TopicPartition, ...]
    coordinator_epoch: int
    #: the transaction version the markers are written with (the transaction's client version)
    transaction_version: int


class TxnTimer(enum.Enum):
    """The coordinator's periodic sweeps (Kafka's scheduler tasks)."""

    #: ``transaction-abort``: abort the transactions past their timeout
    ABORT_TIMED_OUT = "transaction-abort"
    #: ``transactionalId-expiration``: remove the ids idle past ``transactional.id.expiration.ms``
    EXPIRE_TRANSACTIONAL_IDS = "transactionalId-expiration"


@dataclass(frozen=True, slots=True)
class ScheduleTxnTimer:
    """Call ``TransactionCoordinator.on_timer(timer, now_ms)`` at ``deadline_ms``."""

    timer: TxnTimer
    deadline_ms: int


TxnEffect = WriteMarkers | ScheduleTxnTimer

Answer = (
    InitProducerIdAnswer
    | AddPartitionsToTxnAnswer
    | AddOffsetsToTxnAnswer
    | EndTxnAnswer
    | tuple[DescribedTransaction, ...]
    | ListTransactionsAnswer
)


@dataclass(frozen=True, slots=True)
class TxnResult:
    """What one call produced: the answer (none for a timer or a marker completion), the records to
    append (already replayed: the host answers once they are durable), and the effects to perform."""

    answer: Answer | None = None
    records: tuple[TransactionLogRecord, ...] = ()
    effects: tuple[TxnEffect, ...] = field(default=())


#: the first version of each request whose clients know PRODUCER_FENCED; KafkaApis answers older ones
#: INVALID_PRODUCER_EPOCH instead (4.4.0's createResponse / sendResponseCallback of each)
_PRODUCER_FENCED_FROM: dict[type, int] = {
    InitProducerId: 4,
    EndTxn: 2,
    AddPartitionsToTxn: 2,
    AddOffsetsToTxn: 2,
}


def error_for_version(request: type, version: int, error: ErrorCode) -> ErrorCode:
    """The error a request of ``version`` is answered: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for the
    versions before their clients knew it."""
    first = _PRODUCER_FENCED_FROM.get(request)
    if error is ErrorCode.PRODUCER_FENCED and first is not None and version < first:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
