"""One transactional id's metadata and its transitions: Kafka's ``TransactionMetadata`` as values.

Kafka prepares a transition (``prepare*`` gives a ``TxnTransitMetadata``), appends it to the log, and
completes it (``completeTransitionTo``) when the append succeeds. Here a transition is a function from the
current :class:`TxnMetadata` to the next; :func:`check_transition` is ``completeTransitionTo``'s check, and
the coordinator applies the result only by replaying the record that carries it.

A transaction's partitions are a ``java.util.HashSet`` in Kafka, and the log writes them in that set's
iteration order: :attr:`TxnMetadata.partitions` keeps them in it (see :func:`add_partitions_order`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from kgroup.javacompat import JavaHashSet, java_string_hash
from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.state import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_0,
    TxnState,
    is_epoch_exhausted,
    supports_epoch_bump,
)

__all__ = [
    "ApiError",
    "IllegalTransition",
    "TxnMetadata",
    "abort_or_commit",
    "add_partitions",
    "add_partitions_order",
    "check_transition",
    "complete",
    "dead",
    "fence_epoch",
    "increment_epoch",
    "loaded_order",
    "new_metadata",
    "rotate_producer_id",
    "topic_partition_hash",
]


class IllegalTransition(Exception):
    """A transition Kafka refuses as a bug (``IllegalStateException``): never an answer to a client."""


class ApiError(Exception):
    """An error a transition answers the client with (``Errors.X.exception()``)."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


def topic_partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return (31 * (31 + tp.partition) + java_string_hash(tp.topic)) & 0xFFFFFFFF


def add_partitions_order(
    current: Iterable[TopicPartition], added: Iterable[TopicPartition]
) -> tuple[TopicPartition, ...]:
    """``prepareAddPartitions``' set: ``new HashSet<>(current)`` then ``addAll(added)``, in its iteration
    order (``current`` given in its own set's order)."""
    partitions = JavaHashSet.copy_of(topic_partition_hash, current)
    for tp in added:
        partitions.add(tp)
    return tuple(partitions)


def loaded_order(partitions: Iterable[TopicPartition]) -> tuple[TopicPartition, ...]:
    """A loaded record's set: ``TransactionLog.read`` fills a ``new HashSet<>()`` in the record's order and
    ``TransactionMetadata``'s constructor copies it."""
    read: JavaHashSet[TopicPartition] = JavaHashSet(topic_partition_hash)
    for tp in partitions:
        read.add(tp)
    return tuple(JavaHashSet.copy_of(topic_partition_hash, read))


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    """``TransactionMetadata`` (and ``TxnTransitMetadata``: a transition's result is one of these)."""

    transactional_id: str
    producer_id: int
    #: the producer id before the last transition (``prevProducerId``)
    prev_producer_id: int
    #: the producer id an epoch overflow rotates to (transactions v2), else -1
    next_producer_id: int
    producer_epoch: int
    #: the epoch before the last bump (a retried InitProducerId or EndTxn); not in the log, -1 once loaded
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    #: the transaction's partitions in Kafka's ``HashSet`` order
    partitions: tuple[TopicPartition, ...]
    txn_start_ms: int
    txn_last_update_ms: int
    #: the ``TransactionVersion`` the client used in the last transition
    client_transaction_version: int

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TxnState.ONGOING, TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT)


def new_metadata(transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> TxnMetadata:
    """What InitProducerId creates for an unknown transactional id (not yet written: Empty, epoch -1)."""
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        prev_producer_id=NO_PRODUCER_ID,
        next_producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=timeout_ms,
        state=TxnState.EMPTY,
        partitions=(),
        txn_start_ms=-1,
        txn_last_update_ms=now_ms,
        client_transaction_version=TV_0,
    )


