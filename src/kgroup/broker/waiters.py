"""Parked fetches and what wakes them: Kafka's ``DelayedFetch`` in its fetch purgatory.

A fetch that cannot be answered yet (fewer than ``min_bytes`` readable) waits on a
:class:`FetchWaiter` registered under each of its partitions. An append to a partition hands the
waiters of that partition the size of the appended batch; a waiter adds it up (each partition
counting at most its ``partition_max_bytes``, as Kafka's ``tryComplete`` bounds ``positionDiff``)
and completes once ``min_bytes`` is reached. Nothing is read from the log while a fetch waits, and
an append costs one dictionary lookup per waiter of its own partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

__all__ = ["AppendWatchers", "FetchWaiter"]

PartitionKey = tuple[str, int]


class FetchWaiter:
    """One parked fetch: the bytes it still needs and what has arrived for it so far."""

    __slots__ = ("_caps", "_have", "done", "need", "total")

    def __init__(
        self,
        need: int,
        caps: Mapping[PartitionKey, int],
        have: Mapping[PartitionKey, int],
        done: asyncio.Future[None],
    ) -> None:
        self.need = need
        self._caps = dict(caps)
        self._have = {key: have.get(key, 0) for key in self._caps}
        self.total = sum(min(self._have[key], cap) for key, cap in self._caps.items())
        self.done = done

    @property
    def partitions(self) -> tuple[PartitionKey, ...]:
        return tuple(self._caps)

    def arrived(self, key: PartitionKey, size: int) -> None:
        """A batch of ``size`` bytes was appended to partition ``key``."""
        cap = self._caps.get(key)
        if cap is None:
            return
        before = self._have[key]
        after = before + size
        self._have[key] = after
        self.total += min(after, cap) - min(before, cap)
        if self.total >= self.need and not self.done.done():
            self.done.set_result(None)


class AppendWatchers:
    """The parked fetches of each partition (Kafka's fetch purgatory, keyed by partition)."""

    def __init__(self) -> None:
        self._by_partition: dict[PartitionKey, set[FetchWaiter]] = {}

    def watch(self, waiter: FetchWaiter) -> None:
        for key in waiter.partitions:
            self._by_partition.setdefault(key, set()).add(waiter)

    def unwatch(self, waiter: FetchWaiter) -> None:
        for key in waiter.partitions:
            waiters = self._by_partition.get(key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._by_partition[key]

    def appended(self, topic: str, partition: int, size: int) -> None:
        waiters = self._by_partition.get((topic, partition))
        if waiters:
            for waiter in list(waiters):
                waiter.arrived((topic, partition), size)

    def __len__(self) -> int:
        """How many partitions have a parked fetch (for tests)."""
        return len(self._by_partition)
