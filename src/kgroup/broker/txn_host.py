"""The transaction host: the broker's side of :class:`kgroup.transactions.TransactionCoordinator`.

Kafka's transaction coordinator keeps its state in the compacted internal topic ``__transaction_state``
(``transaction.state.log.num.partitions`` = 50 partitions, made at the first FindCoordinator for a
transactional id, with ``TransactionStateManager.transactionTopicConfigs``). kgroup's host does the same:

* every call of the coordinator runs on a thread of its own (``kgroup-transactions``), one at a time —
  the sweeps walk every transactional id, and the loop serving connections never does;
* **persist, then answer**: the records a call returns are appended (one uncompressed RecordBatch v2 per
  partition, Kafka's key and value bytes: :meth:`TransactionCoordinator.encode`) to the transactional
  id's ``__transaction_state`` partition on the broker's loop, where the partitions' logs live, before
  the answer is sent; a failed append rebuilds the coordinator from the topic (undoing the call) and the
  request is answered ``COORDINATOR_NOT_AVAILABLE``;
* **replayed on start**: the topic's partitions are read back (a megabyte at a time on the broker's
  loop, which owns the logs, giving other connections a turn after each read; decoded and replayed on
  the coordinator's thread) before any transactional request is served — they are answered
  ``COORDINATOR_LOAD_IN_PROGRESS`` meanwhile — and
  every transaction left in PrepareCommit or PrepareAbort completes, as Kafka's loader resends its
  markers. The partitions' logs are the broker's (fsync policy included), so a ``kill -9`` keeps what
  they kept;
* the two sweeps (timed-out transactions, expired ids) fire from timers on the broker's loop and run on
  the coordinator's thread.

One process serves every broker node: the coordinator leads every ``__transaction_state`` partition, and
a request reaching a node that does not lead its id's partition is answered ``NOT_COORDINATOR``
(:meth:`TransactionHost.coordinator_node`).

Markers: the ``WriteMarkers`` effect appends a control batch to each partition of the transaction
(every partition's log is in this process) and completes the transaction (``markers_written``) before
the EndTxn that ended it is answered (Kafka answers after the Prepare* record and writes the markers
afterwards; here they are local appends).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from kgroup.broker.cluster import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, Cluster
from kgroup.broker.host_thread import HostThread, read_batch_entries
from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.api import (
    AddPartitionsToTxn,
    AddPartitionsToTxnAnswer,
    ScheduleTxnTimer,
    TransactionalProducer,
    TxnRequest,
    TxnResult,
    TxnTimer,
    VerifyPartitionsInTxn,
    WriteMarkers,
)
from kgroup.transactions.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from kgroup.transactions.records import TransactionLogRecord, decode_record
from kgroup.transactions.state import TV_2

__all__ = [
    "TRANSACTION_STATE_CONFIGS",
    "TRANSACTION_STATE_TOPIC",
    "TransactionHost",
    "read_batch_entries",
    "verification_error",
]

log = logging.getLogger("kgroup.broker")
T = TypeVar("T")

#: ``TransactionStateManager.transactionTopicConfigs`` with 4.4.0's defaults
#: (``transaction.state.log.min.isr`` 2, ``transaction.state.log.segment.bytes`` 100 MiB)
TRANSACTION_STATE_CONFIGS = {
    "unclean.leader.election.enable": "false",
    "compression.type": "uncompressed",
    "cleanup.policy": "compact",
    "min.insync.replicas": "2",
    "segment.bytes": "104857600",
}
#: markers the disk refused are tried again after this long
_RETRY_S = 0.5


#: the coordinator's answers that mean "not now" to a partition leader's verification
_COORDINATOR_NOT_READY = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
)


def verification_error(error: ErrorCode, *, abortable: bool) -> ErrorCode:
    """The coordinator's answer to :meth:`TransactionHost.verify_partition` as Kafka's
    ``AddPartitionsToTxnManager`` hands it to the write it verifies: TRANSACTION_ABORTABLE stays so only
    for a client that knows it (``abortable``; INVALID_TXN_STATE otherwise), a fenced producer is
    INVALID_PRODUCER_EPOCH, a coordinator that cannot answer now NOT_ENOUGH_REPLICAS (the client
    retries); any other error as it is."""
    if error is ErrorCode.TRANSACTION_ABORTABLE:
        return error if abortable else ErrorCode.INVALID_TXN_STATE
    if error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error in _COORDINATOR_NOT_READY:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return error


class TransactionHost(HostThread[TxnTimer]):
    """The transaction coordinator on its thread, its records in ``__transaction_state``."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        clock_ms: Callable[[], int],
        allocate_producer_id: Callable[[], int],
        config: TxnCoordinatorConfig | None = None,
        notify_appended: Callable[[str, int, int], None] | None = None,
    ) -> None:
        super().__init__(cluster, "kgroup-transactions", notify_appended)
        self.clock_ms = clock_ms
        self.config = config or TxnCoordinatorConfig(
            offsets_topic_partitions=cluster.config.offsets_topic_partitions
        )
        self._allocate = allocate_producer_id
        self.coordinator = TransactionCoordinator(self.config, allocate_producer_id)
        self.loaded = False
        #: the group coordinators hear of a marker reaching an ``__consumer_offsets`` partition
        #: (partition, producer id, committed); True once what it wrote is durable (the broker sets it)
        self.offsets_marker: Callable[[int, int, bool], Awaitable[bool]] | None = None

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Replay ``__transaction_state`` on the coordinator's thread; returns before that ends."""
        self._lock = asyncio.Lock()
        self._loading = asyncio.get_running_loop().create_task(self._load())

    async def _load(self) -> None:
        assert self._lock is not None
        async with self._lock:
            try:
                result = await self._on_thread(self._rebuild, await self._read_all(TRANSACTION_STATE_TOPIC))
            except Exception:
                log.exception("loading %s failed; transactions are not served", TRANSACTION_STATE_TOPIC)
                raise
            self.loaded = True
            await self._perform(result)
            started = await self._on_thread(self.coordinator.start, self.clock_ms())
            await self._perform(started)

    def _rebuild(self, entries: Sequence[tuple[bytes, bytes | None]]) -> TxnResult:
        """On the coordinator's thread: a coordinator rebuilt from the topic's records."""
        coordinator = TransactionCoordinator(self.config, self._allocate)
        records: list[TransactionLogRecord] = []
        for key, value in entries:
            record = decode_record(key, value)
            if record is not None:
                records.append(record)
        result = coordinator.load_all(records, self.clock_ms())
        self.coordinator = coordinator
        return result

    # --- where ----------------------------------------------------------------------------------------

    def ensure_topic(self) -> bool:
        """Make ``__transaction_state`` unless it exists, as Kafka's first FindCoordinator for a
        transactional id does; True when it was made now (that FindCoordinator is answered
        COORDINATOR_NOT_AVAILABLE and the client asks again)."""
        if TRANSACTION_STATE_TOPIC in self.cluster.topics:
            return False
        rf = min(self.cluster.config.replication_factor, len(self.cluster.broker_ids))
        try:
            self.cluster.create_topic(
                TRANSACTION_STATE_TOPIC, self.config.transaction_log_partitions, rf, TRANSACTION_STATE_CONFIGS
            )
        except Exception as exc:
            log.warning("cannot create %s: %s", TRANSACTION_STATE_TOPIC, exc)
            return False
        return True

    def coordinator_node(self, transactional_id: str) -> int:
        """The node leading the id's ``__transaction_state`` partition (-1: none, or no topic yet)."""
        if TRANSACTION_STATE_TOPIC not in self.cluster.topics:
            return -1
        return self.cluster.partition_leader(
            TRANSACTION_STATE_TOPIC, self.coordinator.partition_for(transactional_id)
        )

    # --- requests -------------------------------------------------------------------------------------

    async def handle(self, request: TxnRequest) -> tuple[ErrorCode, Any]:
        """(NONE, the coordinator's answer) once its records are appended; (error, None) when the
        answer cannot be given (still loading, the append failed)."""
        if not self.loaded or self._lock is None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        async with self._lock:
            try:
                result = await self._on_thread(self.coordinator.handle, request, self.clock_ms())
            except Exception:
                # Kafka answers an unexpected error UNKNOWN_SERVER_ERROR; what the call replayed
                # before it raised was never appended: the coordinator is rebuilt from the topic
                log.exception("transaction coordinator failed on %s", type(request).__name__)
                await self._rebuild_from_topic()
                return ErrorCode.UNKNOWN_SERVER_ERROR, None
            if not await self._perform(result):
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return ErrorCode.NONE, result.answer

    async def verify_partition(
        self, producer: TransactionalProducer, tp: TopicPartition, *, add: bool
    ) -> ErrorCode:
        """What a partition leader's ``AddPartitionsToTxnManager`` asks the coordinator: is ``tp`` in
        the producer's transaction (KIP-890's verification), or, for a transactions-v2 producer
        (``add``), add it. NONE when it is in; else the coordinator's error, for the caller to map."""
        request: TxnRequest
        if add:
            request = AddPartitionsToTxn(
                producer.transactional_id, producer.producer_id, producer.producer_epoch, (tp,), TV_2
            )
        else:
            request = VerifyPartitionsInTxn(
                producer.transactional_id, producer.producer_id, producer.producer_epoch, (tp,)
            )
        error, result = await self.handle(request)
        if error is ErrorCode.NONE:
            assert isinstance(result, AddPartitionsToTxnAnswer)
            error = result.error
        return error

    async def inspect(self, read: Callable[[TransactionCoordinator], T]) -> T:
        """``read(coordinator)`` on the coordinator's thread, once loaded (tests)."""
        await self.wait_loaded()
        return await self._on_thread(read, self.coordinator)

    # --- results --------------------------------------------------------------------------------------

    async def _rebuild_from_topic(self) -> None:
        """The coordinator rebuilt from ``__transaction_state`` after a call it could not complete (what
        the call replayed was never appended); logged, not raised, when that fails too."""
        try:
            await self._on_thread(self._rebuild, await self._read_all(TRANSACTION_STATE_TOPIC))
        except Exception:
            log.exception("rebuilding the transaction coordinator failed")

    async def _perform(self, result: TxnResult) -> bool:
        """Append the records, then run the effects (under the lock); False when the append failed
        (the coordinator is then rebuilt from the topic)."""
        if result.records and not self._append(result.records):
            await self._rebuild_from_topic()
            return False
        for effect in result.effects:
            if isinstance(effect, ScheduleTxnTimer):
                self._schedule(effect)
            elif isinstance(effect, WriteMarkers):
                await self._write_markers(effect)
        return True

    def _append(self, records: Sequence[TransactionLogRecord]) -> bool:
        now_ms = self.clock_ms()
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for record in records:
            partition = self.coordinator.partition_for(record.transactional_id)
            by_partition.setdefault(partition, []).append(self.coordinator.encode(record))
        try:
            self.ensure_topic()
            self._append_batches(TRANSACTION_STATE_TOPIC, by_partition, now_ms)
        except Exception as exc:
            log.error("cannot append to %s: %s", TRANSACTION_STATE_TOPIC, exc)
            return False
        return True

    async def _write_markers(self, markers: WriteMarkers) -> None:
        """Append the commit or abort marker to each partition of the transaction (``WriteTxnMarkers``;
        here, where every partition's log is, on the broker's loop), then complete the transaction.
        A partition gone since (its topic deleted) or refusing the marker (an older epoch) is logged
        and passed, as Kafka's marker writer drops a marker whose partition is gone. An
        ``__consumer_offsets`` partition (AddOffsetsToTxn, TxnOffsetCommit v5) first tells the group
        coordinators (``offsets_marker``), which commit or drop the transaction's pending offsets of
        the partition's groups and persist that, then gets its marker like any partition."""
        now_ms = self.clock_ms()
        for tp in markers.partitions:
            plog = self.cluster.partition_log(tp.topic, tp.partition)
            if plog is None:
                continue
            try:
                if tp.topic == OFFSETS_TOPIC and self.offsets_marker is not None:
                    await self._end_offsets(tp.partition, markers)
                appended = plog.append_marker(
                    markers.producer_id,
                    markers.producer_epoch,
                    markers.committed,
                    markers.coordinator_epoch,
                    now_ms=now_ms,
                )
            except OSError as exc:
                # the disk refused it: the transaction stays Prepare* (answered CONCURRENT_TRANSACTIONS)
                # and the markers not yet written are tried again, as Kafka's marker channel retries
                log.error(
                    "transaction marker for %s-%d not written (%s); retrying", tp.topic, tp.partition, exc
                )
                left = markers.partitions[markers.partitions.index(tp) :]
                retry = dataclasses.replace(markers, partitions=left)
                asyncio.get_running_loop().call_later(_RETRY_S, self._spawn, self._retry_markers, retry)
                return
            except Exception as exc:
                log.warning(
                    "transaction marker for %s-%d (producer %d) not written: %s",
                    tp.topic,
                    tp.partition,
                    markers.producer_id,
                    exc,
                )
                continue
            if self._notify is not None:
                self._notify(tp.topic, tp.partition, appended.valid_bytes)
        completed = await self._on_thread(
            self.coordinator.markers_written,
            markers.transactional_id,
            markers.producer_id,
            markers.producer_epoch,
        )
        await self._perform(completed)

    async def _end_offsets(self, partition: int, markers: WriteMarkers) -> None:
        """The group coordinators end the transaction's offsets of ``__consumer_offsets``-``partition``;
        any failure (a write refused, the coordinators stopping) is an ``OSError``: the markers are
        tried again and the transaction stays Prepare* — never completed with offsets left pending."""
        assert self.offsets_marker is not None
        try:
            done = await self.offsets_marker(partition, markers.producer_id, markers.committed)
        except Exception as exc:
            raise OSError(f"the group coordinators could not end the transaction's offsets: {exc}") from exc
        if not done:
            raise OSError("the group coordinators could not write the transaction's end")

    async def _retry_markers(self, markers: WriteMarkers) -> None:
        if self._lock is None:
            return
        async with self._lock:
            await self._write_markers(markers)

    def _schedule(self, effect: ScheduleTxnTimer) -> None:
        if self._closed:
            return
        previous = self._timers.pop(effect.timer, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        delay_s = max(0.0, (effect.deadline_ms - self.clock_ms()) / 1000)
        self._timers[effect.timer] = loop.call_later(delay_s, self._spawn, self._fire, effect.timer)

    def _spawn(self, work: Callable[[Any], Coroutine[Any, Any, None]], argument: Any) -> None:
        """Run ``work(argument)`` as a task (from a timer: the coroutine is made only when it is due)."""
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(work(argument))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fire(self, timer: TxnTimer) -> None:
        if self._closed or self._lock is None:
            return
        async with self._lock:
            try:
                result = await self._on_thread(self.coordinator.on_timer, timer, self.clock_ms())
            except Exception:
                log.exception("transaction sweep %s failed", timer.value)
                self._schedule(ScheduleTxnTimer(timer, self.clock_ms() + 500))
                return
            await self._perform(result)


def thread_safe(allocate: Callable[[], int]) -> Callable[[], int]:
    """``allocate`` called under a lock (the broker's loop and the coordinator's thread both ask)."""
    lock = threading.Lock()

    def allocate_locked() -> int:
        with lock:
            return allocate()

    return allocate_locked