def _transit(m: TxnMetadata, state: TxnState, **changes: object) -> TxnMetadata:
    """``prepareTransitionTo``: the new metadata, its ``prevProducerId`` the current producer id."""
    new = dataclasses.replace(m, state=state, prev_producer_id=m.producer_id, **changes)  # type: ignore[arg-type]
    if new.producer_id < 0:
        raise IllegalTransition(f"Illegal new producer id {new.producer_id}")
    if state is not TxnState.DEAD and new.producer_epoch < 0:
        raise IllegalTransition(f"Illegal new producer epoch {new.producer_epoch}")
    if m.state not in state.valid_previous:
        raise IllegalTransition(
            f"Preparing transaction state transition to {state.state_name} failed since the target state "
            f"{state.state_name} is not a valid previous state of the current state {m.state.state_name}"
        )
    return new


def fence_epoch(m: TxnMetadata) -> TxnMetadata:
    """``prepareFenceProducerEpoch``: the epoch bumped (never past ``Short.MAX_VALUE``), PrepareEpochFence.
    Never written: the coordinator aborts with this epoch at once."""
    bumped = m.producer_epoch if m.producer_epoch == MAX_EPOCH else m.producer_epoch + 1
    return _transit(m, TxnState.PREPARE_EPOCH_FENCE, producer_epoch=bumped)


def increment_epoch(m: TxnMetadata, timeout_ms: int, expected_epoch: int | None, now_ms: int) -> TxnMetadata:
    """``prepareIncrementProducerEpoch``: InitProducerId on a transactional id with no open transaction."""
    if m.epoch_exhausted:
        raise IllegalTransition(f"Cannot allocate any more producer epochs for producerId {m.producer_id}")
    bumped = m.producer_epoch + 1
    if expected_epoch is None:
        epoch, last = bumped, NO_PRODUCER_EPOCH
    elif m.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == m.producer_epoch:
        epoch, last = bumped, m.producer_epoch
    elif expected_epoch == m.last_producer_epoch:
        epoch, last = m.producer_epoch, m.last_producer_epoch  # a retry of a bump that succeeded
    else:
        raise ApiError(ErrorCode.PRODUCER_FENCED)
    return _transit(
        m,
        TxnState.EMPTY,
        producer_epoch=epoch,
        last_producer_epoch=last,
        txn_timeout_ms=timeout_ms,
        partitions=(),
        txn_start_ms=-1,
        txn_last_update_ms=now_ms,
    )


def rotate_producer_id(
    m: TxnMetadata, producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
) -> TxnMetadata:
    """``prepareProducerIdRotation``: a new producer id at epoch 0 (the epochs of the old one ran out)."""
    if m.has_pending_transaction:
        raise IllegalTransition("Cannot rotate producer ids while a transaction is still pending")
    return _transit(
        m,
        TxnState.EMPTY,
        producer_id=producer_id,
        producer_epoch=0,
        last_producer_epoch=m.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
        txn_timeout_ms=timeout_ms,
        partitions=(),
        txn_start_ms=-1,
        txn_last_update_ms=now_ms,
    )


def add_partitions(
    m: TxnMetadata, added: Iterable[TopicPartition], now_ms: int, client_version: int
) -> TxnMetadata:
    """``prepareAddPartitions``: Ongoing with the partitions added; a new transaction starts now."""
    starting = m.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT)
    return _transit(
        m,
        TxnState.ONGOING,
        partitions=add_partitions_order(m.partitions, added),
        txn_start_ms=now_ms if starting else m.txn_start_ms,
        txn_last_update_ms=now_ms,
        client_transaction_version=client_version,
    )


