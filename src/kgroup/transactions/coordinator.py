"""The transaction coordinator: Kafka 4.4.0's ``TransactionCoordinator`` and the decisions of its
``TransactionStateManager``, pure.

Every call takes the time; producer ids come from an injected allocator (Kafka's ``ProducerIdManager``,
which the controller feeds blocks of ids). A handler never changes the state itself: it emits
``__transaction_state`` records, each replayed at once by :meth:`TransactionCoordinator.replay` (the one
mutator), and returns them with the answer — the host appends them and answers once they are durable.
Effects (markers to write, sweeps to schedule) are returned as values.

Kafka's metadata has a *pending state* while an append is in flight. Appends here complete within the
call, so the only pending state that outlives one is a Prepare* transaction's markers: a transaction in
PrepareCommit or PrepareAbort is always completing (``pendingTransitionInProgress``), until the host
reports its markers written (:meth:`~TransactionCoordinator.markers_written`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kgroup.group.consumer.regex import InvalidTopicRegex, compile_topic_regex
from kgroup.group.discovery import coordinator_partition
from kgroup.model import ErrorCode, KgroupError, TopicPartition
from kgroup.transactions import metadata as meta
from kgroup.transactions.api import (
    AddOffsetsToTxn,
    AddOffsetsToTxnAnswer,
    AddPartitionsToTxn,
    AddPartitionsToTxnAnswer,
    Answer,
    DescribedTransaction,
    DescribeTransactions,
    EndTxn,
    EndTxnAnswer,
    InitProducerId,
    InitProducerIdAnswer,
    ListedTransaction,
    ListTransactions,
    ListTransactionsAnswer,
    ScheduleTxnTimer,
    TransactionalProducer,
    TxnEffect,
    TxnRequest,
    TxnResult,
    TxnTimer,
    VerifyPartitionsInTxn,
    WriteMarkers,
)
from kgroup.transactions.metadata import ApiError, TxnMetadata
from kgroup.transactions.records import TransactionLogRecord, encode_key, encode_value
from kgroup.transactions.state import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_0,
    TV_2,
    TxnState,
    is_epoch_exhausted,
    log_value_version,
    supports_epoch_bump,
)

__all__ = ["ProducerIdsUnavailable", "TransactionCoordinator", "TxnCoordinatorConfig"]

OFFSETS_TOPIC = "__consumer_offsets"


class ProducerIdsUnavailable(Exception):
    """The allocator has no producer id to give now (Kafka's ``RPCProducerIdManager`` waiting for a block
    from the controller): the request is answered COORDINATOR_LOAD_IN_PROGRESS and retried."""


@dataclass(frozen=True, slots=True)
class TxnCoordinatorConfig:
    """The broker configs the coordinator reads, with Kafka 4.4.0's defaults."""

    #: ``transaction.max.timeout.ms``
    transaction_max_timeout_ms: int = 900_000
    #: ``transactional.id.expiration.ms``
    transactional_id_expiration_ms: int = 604_800_000
    #: ``transaction.abort.timed.out.transaction.cleanup.interval.ms``
    abort_timed_out_interval_ms: int = 10_000
    #: ``transaction.remove.expired.transaction.cleanup.interval.ms``
    remove_expired_interval_ms: int = 3_600_000
    #: ``transaction.state.log.num.partitions``
    transaction_log_partitions: int = 50
    #: ``offsets.topic.num.partitions`` (AddOffsetsToTxn's partition)
    offsets_topic_partitions: int = 50
    #: the cluster's finalized ``transaction.version`` (2 on a new 4.4.0 cluster)
    transaction_version: int = TV_2

    def __post_init__(self) -> None:
        for name in (
            "transaction_max_timeout_ms",
            "transactional_id_expiration_ms",
            "abort_timed_out_interval_ms",
            "remove_expired_interval_ms",
            "transaction_log_partitions",
            "offsets_topic_partitions",
        ):
            if getattr(self, name) < 1:
                raise KgroupError(f"{name}: is {getattr(self, name)}; give a value >= 1")
        if self.transaction_version not in (0, 1, 2):
            raise KgroupError(f"transaction_version: is {self.transaction_version}; give 0, 1 or 2")


