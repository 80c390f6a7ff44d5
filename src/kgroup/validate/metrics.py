"""The validation metrics, computed one way for the simulated run and the real ones.

Every run — the simulator's, real clients on ``kgroup serve``, real clients on Apache Kafka — is
reduced to the same inputs: each partition's owner intervals (who held it, as the consumers
themselves saw it: their rebalance callbacks, or the simulated member's ``assignment()``), the
scenario's event times, the batches of records processed, and the number of generations the
coordinator formed. The functions here are pure (no clock, no I/O), so the three columns of the
validation table differ only in what happened, never in how it was counted.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

__all__ = [
    "Batch",
    "Delivery",
    "EventWindow",
    "Interval",
    "idle_member_ms",
    "moved_partitions",
    "read_intervals",
    "records_redelivered",
    "records_reprocessed",
    "time_to_stable_ms",
    "unowned_partition_ms",
]

#: (partition "topic-p", owner, start ms, end ms), end exclusive
Interval = tuple[str, str, int, int]


@dataclass(frozen=True, slots=True)
class Batch:
    """Records ``first``..``last`` (inclusive) of ``partition`` processed at ``t_ms``."""

    t_ms: int
    partition: str
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Delivery:
    """A share consumer got records ``first``..``last`` (inclusive) of ``partition`` at ``t_ms``, each
    at delivery count ``count`` (1: the first delivery)."""

    t_ms: int
    consumer: str
    partition: str
    first: int
    last: int
    count: int


@dataclass(frozen=True, slots=True)
class EventWindow:
    """A scenario event at ``at_ms`` (``label`` e.g. ``crash w1``); the group has until ``until_ms``
    (the next event, or the end of the run) to settle."""

    label: str
    at_ms: int
    until_ms: int


def _covered(partitions: Sequence[str], intervals: Iterable[Interval]) -> dict[str, list[tuple[int, int]]]:
    """Per partition, its owned time as sorted, merged [start, end) spans."""
    raw: dict[str, list[tuple[int, int]]] = {p: [] for p in partitions}
    for p, _owner, start, end in intervals:
        if p in raw and end > start:
            raw[p].append((start, end))
    out: dict[str, list[tuple[int, int]]] = {}
    for p, spans in raw.items():
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        out[p] = merged
    return out


def _owned_at(spans: list[tuple[int, int]], t: int) -> bool:
    i = bisect_right(spans, (t, 2**62)) - 1
    return i >= 0 and spans[i][0] <= t < spans[i][1]


def _segments(
    covered: dict[str, list[tuple[int, int]]], changes: Iterable[Interval], start_ms: int, end_ms: int
) -> list[tuple[int, int, int]]:
    """[start, end) segments between ownership changes (any interval's start or end, a handover from
    one owner to another at the same millisecond included), each with its count of unowned
    partitions."""
    points = {start_ms, end_ms}
    for _p, _owner, s, e in changes:
        if start_ms < s < end_ms:
            points.add(s)
        if start_ms < e < end_ms:
            points.add(e)
    ordered = sorted(points)
    return [
        (a, b, sum(1 for spans in covered.values() if not _owned_at(spans, a))) for a, b in pairwise(ordered)
    ]


def unowned_partition_ms(partitions: Sequence[str], intervals: Iterable[Interval], end_ms: int) -> int:
    """Partition-milliseconds without an owner, from the first moment every partition had one (before
    the group first formed nobody is expected to own anything) to ``end_ms``. 0 if that moment never
    came (the run never formed the group: see :func:`time_to_stable_ms`)."""
    intervals = list(intervals)
    segments = _segments(_covered(partitions, intervals), intervals, 0, end_ms)
    total, formed = 0, False
    for a, b, unowned in segments:
        formed = formed or unowned == 0
        if formed:
            total += unowned * (b - a)
    return total


def moved_partitions(intervals: Iterable[Interval]) -> int:
    """Handovers of a partition to an owner other than its previous one (the first owner of a
    partition is not a move; an eager member getting its own partition back is not one either)."""
    by_partition: dict[str, list[tuple[int, int, str]]] = {}
    for p, owner, start, end in intervals:
        by_partition.setdefault(p, []).append((start, end, owner))
    moves = 0
    for spans in by_partition.values():
        previous: str | None = None
        for _start, _end, owner in sorted(spans):
            if previous is not None and owner != previous:
                moves += 1
            previous = owner
    return moves


def time_to_stable_ms(
    partitions: Sequence[str], intervals: Sequence[Interval], window: EventWindow, end_ms: int
) -> int | None:
    """From the event to the last ownership change before ``window.until_ms``, when every partition
    has an owner after it (0 when nothing changed and every partition was owned); ``None`` when the
    window ends with a partition unowned. Intervals still open when the run ended end at ``end_ms``:
    that is not a change."""
    until = min(window.until_ms, end_ms)
    segments = _segments(_covered(partitions, intervals), intervals, window.at_ms, until)
    if not segments or segments[-1][2] != 0:
        return None
    last_change = segments[-1][0]
    return last_change - window.at_ms


def records_reprocessed(batches: Iterable[Batch]) -> int:
    """Records processed again: in time order, a batch that starts at or below the furthest offset
    already processed of its partition (by any consumer) repeats the records up to that offset."""
    furthest: dict[str, int] = {}
    repeated = 0
    for batch in sorted(batches, key=lambda b: (b.t_ms, b.partition, b.first)):
        done = furthest.get(batch.partition, -1)
        if batch.first <= done:
            repeated += min(batch.last, done) - batch.first + 1
        furthest[batch.partition] = max(done, batch.last)
    return repeated


# --- share groups (KIP-932): what the share consumers got ---------------------------------------------


def records_redelivered(deliveries: Iterable[Delivery]) -> int:
    """Records delivered again (at a delivery count above 1)."""
    return sum(d.last - d.first + 1 for d in deliveries if d.count > 1)


def idle_member_ms(spans: Iterable[tuple[str, int, int]], deliveries: Iterable[Delivery]) -> int:
    """Member-milliseconds before a share consumer's first records: for each running span
    ``(consumer, start, end)``, from its start to the consumer's first delivery within it (the whole
    span when it got none). A share consumer cannot see its assignment, so its first records are the
    first sign it has a partition."""
    firsts: dict[str, list[int]] = {}
    for d in deliveries:
        firsts.setdefault(d.consumer, []).append(d.t_ms)
    for times in firsts.values():
        times.sort()
    total = 0
    for consumer, start, end in spans:
        times = firsts.get(consumer, [])
        i = bisect_right(times, start - 1)
        first = times[i] if i < len(times) and times[i] < end else end
        total += max(0, first - start)
    return total


def read_intervals(deliveries: Iterable[Delivery], hold_ms: int) -> list[Interval]:
    """A share group's partitions as *read*: each delivery of a partition counts it read by its
    consumer for ``hold_ms`` from then (a partition whose records keep coming is read without a break;
    :func:`unowned_partition_ms` of these is the partition-time more than ``hold_ms`` after its last
    delivery)."""
    return [(d.partition, d.consumer, d.t_ms, d.t_ms + hold_ms) for d in deliveries]