def abort_or_commit(
    m: TxnMetadata,
    state: TxnState,
    client_version: int,
    next_producer_id: int,
    now_ms: int,
    no_partition_added: bool,
) -> TxnMetadata:
    """``prepareAbortOrCommit``: PrepareCommit or PrepareAbort; transactions v2 bump the epoch here."""
    if supports_epoch_bump(client_version):
        if m.producer_epoch == MAX_EPOCH and state is TxnState.PREPARE_ABORT:
            epoch = m.producer_epoch  # already broken: let the abort through without overflowing
        elif m.producer_epoch == MAX_EPOCH:
            # Java's (short) (epoch + 1) wraps to a negative epoch, which the transition refuses
            raise IllegalTransition(
                f"TransactionalId {m.transactional_id} cannot bump epoch {m.producer_epoch} "
                "past Short.MAX_VALUE"
            )
        else:
            epoch = m.producer_epoch + 1
        last = m.producer_epoch
    else:
        epoch, last = m.producer_epoch, m.last_producer_epoch
    return _transit(
        m,
        state,
        producer_epoch=epoch,
        last_producer_epoch=last,
        txn_start_ms=now_ms if no_partition_added else m.txn_start_ms,
        next_producer_id=next_producer_id,
        txn_last_update_ms=now_ms,
        client_transaction_version=client_version,
    )


def complete(m: TxnMetadata, now_ms: int) -> TxnMetadata:
    """``prepareComplete``: CompleteCommit or CompleteAbort once every marker is written; an overflowed
    epoch (transactions v2) moves to the next producer id at epoch 0."""
    state = TxnState.COMPLETE_COMMIT if m.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
    if supports_epoch_bump(m.client_transaction_version) and m.next_producer_id != NO_PRODUCER_ID:
        producer_id, epoch = m.next_producer_id, 0
    else:
        producer_id, epoch = m.producer_id, m.producer_epoch
    return _transit(
        m,
        state,
        producer_id=producer_id,
        producer_epoch=epoch,
        next_producer_id=NO_PRODUCER_ID,
        partitions=(),
        txn_last_update_ms=now_ms,
    )


def dead(m: TxnMetadata) -> TxnMetadata:
    """``prepareDead``: the transactional id expires (its tombstone is written)."""
    return _transit(m, TxnState.DEAD, partitions=())


def _valid_epoch(m: TxnMetadata, t: TxnMetadata) -> bool:
    v2 = supports_epoch_bump(t.client_transaction_version)
    if v2 and t.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT) and t.producer_epoch == 0:
        return t.last_producer_epoch == m.last_producer_epoch and t.prev_producer_id == m.producer_id
    if v2 and t.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return t.last_producer_epoch == m.producer_epoch and t.producer_id == m.producer_id
    return t.producer_epoch == m.producer_epoch and t.producer_id == m.producer_id


def check_transition(m: TxnMetadata, t: TxnMetadata) -> None:
    """``completeTransitionTo``'s checks of a transition ``m`` -> ``t``: raises :class:`IllegalTransition`
    where Kafka would (a bug, never a client's doing)."""
    to = t.state
    ok = True
    if to is TxnState.EMPTY:
        bump = t.producer_epoch == m.producer_epoch + 1 or (
            t.producer_epoch == 0 and t.producer_id != m.producer_id
        )
        ok = (m.producer_epoch == t.producer_epoch or bump) and not t.partitions and t.txn_start_ms == -1
    elif to is TxnState.ONGOING:
        ok = (
            _valid_epoch(m, t)
            and set(m.partitions) <= set(t.partitions)
            and m.txn_timeout_ms == t.txn_timeout_ms
        )
    elif to in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
        empty_abort = (
            to is TxnState.PREPARE_ABORT
            and supports_epoch_bump(t.client_transaction_version)
            and m.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        )
        ok = (
            _valid_epoch(m, t)
            and set(m.partitions) == set(t.partitions)
            and m.txn_timeout_ms == t.txn_timeout_ms
            and (m.txn_start_ms == t.txn_start_ms or empty_abort)
        )
    elif to in (TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):
        ok = _valid_epoch(m, t) and m.txn_timeout_ms == t.txn_timeout_ms and t.txn_start_ms != -1
    elif to is TxnState.PREPARE_EPOCH_FENCE:
        ok = False
    elif to is TxnState.DEAD:
        raise IllegalTransition(
            f"TransactionalId {m.transactional_id} is trying to complete a transition to Dead: an expired "
            "transactional id is removed, not written"
        )
    if not ok:
        raise IllegalTransition(
            f"TransactionalId {m.transactional_id} failed transition to state {t} due to unexpected metadata"
        )