@functools.lru_cache(maxsize=1 << 16)
def _partition(transactional_id: str, partitions: int) -> int:
    """Cached: the sweeps ask it of every id (Java's ``String.hashCode`` is a Python loop here)."""
    return coordinator_partition(transactional_id, partitions)


class _Op:
    """One call's records and effects; each record replayed as it is emitted."""

    __slots__ = ("effects", "records", "replay")

    def __init__(self, replay: Callable[[TransactionLogRecord], None]) -> None:
        self.replay = replay
        self.records: list[TransactionLogRecord] = []
        self.effects: list[TxnEffect] = []

    def write(self, current: TxnMetadata | None, new: TxnMetadata) -> None:
        if current is not None:
            meta.check_transition(current, new)
        record = TransactionLogRecord(new.transactional_id, new)
        self.records.append(record)
        self.replay(record)

    def result(self, answer: Answer | None = None) -> TxnResult:
        return TxnResult(answer, tuple(self.records), tuple(self.effects))


class TransactionCoordinator:
    """The transaction coordinator of the ``__transaction_state`` partitions it has loaded.

    ``allocate_producer_id`` returns a new producer id (or raises :class:`ProducerIdsUnavailable`).
    """

    def __init__(self, config: TxnCoordinatorConfig, allocate_producer_id: Callable[[], int]) -> None:
        self.config = config
        self._allocate = allocate_producer_id
        self._txns: dict[str, TxnMetadata] = {}
        #: partition -> its coordinator epoch (the partitions this coordinator leads and has loaded)
        self._owned: dict[int, int] = {}
        self._loading: dict[int, int] = {}
        #: a Prepare* transaction's completion time (Kafka's ``prepareComplete(now)`` when the Prepare*
        #: append completes or the partition loads): derived, never written
        self._complete_at: dict[str, int] = {}

    # --- state --------------------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        """``TransactionStateManager.partitionFor``: ``Utils.abs(id.hashCode) % partitions``."""
        return _partition(transactional_id, self.config.transaction_log_partitions)

    def encode(self, record: TransactionLogRecord) -> tuple[bytes, bytes | None]:
        """A record's key and value bytes as this coordinator's Kafka writes them: the value at the
        ``TransactionLogValue`` version of the cluster's ``transaction.version``; a tombstone's is null."""
        key = encode_key(record.transactional_id)
        if record.value is None:
            return key, None
        return key, encode_value(record.value, log_value_version(self.config.transaction_version))

    def metadata(self, transactional_id: str) -> TxnMetadata | None:
        return self._txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return sorted(self._txns)

    def replay(self, record: TransactionLogRecord) -> None:
        """Apply one record (the only mutator): a value replaces the id's metadata, a tombstone removes it."""
        m = record.value
        if m is None:
            self._txns.pop(record.transactional_id, None)
            self._complete_at.pop(record.transactional_id, None)
            return
        self._txns[record.transactional_id] = m
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            self._complete_at[record.transactional_id] = m.txn_last_update_ms
        else:
            self._complete_at.pop(record.transactional_id, None)

    # --- loading ------------------------------------------------------------------------------------

    def begin_load(self, partition: int, coordinator_epoch: int) -> None:
        """This coordinator leads ``partition`` now: its records are replayed next, and its ids are
        answered COORDINATOR_LOAD_IN_PROGRESS until :meth:`finish_load`."""
        self._check_partition(partition)
        self._drop(partition)
        self._owned.pop(partition, None)
        self._loading[partition] = coordinator_epoch

    def finish_load(self, partition: int, now_ms: int) -> TxnResult:
        """The partition's records are replayed: its ids are served, and every transaction left in
        PrepareCommit or PrepareAbort has its markers written again
        (``loadTransactionsForTxnTopicPartition``)."""
        if partition not in self._loading:
            raise KgroupError(f"partition {partition}: finish_load without begin_load; call begin_load first")
        epoch = self._loading.pop(partition)
        self._owned[partition] = epoch
        op = _Op(self.replay)
        for txn_id in sorted(self._txns):
            m = self._txns[txn_id]
            if self.partition_for(txn_id) != partition:
                continue
            if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._complete_at[txn_id] = now_ms
                op.effects.append(self._markers(m, epoch))
        return op.result()

    def unload(self, partition: int) -> None:
        """``onResignation``: forget the partition's ids."""
        self._check_partition(partition)
        self._drop(partition)
        self._owned.pop(partition, None)
        self._loading.pop(partition, None)

    def load_all(
        self, records: Iterable[TransactionLogRecord], now_ms: int, coordinator_epoch: int = 0
    ) -> TxnResult:
        """Lead every partition at once, replaying ``records`` (the simulator's one broker)."""
        for p in range(self.config.transaction_log_partitions):
            self.begin_load(p, coordinator_epoch)
        for record in records:
            self.replay(record)
        effects: list[TxnEffect] = []
        for p in range(self.config.transaction_log_partitions):
            effects.extend(self.finish_load(p, now_ms).effects)
        return TxnResult(None, (), tuple(effects))

    def _check_partition(self, partition: int) -> None:
        if not 0 <= partition < self.config.transaction_log_partitions:
            raise KgroupError(
                f"partition: is {partition}; give 0..{self.config.transaction_log_partitions - 1}"
            )

    def _drop(self, partition: int) -> None:
        for txn_id in [t for t in self._txns if self.partition_for(t) == partition]:
            del self._txns[txn_id]
            self._complete_at.pop(txn_id, None)

    def _lookup(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None, int]:
        """``getTransactionState``: (error, metadata, coordinator epoch)."""
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None, -1
        epoch = self._owned.get(partition)
        if epoch is None:
            return ErrorCode.NOT_COORDINATOR, None, -1
        return ErrorCode.NONE, self._txns.get(transactional_id), epoch

    def _pending(self, m: TxnMetadata) -> bool:
        return m.transactional_id in self._complete_at

    # --- timers -------------------------------------------------------------------------------------

    def start(self, now_ms: int) -> TxnResult:
        """``startup``: the two periodic sweeps, first due one interval from now."""
        return TxnResult(
            None,
            (),
            (
                ScheduleTxnTimer(TxnTimer.ABORT_TIMED_OUT, now_ms + self.config.abort_timed_out_interval_ms),
                ScheduleTxnTimer(
                    TxnTimer.EXPIRE_TRANSACTIONAL_IDS, now_ms + self.config.remove_expired_interval_ms
                ),
            ),
        )

    def on_timer(self, timer: TxnTimer, now_ms: int) -> TxnResult:
        """Run one sweep and schedule its next run."""
        if timer is TxnTimer.ABORT_TIMED_OUT:
            result = self.abort_timed_out(now_ms)
            interval = self.config.abort_timed_out_interval_ms
        else:
            result = self.expire_transactional_ids(now_ms)
            interval = self.config.remove_expired_interval_ms
        return dataclasses.replace(
            result, effects=(*result.effects, ScheduleTxnTimer(timer, now_ms + interval))
        )

    def abort_timed_out(self, now_ms: int) -> TxnResult:
        """``abortTimedOutTransactions``: every Ongoing transaction older than its timeout is fenced and
        aborted (its producer's epoch bumped: the producer learns it is fenced on its next request)."""
        op = _Op(self.replay)
        for txn_id in self._served_ids():
            m = self._txns[txn_id]
            if self._pending(m) or m.state is not TxnState.ONGOING:
                continue
            if m.txn_start_ms + m.txn_timeout_ms >= now_ms:
                continue
            self._fence_and_abort(op, txn_id, m, now_ms)
        return op.result()

    def expire_transactional_ids(self, now_ms: int) -> TxnResult:
        """``removeExpiredTransactionalIds``: an id idle (Empty, CompleteCommit, CompleteAbort) for
        ``transactional.id.expiration.ms`` is removed: its tombstone is written."""
        op = _Op(self.replay)
        limit = now_ms - self.config.transactional_id_expiration_ms
        for txn_id in self._served_ids():
            m = self._txns[txn_id]
            if self._pending(m) or not m.state.expiration_allowed or m.txn_last_update_ms > limit:
                continue
            meta.dead(m)  # the transition Kafka prepares (checked), then the tombstone
            record = TransactionLogRecord(txn_id, None)
            op.records.append(record)
            op.replay(record)
        return op.result()

    def _served_ids(self) -> list[str]:
        return [t for t in sorted(self._txns) if self.partition_for(t) in self._owned]

    # --- requests -----------------------------------------------------------------------------------

    def handle(self, request: TxnRequest, now_ms: int) -> TxnResult:
        """Answer one request."""
        if isinstance(request, InitProducerId):
            return self.init_producer_id(request, now_ms)
        if isinstance(request, AddPartitionsToTxn):
            return self.add_partitions(request, now_ms)
        if isinstance(request, VerifyPartitionsInTxn):
            return TxnResult(self.verify_partitions(request))
        if isinstance(request, AddOffsetsToTxn):
            return self.add_offsets(request, now_ms)
        if isinstance(request, EndTxn):
            return self.end_txn(request, now_ms)
        if isinstance(request, DescribeTransactions):
            return TxnResult(self.describe(request))
        if isinstance(request, ListTransactions):
            return TxnResult(self.list_transactions(request, now_ms))
        raise TypeError(f"not a transaction coordinator request: {type(request).__name__}")

    def _new_producer_id(self) -> int:
        producer_id = self._allocate()
        if producer_id < 0:
            raise KgroupError(f"allocate_producer_id: returned {producer_id}; return ids >= 0")
        return producer_id

    def init_producer_id(self, request: InitProducerId, now_ms: int) -> TxnResult:
        """``handleInitProducerId`` (KafkaApis' check of the producer id and epoch first)."""
        op = _Op(self.replay)

        def fail(error: ErrorCode) -> TxnResult:
            return op.result(InitProducerIdAnswer(error))

        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
            return fail(ErrorCode.INVALID_REQUEST)
        expected = None if pid == NO_PRODUCER_ID else (pid, epoch)
        txn_id = request.transactional_id
        if txn_id is None:
            try:
                return op.result(InitProducerIdAnswer(ErrorCode.NONE, self._new_producer_id(), 0))
            except ProducerIdsUnavailable:
                return fail(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if not txn_id:
            return fail(ErrorCode.INVALID_REQUEST)
        timeout = request.transaction_timeout_ms
        if not 0 < timeout <= self.config.transaction_max_timeout_ms:
            return fail(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        error, m, _ = self._lookup(txn_id)
        if error is not ErrorCode.NONE:
            return fail(error)
        created = m is None
        if m is None:
            try:
                m = meta.new_metadata(txn_id, self._new_producer_id(), timeout, now_ms)
            except ProducerIdsUnavailable:
                return fail(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if not created and self._pending(m):
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not (
            m.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == m.producer_id
            or (expected[0] == m.prev_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return fail(ErrorCode.PRODUCER_FENCED)
        state = m.state
        if state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state is TxnState.ONGOING:
            # fence the producer and abort its transaction; the client retries and bumps the epoch again
            end = self._fence_and_abort(op, txn_id, m, now_ms)
            return op.result(
                InitProducerIdAnswer(
                    end.error if end.error is not ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS
                )
            )
        if state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            raise meta.IllegalTransition(
                f"Found transactionalId {txn_id} with state {state.state_name}. This is illegal as we should "
                "never have transitioned to this state."
            )
        try:
            if m.epoch_exhausted and (expected is None or expected[1] == m.producer_epoch):
                try:
                    new_pid = self._new_producer_id()
                except ProducerIdsUnavailable:
                    return fail(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
                new = meta.rotate_producer_id(m, new_pid, timeout, now_ms, expected is not None)
            else:
                new = meta.increment_epoch(m, timeout, None if expected is None else expected[1], now_ms)
        except ApiError as e:
            return fail(e.code)
        except meta.IllegalTransition:
            # Kafka wraps the transition in Errors.forException: an exhausted epoch with a stale
            # expected epoch is an IllegalStateException, answered UNKNOWN_SERVER_ERROR
            return fail(ErrorCode.UNKNOWN_SERVER_ERROR)
        op.write(None if created else m, new)
        return op.result(InitProducerIdAnswer(ErrorCode.NONE, new.producer_id, new.producer_epoch))

    def add_partitions(self, request: AddPartitionsToTxn, now_ms: int) -> TxnResult:
        """``handleAddPartitionsToTransaction``: one error for every partition."""
        op = _Op(self.replay)
        error = self._add(op, request, request.partitions, request.client_transaction_version, now_ms)
        return op.result(AddPartitionsToTxnAnswer({tp: error for tp in request.partitions}))

    def add_offsets(self, request: AddOffsetsToTxn, now_ms: int) -> TxnResult:
        """``handleAddOffsetsToTxnRequest``: the group's ``__consumer_offsets`` partition joins the
        transaction (at transaction version 0, as KafkaApis asks)."""
        op = _Op(self.replay)
        offsets = TopicPartition(
            OFFSETS_TOPIC, coordinator_partition(request.group_id, self.config.offsets_topic_partitions)
        )
        error = self._add(op, request, (offsets,), TV_0, now_ms)
        return op.result(AddOffsetsToTxnAnswer(error))

    def _add(
        self,
        op: _Op,
        producer: TransactionalProducer,
        partitions: tuple[TopicPartition, ...],
        client_version: int,
        now_ms: int,
    ) -> ErrorCode:
        txn_id, pid, epoch = producer.transactional_id, producer.producer_id, producer.producer_epoch
        if not txn_id:
            return ErrorCode.INVALID_REQUEST
        error, m, _ = self._lookup(txn_id)
        if error is not ErrorCode.NONE:
            return error
        if m is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if self._pending(m):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if m.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if m.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if m.state is TxnState.ONGOING and set(partitions) <= set(m.partitions):
            return ErrorCode.NONE  # already there: nothing to write
        op.write(m, meta.add_partitions(m, partitions, now_ms, client_version))
        return ErrorCode.NONE

    def verify_partitions(self, request: VerifyPartitionsInTxn) -> AddPartitionsToTxnAnswer:
        """``handleVerifyPartitionsInTransaction`` (KIP-890's broker-side check before a transactional
        write): each partition NONE if in the transaction, else TRANSACTION_ABORTABLE."""

        def every(error: ErrorCode) -> AddPartitionsToTxnAnswer:
            return AddPartitionsToTxnAnswer({tp: error for tp in request.partitions})

        if not request.transactional_id:
            return every(ErrorCode.INVALID_REQUEST)
        error, m, _ = self._lookup(request.transactional_id)
        if error is not ErrorCode.NONE:
            return every(error)
        if m is None or m.producer_id != request.producer_id:
            return every(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if m.producer_epoch != request.producer_epoch:
            return every(ErrorCode.PRODUCER_FENCED)
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return every(ErrorCode.CONCURRENT_TRANSACTIONS)
        inside = set(m.partitions)
        return AddPartitionsToTxnAnswer(
            {
                tp: ErrorCode.NONE if tp in inside else ErrorCode.TRANSACTION_ABORTABLE
                for tp in request.partitions
            }
        )

    def end_txn(self, request: EndTxn, now_ms: int) -> TxnResult:
        """``handleEndTransaction``."""
        op = _Op(self.replay)
        answer = self._end(
            op,
            request,
            committed=request.committed,
            from_client=True,
            client_version=request.client_transaction_version,
            now_ms=now_ms,
        )
        return op.result(answer)

    def _fence_and_abort(self, op: _Op, txn_id: str, m: TxnMetadata, now_ms: int) -> EndTxnAnswer:
        """The Ongoing transaction ``m`` fenced (its producer's epoch bumped: PrepareEpochFence) and
        aborted by the coordinator, as a timeout or an InitProducerId of the same id does."""
        fenced = meta.fence_epoch(m)
        return self._end(
            op,
            TransactionalProducer(txn_id, fenced.producer_id, fenced.producer_epoch),
            committed=False,
            from_client=False,
            client_version=self.config.transaction_version,
            now_ms=now_ms,
            fence=fenced,
        )

    def _end(
        self,
        op: _Op,
        producer: TransactionalProducer,
        *,
        committed: bool,
        from_client: bool,
        client_version: int,
        now_ms: int,
        fence: TxnMetadata | None = None,
    ) -> EndTxnAnswer:
        """``endTransaction`` (transactions v2) and ``endTransactionWithTV1``. ``fence`` is the
        PrepareEpochFence transition an InitProducerId or a timeout prepared (its pending state)."""
        txn_id, pid, epoch = producer.transactional_id, producer.producer_id, producer.producer_epoch
        if not txn_id:
            return EndTxnAnswer(ErrorCode.INVALID_REQUEST)
        error, m, coordinator_epoch = self._lookup(txn_id)
        if error is not ErrorCode.NONE:
            return EndTxnAnswer(error)
        if m is None:
            return EndTxnAnswer(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        v2 = supports_epoch_bump(client_version)
        is_fence = fence is not None
        S = TxnState
        if v2:
            retry_on_overflow = (
                not is_fence
                and m.prev_producer_id == pid
                and epoch == MAX_EPOCH - 1
                and m.producer_epoch == 0
            )
            retry_on_bump = not is_fence and m.producer_epoch == epoch + 1
            if not is_fence:
                if m.state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
                    valid_epoch = epoch == m.producer_epoch
                elif m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    valid_epoch = retry_on_bump
                else:
                    valid_epoch = retry_on_bump or retry_on_overflow or epoch == m.producer_epoch
            else:
                valid_epoch = (not from_client or epoch == m.producer_epoch) and epoch >= m.producer_epoch
            is_retry = retry_on_bump or retry_on_overflow
            if m.producer_id != pid and not retry_on_overflow:
                return EndTxnAnswer(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        else:
            retry_on_overflow = is_retry = False
            if m.producer_id != pid:
                return EndTxnAnswer(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            valid_epoch = not ((from_client and epoch != m.producer_epoch) or epoch < m.producer_epoch)
        if not valid_epoch:
            return EndTxnAnswer(ErrorCode.PRODUCER_FENCED)
        if self._pending(m):
            return EndTxnAnswer(ErrorCode.CONCURRENT_TRANSACTIONS)

        def invalid() -> EndTxnAnswer:
            return EndTxnAnswer(ErrorCode.INVALID_TXN_STATE)

        def done() -> EndTxnAnswer:
            # a retry of an EndTxn that succeeded: v2 answers the current producer id and epoch
            assert m is not None
            if v2:
                return EndTxnAnswer(ErrorCode.NONE, m.producer_id, m.producer_epoch)
            return EndTxnAnswer(ErrorCode.NONE)

        def prepare(state: TxnState, no_partition_added: bool) -> EndTxnAnswer:
            assert m is not None
            current = m
            next_pid = NO_PRODUCER_ID
            # 4.4.0's endTransaction (transactions v2) asks only whether the epoch is exhausted: a fence
            # left the epoch as it was (below), so the abort's own bump is the fence's
            if v2 and current.epoch_exhausted:
                try:
                    next_pid = self._new_producer_id()
                except ProducerIdsUnavailable:
                    return EndTxnAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            if state is S.PREPARE_ABORT and is_fence and not v2:
                # endTransactionWithTV1: the fence's epoch, the pending state cleared (an in-memory
                # change Kafka makes before the append; the record carries it). Transactions v2 only
                # clears the pending state: the abort bumps the epoch once, and that bump fences
                # (4.4.0's generateTxnTransitMetadataForTxnCompletion, read off its bytecode; checked in
                # tests/apache_kafka/test_diff_transactions.py)
                current = dataclasses.replace(
                    current, producer_epoch=epoch, last_producer_epoch=NO_PRODUCER_EPOCH
                )
            new = meta.abort_or_commit(
                current, state, client_version if v2 else TV_0, next_pid, now_ms, no_partition_added
            )
            op.write(current, new)
            op.effects.append(self._markers(new, coordinator_epoch))
            if v2:
                # Kafka answers with the completion it prepares once the Prepare* record is written:
                # the bumped epoch, or the next producer id at epoch 0 when the epoch overflowed
                completion = meta.complete(new, now_ms)
                return EndTxnAnswer(ErrorCode.NONE, completion.producer_id, completion.producer_epoch)
            return EndTxnAnswer(ErrorCode.NONE)

        state = m.state
        if state is S.ONGOING:
            return prepare(S.PREPARE_COMMIT if committed else S.PREPARE_ABORT, False)
        if state is S.COMPLETE_COMMIT:
            if committed:
                return done() if (is_retry or not v2) else invalid()
            return invalid() if (is_retry or not v2) else prepare(S.PREPARE_ABORT, True)
        if state is S.COMPLETE_ABORT:
            if not committed:
                return done() if (is_retry or not v2) else prepare(S.PREPARE_ABORT, True)
            return invalid()
        if state is S.PREPARE_COMMIT:
            return EndTxnAnswer(ErrorCode.CONCURRENT_TRANSACTIONS) if committed else invalid()
        if state is S.PREPARE_ABORT:
            return invalid() if committed else EndTxnAnswer(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state is S.EMPTY:
            return prepare(S.PREPARE_ABORT, True) if (v2 and not committed) else invalid()
        raise meta.IllegalTransition(
            f"Found transactionalId {txn_id} with state {state.state_name}. This is illegal as we should "
            "never have transitioned to this state."
        )

    def _markers(self, m: TxnMetadata, coordinator_epoch: int) -> WriteMarkers:
        return WriteMarkers(
            transactional_id=m.transactional_id,
            producer_id=m.producer_id,
            producer_epoch=m.producer_epoch,
            committed=m.state is TxnState.PREPARE_COMMIT,
            partitions=m.partitions,
            coordinator_epoch=coordinator_epoch,
            transaction_version=m.client_transaction_version,
        )

    def markers_written(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnResult:
        """Every marker of the transaction's :class:`WriteMarkers` is written: the transaction completes
        (CompleteCommit or CompleteAbort, with the time its completion was prepared). A completion that
        no longer matches (the id moved, was reloaded or ended otherwise) writes nothing."""
        op = _Op(self.replay)
        error, m, _ = self._lookup(transactional_id)
        at = self._complete_at.get(transactional_id)
        if (
            error is not ErrorCode.NONE
            or m is None
            or at is None
            or m.producer_id != producer_id
            or m.producer_epoch != producer_epoch
        ):
            return op.result()
        op.write(m, meta.complete(m, at))
        return op.result()

    # --- queries ------------------------------------------------------------------------------------

    def describe(self, request: DescribeTransactions) -> tuple[DescribedTransaction, ...]:
        """``handleDescribeTransactions`` for each id, in the request's order."""
        out: list[DescribedTransaction] = []
        for txn_id in request.transactional_ids:
            if not txn_id:
                out.append(DescribedTransaction(txn_id, ErrorCode.INVALID_REQUEST))
                continue
            error, m, _ = self._lookup(txn_id)
            if error is not ErrorCode.NONE:
                out.append(DescribedTransaction(txn_id, error))
                continue
            if m is None or m.state is TxnState.DEAD:
                out.append(DescribedTransaction(txn_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND))
                continue
            topics: dict[str, list[int]] = {}
            for tp in m.partitions:
                topics.setdefault(tp.topic, []).append(tp.partition)
            out.append(
                DescribedTransaction(
                    txn_id,
                    ErrorCode.NONE,
                    state=m.state.state_name,
                    transaction_timeout_ms=m.txn_timeout_ms,
                    transaction_start_time_ms=m.txn_start_ms,
                    producer_id=m.producer_id,
                    producer_epoch=m.producer_epoch,
                    topics=tuple((t, tuple(ps)) for t, ps in topics.items()),
                )
            )
        return tuple(out)

    def list_transactions(self, request: ListTransactions, now_ms: int) -> ListTransactionsAnswer:
        """``listTransactionStates`` over the partitions this coordinator leads (sorted by transactional
        id: Kafka's order is its hash maps')."""
        if self._loading:
            return ListTransactionsAnswer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        states: set[TxnState] = set()
        unknown: list[str] = []
        for name in request.state_filters:
            state = TxnState.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                states.add(state)
        pattern = None
        if request.transactional_id_pattern:
            # Kafka compiles it with RE2/J (com.google.re2j.Pattern) and matches whole ids
            try:
                pattern = compile_topic_regex(request.transactional_id_pattern)
            except InvalidTopicRegex:
                return ListTransactionsAnswer(ErrorCode.INVALID_REGULAR_EXPRESSION)
        pids = set(request.producer_id_filters)
        listed: list[ListedTransaction] = []
        for txn_id in self._served_ids():
            m = self._txns[txn_id]
            if m.state is TxnState.DEAD:
                continue
            if pids and m.producer_id not in pids:
                continue
            if request.state_filters and m.state not in states:
                continue
            if request.duration_filter_ms >= 0 and now_ms - m.txn_start_ms <= request.duration_filter_ms:
                continue
            if pattern is not None and not pattern.fullmatch(txn_id):
                continue
            listed.append(ListedTransaction(txn_id, m.producer_id, m.state.state_name))
        return ListTransactionsAnswer(ErrorCode.NONE, tuple(unknown), tuple(listed))
