"""The exactly-once workload (``workload.processing: exactly_once``): consume-transform-produce in
transactions, driven through kgroup's real transaction coordinator and group coordinator.

Each consumer process has a transactional producer (``transactional.id`` = the consumer's id, so a
restarted process fences the one before it) and runs Kafka Streams' exactly-once loop (EOS v2,
KIP-447: one transaction per process): the records it processes write their output into the open
transaction; every ``commit_interval_ms`` the transaction is committed with the consumed offsets in it
(AddOffsetsToTxn, TxnOffsetCommit with the consumer's group metadata — generation or member epoch,
member id, instance id — then EndTxn). What the simulator calls, in order, is what a Java producer
sends (transactions v2: a partition leader adds an output partition, AddPartitionsToTxn v4+):

* **kgroup's** :class:`~kgroup.transactions.coordinator.TransactionCoordinator` answers InitProducerId,
  AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, fences an older epoch, aborts an open transaction
  when a restarted process re-initialises its id, and aborts transactions past their timeout in its
  sweep (a queue event); its WriteMarkers are carried out at once — the group's
  ``__consumer_offsets`` marker is :meth:`~kgroup.group.GroupCoordinator.end_transaction`, which
  materialises or drops the pending offsets;
* **the simulation's group coordinator** answers TxnOffsetCommit (v5, as a Java producer sends it)
  with Kafka's KIP-447 checks: a zombie — a member the group has moved past — is refused
  (``ILLEGAL_GENERATION``, ``UNKNOWN_MEMBER_ID``, ``FENCED_INSTANCE_ID``; ``STALE_MEMBER_EPOCH`` is
  ``ILLEGAL_GENERATION`` before v6) and its transaction aborted.

What the application does when the group takes partitions from it is Kafka Streams': a revocation
(``onPartitionsRevoked``, the member still in the group) commits the transaction; lost partitions
(``onPartitionsLost``: fenced, session or poll timeout noticed) abort it; a fenced commit aborts it;
either way the partitions the process still owns go back to the transaction's first offsets. A graceful
stop commits; a crash leaves the transaction open (aborted when the process comes back and
re-initialises its id, or by the coordinator's timeout sweep).

The simulator's own books (not the coordinators') check the result: per partition, the output
committed so far must continue exactly where the last committed transaction stopped — a range
committed twice is an *output duplicate*, a range skipped an *output gap* — and at the end the group's
committed offset of every partition must be where its committed output ends. Either is an invariant
violation.

Modelled, not exact: the transaction's calls take no virtual time (one broker; the commit's round
trips are not counted in the added latency), as the revocation callbacks take none; a process cut off
by a ``network_partition`` cannot reach the coordinators, so it commits at its first look after the cut
heals (and keeps processing meanwhile: fetching is not modelled). Output records have no log of their
own: their visibility to a ``read_committed`` reader is their transaction's commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from kgroup.member import Phase
from kgroup.messages import Envelope, OffsetCommitPartition, TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.sim.coordinator_results import apply_coordinator_result
from kgroup.sim.host import CoordinatorHost
from kgroup.sim.process import ConsumerProcess
from kgroup.sim.scenario import Scenario
from kgroup.sim.scheduler import TXN_TIMER
from kgroup.sim.workload import Workload
from kgroup.transactions.api import (
    AddOffsetsToTxn,
    AddOffsetsToTxnAnswer,
    AddPartitionsToTxn,
    AddPartitionsToTxnAnswer,
    EndTxn,
    EndTxnAnswer,
    InitProducerId,
    InitProducerIdAnswer,
    ScheduleTxnTimer,
    TxnResult,
    TxnTimer,
    WriteMarkers,
)
from kgroup.transactions.coordinator import OFFSETS_TOPIC, TransactionCoordinator, TxnCoordinatorConfig
from kgroup.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_2

__all__ = ["OUTPUT_SUFFIX", "EosHost", "ExactlyOnce"]

#: an input partition's output goes to the same partition of ``<topic>-output``
OUTPUT_SUFFIX = "-output"
#: the TxnOffsetCommit version a Java 4.4 producer sends (transactions v2: docs/transactions.md)
TXN_OFFSET_COMMIT_VERSION = 5
_TIMERS = (TxnTimer.ABORT_TIMED_OUT, TxnTimer.EXPIRE_TRANSACTIONAL_IDS)
#: a processed range's records are booked at this many processing times (the latency's resolution)
_SLICES = 10
#: InitProducerId answered CONCURRENT_TRANSACTIONS (an open transaction being aborted) is retried
_INIT_ATTEMPTS = 4


class EosHost(CoordinatorHost, Protocol):
    """What the exactly-once workload acts through (the simulation)."""

    sc: Scenario
    workload: Workload


@dataclass(slots=True)
class _Txn:
    """The records one open transaction has processed: its output, uncommitted."""

    #: partition index -> [first offset, next offset) processed in the transaction
    ranges: dict[int, list[int]] = field(default_factory=dict)
    #: processing time -> records processed then (the added latency is the commit's time minus it)
    chunks: dict[int, int] = field(default_factory=dict)
    records: int = 0
    #: the output partitions the coordinator knows are in the transaction
    added: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Producer:
    """One ``transactional.id``'s producer (a process's; a restart makes a new one with the same id)."""

    transactional_id: str
    producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH
    txn: _Txn = field(default_factory=_Txn)
    ready: bool = False  # InitProducerId succeeded for this incarnation
    #: partition index -> the first offset this incarnation processed and has not committed (across
    #: transactions the coordinator aborted behind its back): where an abort goes back to
    pending_from: dict[int, int] = field(default_factory=dict)
    #: after a fenced commit: the member's (generation, member id) then; processing resumes when the
    #: member is Stable in another one (None: not suspended)
    fenced_as: tuple[int, str] | None = None


class ExactlyOnce:
    """The exactly-once books and the transaction coordinator of one simulation."""

    def __init__(self, sim: EosHost) -> None:
        self.sim = sim
        spec = sim.sc.workload
        self.interval_ms = spec.commit_interval_ms
        self.timeout_ms = spec.transaction_timeout_ms
        self._next_pid = 1000
        self.coordinator = TransactionCoordinator(TxnCoordinatorConfig(), self._allocate)
        self.coordinator.load_all((), 0)
        self.producers: dict[str, _Producer] = {}
        #: per partition index: where the committed output ends (-1: nothing committed yet)
        self.output_end: list[int] = []
        self._abort_reason = "client"
        self._correlation = 0
        # metrics
        self.committed = 0
        self.aborted = 0
        self.aborted_by: dict[str, int] = {}
        self.thrown_away = 0
        self.fenced_by: dict[str, int] = {}
        self.duplicates = 0
        self.gaps = 0
        self.records_committed = 0
        self.latency: dict[int, int] = {}  # ms added (commit - processing) -> records

    def _allocate(self) -> int:
        self._next_pid += 1
        return self._next_pid

    # --- set-up -----------------------------------------------------------------------------------

    def start(self, now: int) -> None:
        """The coordinator's sweeps (scheduled on the simulation's queue)."""
        self._effects(self.coordinator.start(now))

    def add_partitions(self, count: int) -> None:
        self.output_end.extend([-1] * count)

    def on_timer(self, timer: int) -> None:
        self._abort_reason = "timeout"
        self._effects(self.coordinator.on_timer(_TIMERS[timer], self.sim.now))
        self._abort_reason = "client"

    def process_started(self, proc: ConsumerProcess) -> None:
        """A new process: its producer initialises the transactional id (fencing an older incarnation
        and aborting its open transaction, as InitProducerId does) and its processing is booked."""
        producer = self.producers.get(proc.id)
        if producer is None:
            producer = self.producers[proc.id] = _Producer(proc.id)
        self._init(producer)
        producer.pending_from = {}
        producer.fenced_as = None
        proc.load.suspended = False
        proc.load.on_processed = partial(self._processed, producer)

    def _init(self, producer: _Producer) -> None:
        now = self.sim.now
        producer.ready = False
        self._abort_reason = "restart"
        for _ in range(_INIT_ATTEMPTS):
            request = InitProducerId(producer.transactional_id, self.timeout_ms)
            result = self.coordinator.handle(request, now)
            self._effects(result)
            answer = result.answer
            assert isinstance(answer, InitProducerIdAnswer)
            if answer.error is ErrorCode.NONE:
                producer.producer_id, producer.epoch = answer.producer_id, answer.producer_epoch
                producer.ready = True
                break
            # CONCURRENT_TRANSACTIONS: the open transaction was aborted (markers written at once): retry
        self._abort_reason = "client"
        if producer.txn.records or producer.txn.ranges:
            # (an incarnation's open transaction the coordinator did not know of: nothing was added)
            self._discard(producer, "restart")
        producer.txn = _Txn()

    # --- processing -------------------------------------------------------------------------------

    def _processed(
        self,
        producer: _Producer,
        reached: list[tuple[TopicPartition, int, int, int]],
        start_ms: int,
        now: int,
    ) -> None:
        txn = producer.txn
        ranges = txn.ranges
        chunks = txn.chunks
        count = 0
        for _, i, first, end in reached:
            if end <= first:
                continue
            held = ranges.get(i)
            if held is None:
                ranges[i] = [first, end]
                if i not in producer.pending_from:
                    producer.pending_from[i] = first
            else:
                if first != held[1]:
                    self.sim.violation(
                        f"{producer.transactional_id} processed {self.sim.workload.partitions[i]} from "
                        f"{first} inside a transaction that had reached {held[1]}"
                    )
                held[1] = end
            count += end - first
            self._book_times(chunks, i, first, end, start_ms, now)
        if count:
            if not txn.records and producer.ready:
                self._begin(producer)
            txn.records += count

    def _book_times(
        self, chunks: dict[int, int], i: int, first: int, end: int, start_ms: int, now: int
    ) -> None:
        """When the records ``[first, end)`` were processed, in :data:`_SLICES` slices: the workload is
        computed per window, so a record's time is its place in the window's processing, or its
        produce time if it was produced later (a caught-up consumer processes records as they come)."""
        workload = self.sim.workload
        created, rate = workload.created_ms[i], workload.produce_rate
        n = min(_SLICES, end - first)
        span, window = end - first, now - start_ms
        done = first
        for k in range(n):
            upto = first + span * (k + 1) // n
            middle = (done + upto - 1) // 2
            produced = created + -(-(middle + 1) * 1000 // rate) if rate else start_ms
            at = start_ms + window * (2 * k + 1) // (2 * n)
            at = min(now, max(at, produced))
            chunks[at] = chunks.get(at, 0) + upto - done
            done = upto

    def _begin(self, producer: _Producer) -> None:
        """The transaction's first output: its partitions join it (the partition leader's
        AddPartitionsToTxn, transactions v2); the transaction is Ongoing from here."""
        self._add_outputs(producer)

    def _add_outputs(self, producer: _Producer) -> ErrorCode:
        txn = producer.txn
        new = [i for i in txn.ranges if i not in txn.added]
        if not new:
            return ErrorCode.NONE
        partitions = self.sim.workload.partitions
        outputs = tuple(
            TopicPartition(partitions[i].topic + OUTPUT_SUFFIX, partitions[i].partition) for i in new
        )
        request = AddPartitionsToTxn(
            producer.transactional_id, producer.producer_id, producer.epoch, outputs, TV_2
        )
        result = self.coordinator.handle(request, self.sim.now)
        self._effects(result)
        answer = result.answer
        assert isinstance(answer, AddPartitionsToTxnAnswer)
        if answer.error is ErrorCode.NONE:
            txn.added.update(new)
        return answer.error

    # --- the application's commits and aborts -------------------------------------------------------

    def tick(self, proc: ConsumerProcess) -> None:
        """The loop's periodic look: commit when the commit interval has passed (every look is one
        interval apart) and the coordinators can be reached. A process suspended by a fenced commit
        resumes once its member is Stable in another generation."""
        producer = self.producers.get(proc.id)
        member = proc.member
        if producer is not None and producer.fenced_as is not None and member is not None:
            if member.phase is Phase.STABLE and (member.generation, member.member_id) != producer.fenced_as:
                producer.fenced_as = None
                proc.load.suspended = False
                self.sim.log_event("processing_resumed", consumer=proc.id, generation=member.generation)
            return
        self.commit(proc, "interval")

    def commit(self, proc: ConsumerProcess, why: str) -> None:
        producer = self.producers.get(proc.id)
        member = proc.member
        if producer is None or member is None or not producer.txn.records:
            return
        sim = self.sim
        now = sim.now
        if proc.load.stalled_until_ms > now:
            return  # the application loop is stuck (slow_poll): it commits when it resumes
        if sim.net.is_cut(proc.id, now):
            return  # the coordinators cannot be reached: the commit waits for the cut to heal
        if not producer.ready:
            self._init(producer)  # (its unbooked work is thrown away: back to the committed offsets)
            self._rewind(proc, producer)
            return
        txn = producer.txn
        error = self._add_outputs(producer)
        if error is ErrorCode.NONE:
            request = AddOffsetsToTxn(
                producer.transactional_id, producer.producer_id, producer.epoch, sim.group_id
            )
            result = self.coordinator.handle(request, now)
            self._effects(result)
            answer = result.answer
            assert isinstance(answer, AddOffsetsToTxnAnswer)
            error = answer.error
        if error is not ErrorCode.NONE:
            # the producer was fenced (its transaction timed out and was aborted by the coordinator,
            # or a newer incarnation took the id): it is closed and a new one initialised
            self._count(self.fenced_by, error.name)
            if txn.records:
                self._discard(producer, "producer_fenced")
            self._init(producer)
            self._rewind(proc, producer)
            return
        partitions = sim.workload.partitions
        offsets = tuple(
            OffsetCommitPartition(partitions[i], held[1]) for i, held in sorted(txn.ranges.items())
        )
        body = TxnOffsetCommitRequest(
            group_id=sim.group_id,
            transactional_id=producer.transactional_id,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            offsets=offsets,
            generation_id=member.generation,
            member_id=member.member_id,
            group_instance_id=proc.id if proc.static else None,
        )
        self._correlation += 1
        envelope = Envelope(
            f"{proc.id}#producer", self._correlation, body, proc.id, api_version=TXN_OFFSET_COMMIT_VERSION
        )
        group_result = sim.coord.handle(now, envelope)
        reply = next((r.body for r in group_result.replies if r.correlation_id == self._correlation), None)
        apply_coordinator_result(sim, group_result)  # (its reply goes to no process: it is read here)
        assert isinstance(reply, TxnOffsetCommitResponse)
        refused = next((e for _, e in reply.results if e is not ErrorCode.NONE), None)
        if refused is not None:
            # a zombie: the group moved past this member (KIP-447): the transaction is aborted
            self._count(self.fenced_by, refused.name)
            sim.log_event("transaction_fenced", consumer=proc.id, error=refused.name, records=txn.records)
            self._end(producer, committed=False, reason="fenced")
            self._rewind(proc, producer)
            # Kafka Streams: a TaskMigratedException closes the tasks and rejoins; nothing is processed
            # until the member has its next generation
            producer.fenced_as = (member.generation, member.member_id)
            proc.load.suspended = True
            return
        self._end(producer, committed=True, reason=why)

    def lost(self, proc: ConsumerProcess) -> None:
        """``onPartitionsLost``: the transaction is aborted (Kafka Streams closes its tasks dirty)."""
        producer = self.producers.get(proc.id)
        if producer is None or not producer.txn.records:
            return
        if not producer.ready:
            self._discard(producer, "lost")
        else:
            self._end(producer, committed=False, reason="lost")
        self._rewind(proc, producer)

    def _end(self, producer: _Producer, *, committed: bool, reason: str) -> None:
        request = EndTxn(producer.transactional_id, producer.producer_id, producer.epoch, committed, TV_2)
        self._abort_reason = reason
        result = self.coordinator.handle(request, self.sim.now)
        self._effects(result)
        self._abort_reason = "client"
        answer = result.answer
        assert isinstance(answer, EndTxnAnswer)
        if answer.error is ErrorCode.NONE:
            producer.epoch = answer.producer_epoch  # transactions v2 bump the epoch per transaction
            if answer.producer_id != NO_PRODUCER_ID:
                producer.producer_id = answer.producer_id
            if producer.txn.records:
                # (the markers came back for another epoch: the transaction is ended here all the same)
                self._finish(producer, committed=committed, reason=reason)
            return
        # fenced at EndTxn (the coordinator aborted it already): a new producer
        self._count(self.fenced_by, answer.error.name)
        if producer.txn.records:
            self._discard(producer, "producer_fenced")
        self._init(producer)

    def _rewind(self, proc: ConsumerProcess, producer: _Producer) -> None:
        """After an abort the process goes back, on the partitions it still owns, to the group's
        committed offsets (Kafka's ``resetToLastCommittedPositions``; where none is committed, to
        where its uncommitted processing began)."""
        pending, producer.pending_from = producer.pending_from, {}
        member = proc.member
        if member is None or not pending:
            return
        sim = self.sim
        assigned = member.assignment()
        positions = member.positions()
        committed = sim.coord.committed_offsets(sim.group_id)
        partitions = sim.workload.partitions
        for i, start in pending.items():
            tp = partitions[i]
            if tp in assigned and tp in positions:
                value = committed.get(tp)
                member.seek(tp, value.offset if value is not None and value.offset >= 0 else start)

    # --- the coordinator's effects ---------------------------------------------------------------------

    def _effects(self, result: TxnResult) -> None:
        for effect in result.effects:
            if isinstance(effect, ScheduleTxnTimer):
                self.sim.q.push(effect.deadline_ms, TXN_TIMER, _TIMERS.index(effect.timer))
            elif isinstance(effect, WriteMarkers):
                self._markers(effect)

    def _markers(self, markers: WriteMarkers) -> None:
        """The markers are written at once: the group's ``__consumer_offsets`` partition commits or
        drops the pending offsets, the output partitions' records become visible or are dropped."""
        sim = self.sim
        now = sim.now
        if any(tp.topic == OFFSETS_TOPIC for tp in markers.partitions):
            apply_coordinator_result(
                sim, sim.coord.end_transaction(now, markers.producer_id, markers.committed, _every_group)
            )
        producer = self.producers.get(markers.transactional_id)
        if producer is not None and producer.txn.records:
            self._finish(producer, committed=markers.committed, reason=self._abort_reason)
        done = self.coordinator.markers_written(
            markers.transactional_id, markers.producer_id, markers.producer_epoch
        )
        self._effects(done)

    def _finish(self, producer: _Producer, *, committed: bool, reason: str) -> None:
        txn = producer.txn
        producer.txn = _Txn()
        if not committed:
            self._thrown(txn, reason)
            return
        now = self.sim.now
        out = self.output_end
        for i in txn.ranges:
            producer.pending_from.pop(i, None)
        for i, (start, end) in txn.ranges.items():
            before = out[i]
            if before >= 0:
                if start < before:
                    self.duplicates += min(end, before) - start
                    last = min(end, before) - 1
                    self.sim.violation(
                        f"{self.sim.workload.partitions[i]}: output of offsets {start}..{last} "
                        f"committed twice ({producer.transactional_id})"
                    )
                elif start > before:
                    self.gaps += start - before
                    self.sim.violation(
                        f"{self.sim.workload.partitions[i]}: offsets {before}..{start - 1} never output "
                        f"({producer.transactional_id} committed from {start})"
                    )
            if end > before:
                out[i] = end
        self.committed += 1
        self.records_committed += txn.records
        latency = self.latency
        for at, count in txn.chunks.items():
            latency[now - at] = latency.get(now - at, 0) + count

    def _discard(self, producer: _Producer, reason: str) -> None:
        txn = producer.txn
        producer.txn = _Txn()
        self._thrown(txn, reason)

    def _thrown(self, txn: _Txn, reason: str) -> None:
        if not txn.records:
            return
        self.aborted += 1
        self._count(self.aborted_by, reason)
        self.thrown_away += txn.records
        self.sim.log_event("transaction_aborted", reason=reason, records=txn.records)

    @staticmethod
    def _count(counter: dict[str, int], key: str) -> None:
        counter[key] = counter.get(key, 0) + 1

    # --- the end ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """At the end of the run: the group's committed offsets must be where the committed output ends."""
        sim = self.sim
        committed = sim.coord.committed_offsets(sim.group_id)
        for i, end in enumerate(self.output_end):
            if end < 0:
                continue
            tp = sim.workload.partitions[i]
            value = committed.get(tp)
            offset = value.offset if value is not None else -1
            if offset != end:
                sim.violation(f"{tp}: committed offset {offset} but the committed output ends at {end}")

    def metrics(self) -> dict[str, Any]:
        return {
            "processing": "exactly_once",
            "commit_interval_ms": self.interval_ms,
            "transactions_committed": self.committed,
            "transactions_aborted": self.aborted,
            "transactions_aborted_by": dict(sorted(self.aborted_by.items())),
            "records_thrown_away": self.thrown_away,
            "records_committed": self.records_committed,
            "output_duplicates": self.duplicates,
            "output_gaps": self.gaps,
            "commits_fenced_by": dict(sorted(self.fenced_by.items())),
            "latency_added_ms": percentiles(self.latency),
        }


def _every_group(group_id: str) -> bool:
    return True  # (one broker: every group's offsets partition is on it)


def percentiles(histogram: dict[int, int]) -> dict[str, float | None]:
    """p50, p90, p99, max and mean of a ``value -> count`` histogram (``None`` when empty)."""
    total = sum(histogram.values())
    if not total:
        return {"p50": None, "p90": None, "p99": None, "max": None, "mean": None}
    ordered = sorted(histogram.items())
    out: dict[str, float | None] = {}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        rank = q * total
        seen = 0
        for value, count in ordered:
            seen += count
            if seen >= rank:
                out[name] = float(value)
                break
    out["max"] = float(ordered[-1][0])
    out["mean"] = round(sum(v * c for v, c in ordered) / total, 1)
    return out
