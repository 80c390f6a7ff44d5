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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kgroup.model import TopicPartition
from kgroup.sim.scenario import WorkloadSpec

__all__ = ["ConsumerLoad", "ProcessingMember", "Workload"]


class ProcessingMember:
    """What the workload needs from a member (structural: ``kgroup.member.ConsumerMember`` fits)."""

    def assignment(self) -> frozenset[TopicPartition]:  # pragma: no cover - protocol
        raise NotImplementedError

    def positions(self) -> Mapping[TopicPartition, int]:  # pragma: no cover - protocol
        raise NotImplementedError

    def seek(self, tp: TopicPartition, offset: int) -> None:  # pragma: no cover - protocol
        raise NotImplementedError

    def record_processed(self, tp: TopicPartition, next_offset: int) -> None:  # pragma: no cover
        raise NotImplementedError


@dataclass(slots=True)
class ConsumerLoad:
    """Per consumer process: when it was last advanced and the capacity carried (milli-records)."""

    last_ms: int
    budget_milli: int = 0
    stalled_until_ms: int = -1
    processed: int = field(default=0)


class Workload:
    def __init__(self, spec: WorkloadSpec) -> None:
        self.produce_rate = spec.produce_per_partition_per_s
        self.consume_rate = spec.consume_per_consumer_per_s
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

    def committed_lag(self, subscribed: Iterable[int], now_ms: int) -> tuple[int, int]:
        """(total, largest single partition) of log end - committed (nothing committed counts from 0)."""
        total = 0
        largest = 0
        for i in subscribed:
            lag = self.log_end(i, now_ms) - max(self.committed[i], 0)
            total += lag
            largest = max(largest, lag)
        return total, largest

    # --- processing ----------------------------------------------------------------------------------

    def advance(self, load: ConsumerLoad, member: ProcessingMember | None, now_ms: int) -> None:
        """Process what ``member`` could process since ``load.last_ms`` (nothing while stalled)."""
        start = load.last_ms
        if now_ms <= start:
            return
        load.last_ms = now_ms
        if member is None:
            load.budget_milli = 0
            return
        if load.stalled_until_ms > start:
            # the application loop is stuck: no processing until the stall ends
            stall_end = min(load.stalled_until_ms, now_ms)
            load.budget_milli = 0
            start = stall_end
            if start >= now_ms:
                return
        assigned = member.assignment()
        if not assigned:
            load.budget_milli = 0
            return
        positions = member.positions()
        backlog: list[tuple[int, TopicPartition, int, int]] = []  # (available, tp, index, position)
        for tp in sorted(assigned):
            pos = positions.get(tp)
            i = self.index.get(tp)
            if pos is None or i is None:
                continue  # position not known yet (offsets being fetched)
            end = self.log_end(i, now_ms)
            if pos < 0:
                pos = self._reset(i, end)
                member.seek(tp, pos)
            if end > pos:
                backlog.append((end - pos, tp, i, pos))
        if not backlog:
            load.budget_milli = 0
            return
        load.budget_milli += self.consume_rate * (now_ms - start)
        capacity = load.budget_milli // 1000
        total = sum(b[0] for b in backlog)
        if total <= capacity:
            grants = [b[0] for b in backlog]
            load.budget_milli = 0  # caught up: idle capacity is not banked
        else:
            grants = _water_fill([b[0] for b in backlog], capacity)
            load.budget_milli -= capacity * 1000
        for (_, tp, i, pos), grant in zip(backlog, grants, strict=True):
            if grant <= 0:
                continue
            end = pos + grant
            self.records_processed += grant
            load.processed += grant
            hw = self.high_water[i]
            if hw > pos:
                self.records_reprocessed += min(end, hw) - pos
            if end > hw:
                self.high_water[i] = end
            member.record_processed(tp, end)

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
