"""The share-group simulation's own books: which records were accepted, archived or are held, by whom.

:class:`ShareLedger` is kept by the simulator beside Kafka's share partitions (``kgroup.share``),
from what they answer (acquired ranges, the state writes they ask the share coordinator to
persist), not from their insides, so it can check them: no record accepted twice, no record lost
(every record below a partition's start offset was accepted or archived), a delivery count never
above the limit, one holder at a time for an acquired record. :class:`IntervalSet` keeps offsets as
merged ``[start, end)`` runs (acknowledgement is mostly in order, so the runs stay few).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

__all__ = ["IntervalSet", "LatencyHistogram", "ShareLedger"]


class IntervalSet:
    """Disjoint, merged ``[start, end)`` runs of offsets."""

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlap(self, start: int, end: int) -> int:
        """How many offsets of ``[start, end)`` are in the set."""
        if start >= end:
            return 0
        starts, ends = self._starts, self._ends
        k = bisect.bisect_right(starts, start) - 1
        if k < 0:
            k = 0
        total = 0
        while k < len(starts) and starts[k] < end:
            lo, hi = max(starts[k], start), min(ends[k], end)
            if hi > lo:
                total += hi - lo
            k += 1
        return total

    def add(self, start: int, end: int) -> None:
        """Add ``[start, end)`` (overlaps allowed: the caller checks them first if they matter)."""
        if start >= end:
            return
        starts, ends = self._starts, self._ends
        k = bisect.bisect_left(ends, start)  # the first run that ends at or after start
        j = k
        while j < len(starts) and starts[j] <= end:
            start = min(start, starts[j])
            end = max(end, ends[j])
            j += 1
        starts[k:j] = [start]
        ends[k:j] = [end]

    def covers(self, start: int, end: int) -> bool:
        return self.overlap(start, end) == max(0, end - start)

    def total(self) -> int:
        return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    def runs(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self._starts, self._ends, strict=True))


class LatencyHistogram:
    """Counts per millisecond value (records share few distinct latencies: a batch at a time)."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0

    def add(self, value_ms: int, n: int) -> None:
        if n <= 0:
            return
        self.counts[value_ms] = self.counts.get(value_ms, 0) + n
        self.count += n
        self.total += value_ms * n

    def percentile(self, q: float) -> int | None:
        """The smallest value with at least ``q`` of the records at or below it (nearest rank)."""
        if not self.count:
            return None
        rank = max(1, -(-int(q * 1_000_000) * self.count // 1_000_000))
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen >= rank:
                return value
        return max(self.counts)

    def summary(self) -> dict[str, int | float | None]:
        return {
            "p50": self.percentile(0.5),
            "p90": self.percentile(0.9),
            "p99": self.percentile(0.99),
            "p999": self.percentile(0.999),
            "max": max(self.counts) if self.counts else None,
            "mean": round(self.total / self.count, 1) if self.count else None,
        }


class ShareLedger:
    """One share partition's books (see the module's docstring)."""

    __slots__ = ("accepted", "archived", "first_start", "holders", "returned")

    def __init__(self, first_start: int) -> None:
        #: the start offset the partition was initialised at (nothing before it is the group's)
        self.first_start = first_start
        self.accepted = IntervalSet()
        self.archived = IntervalSet()
        #: acquired offsets: offset -> (holder, delivery count)
        self.holders: dict[int, tuple[str, int]] = {}
        #: offsets back to Available: offset -> why (for the redelivery that follows)
        self.returned: dict[int, str] = {}
