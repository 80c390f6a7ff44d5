"""The workload: records produced into every partition, processed by consumers, committed.

Production is continuous: partition ``p`` created at ``t0`` has log end offset
``floor(rate * (t - t0) / 1000)`` at time ``t``. Processing is computed analytically between two
moments a consumer is looked at (the simulator never ticks): a consumer may process up to
``consume_per_consumer_per_s`` records per second over the partitions it owns, from the positions
its member holds, shared fairly between partitions that have records waiting (water-filling), with
unused capacity not banked. Each processed range ``[a, b)`` of a partition is compared with the
highest offset any consumer ever processed there: the overlap is *reprocessing* (a new owner started
from an older committed offset). A position of ``-1`` (nothing committed) is reset as
``auto.offset.reset`` says: ``latest`` (Kafka's default) skips to the log end (those records are
counted as skipped), ``earliest`` starts at 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kgroup.model import TopicPartition
from kgroup.sim.scenario import WorkloadSpec

__all__ = ["ConsumerLoad", "ProcessingMember", "Workload"]


class ProcessingMember(Protocol):
    """What the workload needs from a member (``kgroup.member.ClassicConsumerMember`` fits)."""

    def assignment(self) -> frozenset[TopicPartition]: ...

    def pending_revocation(self) -> frozenset[TopicPartition]: ...

    def positions(self) -> Mapping[TopicPartition, int]: ...

    def seek(self, tp: TopicPartition, offset: int) -> None: ...

    def record_processed_many(self, processed: Iterable[tuple[TopicPartition, int]]) -> None: ...


@dataclass(slots=True)
class ConsumerLoad:
    """Per consumer process: when it was last advanced and the capacity carried (milli-records)."""

    last_ms: int
    budget_milli: int = 0
    stalled_until_ms: int = -1
    processed: int = field(default=0)
    busy_since_ms: int | None = None  # backlogged since (full batches back to back), None: caught up
    # where in its batch cycle the process was when it fell behind: independent processes are not
    # in step (drawn by the simulator from its seeded random stream)
    batch_phase_ms: int = 0
    # the member's assignment and the same sorted (processing order is by partition, not hash order)
    sorted_for: frozenset[TopicPartition] = frozenset()
    #: ... as ``(partition, index, production rate × creation time)`` (the log end at ``t`` is
    #: ``(rate × t - that) // 1000``: the same integer as ``rate × (t - created) // 1000``)
    sorted_assignment: list[tuple[TopicPartition, int, int]] = field(default_factory=list)
    #: exactly-once processing: told each processed range ``(partition, index, from, to)`` and the
    #: window it was processed in (the open transaction books them, :mod:`kgroup.sim.exactly_once`)
    #: exactly-once: the application closed its tasks after a fenced commit and waits for its member's
    #: next generation (Kafka Streams' TaskMigratedException): it processes nothing meanwhile
    suspended: bool = False
    on_processed: Callable[[list[tuple[TopicPartition, int, int, int]], int, int], None] | None = None


class Workload:
    def __init__(self, spec: WorkloadSpec) -> None:
        self.produce_rate = spec.produce_per_partition_per_s
        self.consume_rate = spec.consume_per_consumer_per_s
        # one full poll() batch (max.poll.records) takes this long to process
        self.batch_ms = (
            -(-spec.max_poll_records * 1000 // spec.consume_per_consumer_per_s)
            if spec.consume_per_consumer_per_s
            else 0
        )
        self.reset_latest = spec.auto_offset_reset == "latest"
        self.index: dict[TopicPartition, int] = {}
        self.partitions: list[TopicPartition] = []
        self.created_ms: list[int] = []
        self.committed: list[int] = []  # -1: nothing committed yet
        self.high_water: list[int] = []  # highest offset (exclusive) any consumer processed
        self.records_processed = 0
        self.records_reprocessed = 0
        self.records_skipped = 0

    # --- partitions and offsets --------------------------------------------------------------------

    def add_partitions(self, partitions: Iterable[TopicPartition], now_ms: int) -> None:
        for tp in partitions:
            self.index[tp] = len(self.partitions)
            self.partitions.append(tp)
            self.created_ms.append(now_ms)
            self.committed.append(-1)
            self.high_water.append(0)

    def log_end(self, i: int, now_ms: int) -> int:
        return (self.produce_rate * (now_ms - self.created_ms[i])) // 1000

    def records_produced(self, now_ms: int) -> int:
        return sum(self.log_end(i, now_ms) for i in range(len(self.partitions)))

    def on_commit(self, tp: TopicPartition, offset: int) -> None:
        i = self.index.get(tp)
        if i is not None and offset >= 0:
            self.committed[i] = offset

    def lag(self, subscribed: Iterable[int], now_ms: int) -> tuple[int, int, int]:
        """Over ``subscribed`` partitions: (total log end - committed, the largest single such lag,
        total log end - furthest processed offset). A partition with nothing committed has no
        committed lag (Kafka's ``kafka-consumer-groups`` shows ``-``); its records still count as
        unprocessed."""
        rate = self.produce_rate
        created, committed, high = self.created_ms, self.committed, self.high_water
        total = largest = unprocessed = 0
        for i in subscribed:
            end = (rate * (now_ms - created[i])) // 1000
            unprocessed += end - high[i]
            offset = committed[i]
            if offset < 0:
                continue
            lag = end - offset
            total += lag
            if lag > largest:
                largest = lag
        return total, largest, unprocessed

    # --- processing ----------------------------------------------------------------------------------

    def advance(self, load: ConsumerLoad, member: ProcessingMember | None, now_ms: int) -> None:
        """Process what ``member`` could process since ``load.last_ms`` (nothing while stalled)."""
        start = load.last_ms
        if now_ms <= start:
            return
        load.last_ms = now_ms
        if member is None:
            load.budget_milli = 0
            load.busy_since_ms = None
            return
        if load.stalled_until_ms > start:
            # the application loop is stuck: no processing until the stall ends
            stall_end = min(load.stalled_until_ms, now_ms)
            load.budget_milli = 0
            start = stall_end
            if start >= now_ms:
                return
        # an EAGER member stops fetching while its pre-join commit is in flight
        assigned = member.assignment()
        if not assigned or load.suspended:
            load.budget_milli = 0
            load.busy_since_ms = None
            return
        paused = member.pending_revocation()
        if assigned is not load.sorted_for:
            if assigned != load.sorted_for:
                index, created, rate = self.index, self.created_ms, self.produce_rate
                load.sorted_assignment = [
                    (tp, i, rate * created[i]) for tp in sorted(assigned) if (i := index.get(tp)) is not None
                ]
            # (kept also when only the set is new: the next call then needs no comparison)
            load.sorted_for = assigned
        position = member.positions().get
        produced = self.produce_rate * now_ms
        # what each partition has waiting: (partition, index, position, log end)
        backlog: list[tuple[TopicPartition, int, int, int]] = []
        total = 0
        for tp, i, born in load.sorted_assignment:
            pos = position(tp)
            if pos is None or (paused and tp in paused):
                continue  # position not known yet (offsets being fetched), or paused
            end = (produced - born) // 1000
            if pos < 0:
                pos = self._reset(i, end)
                member.seek(tp, pos)
            if end > pos:
                backlog.append((tp, i, pos, end))
                total += end - pos
        if not backlog:
            load.budget_milli = 0
            load.busy_since_ms = None
            return
        budget = load.budget_milli + self.consume_rate * (now_ms - start)
        capacity = budget // 1000
        if total <= capacity:
            # caught up: every partition is processed to its log end (idle capacity is not banked)
            load.budget_milli = 0
            load.busy_since_ms = None
            processed = total
            reached = backlog
        else:
            grants = _water_fill([end - pos for _, _, pos, end in backlog], capacity)
            load.budget_milli = budget - capacity * 1000
            if load.busy_since_ms is None:
                load.busy_since_ms = start - load.batch_phase_ms
            processed = sum(grants)
            reached = [
                (tp, i, pos, pos + grant)
                for (tp, i, pos, _), grant in zip(backlog, grants, strict=True)
                if grant > 0
            ]
        high = self.high_water
        reprocessed = 0
        done: list[tuple[TopicPartition, int]] = []
        add = done.append
        for tp, i, pos, end in reached:
            hw = high[i]
            if hw > pos:
                reprocessed += (end if end < hw else hw) - pos  # below what was processed before
            if end > hw:
                high[i] = end
            add((tp, end))
        member.record_processed_many(done)
        if load.on_processed is not None:
            load.on_processed(reached, start, now_ms)
        self.records_processed += processed
        self.records_reprocessed += reprocessed
        load.processed += processed

    def next_poll_ms(self, load: ConsumerLoad, now_ms: int) -> int:
        """When the application next calls ``poll()``: now if it is caught up (it waits inside
        poll() for records), else at the end of the batch it is processing (full batches of
        ``max.poll.records`` back to back since it fell behind)."""
        since = load.busy_since_ms
        if since is None or self.batch_ms <= 0 or now_ms <= since:
            return now_ms
        batches = -(-(now_ms - since) // self.batch_ms)
        return since + batches * self.batch_ms

    def _reset(self, i: int, end: int) -> int:
        if not self.reset_latest:
            return 0
        hw = self.high_water[i]
        if end > hw:
            self.records_skipped += end - hw
            self.high_water[i] = end
        return end


def _water_fill(wants: list[int], capacity: int) -> list[int]:
    """Share ``capacity`` fairly: each partition gets an equal share capped at what it has waiting,
    smallest first, so what a small partition leaves over goes to the others; the few units integer
    division leaves are handed out one each in partition order."""
    grants = [0] * len(wants)
    order = sorted(range(len(wants)), key=lambda k: (wants[k], k))
    left = capacity
    remaining = len(order)
    for k in order:
        give = min(wants[k], left // remaining)
        grants[k] = give
        left -= give
        remaining -= 1
    for k in range(len(wants)):
        if left <= 0:
            break
        if grants[k] < wants[k]:
            grants[k] += 1
            left -= 1
    return grants
