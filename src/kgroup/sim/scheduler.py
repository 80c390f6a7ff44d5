"""The virtual clock and the event queue every simulation runs on.

Nothing here reads a real clock: time is an integer number of milliseconds that only moves when the
scheduler pops the next event. Events that fall on the same millisecond run in the order they were
scheduled (a sequence number breaks ties), so a run is a pure function of its scenario and seed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kgroup.group import TimerTable
from kgroup.group.timers import TimerEffect, TimerKey
from kgroup.messages import Request, Response

__all__ = ["EventQueue", "HostTimers", "Payload"]

# What the simulator's queue items are; the payload's shape depends on the kind:
#   SCENARIO: event index · TO_COORD: (process, connection, correlation id, request) ·
#   TO_MEMBER: (process, connection, correlation id, response) · TIMEOUT: (process, incarnation,
#   correlation id) · WAKE: (process, incarnation, wake version) · SAMPLE: None ·
#   START: (process, assignors or None) · UNSTALL, HEAL: process · RESTART: (process, graceful,
#   downtime, assignors or None) · APP_POLL: (process, incarnation) · RESET: (process, connection)
SCENARIO, TO_COORD, TO_MEMBER, TIMEOUT, COORD_TIMER, WAKE = 0, 1, 2, 3, 4, 5
SAMPLE, START, UNSTALL, HEAL, RESTART, APP_POLL, RESET = 6, 7, 8, 9, 10, 11, 12
#: exactly-once: one of the transaction coordinator's sweeps is due (payload: the sweep's index)
TXN_TIMER = 13

#: every payload shape a queue entry can carry (see the kinds above)
Payload = (
    int
    | None
    | tuple[int, str, int, Request]
    | tuple[int, str, int, Response]
    | tuple[int, int, int]
    | tuple[int, tuple[str, ...] | None]
    | tuple[int, bool, int, tuple[str, ...] | None]
    | tuple[int, int]
    | tuple[int, str]
)

#: an :class:`EventQueue`'s payload type
P = TypeVar("P")


class EventQueue(Generic[P]):
    """A min-queue of ``(time_ms, sequence, kind, payload)``; the clock is the time of the last pop.
    ``P``: what its payloads are (:data:`Payload` for the classic and consumer protocols' kinds)."""

    __slots__ = ("_heap", "_seq", "now_ms")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int, P]] = []
        self._seq = 0
        self.now_ms = 0

    def next_seq(self) -> int:
        """Take a sequence number (shared with the coordinator's timer table, so a timer and an
        event scheduled for the same millisecond run in the order they were scheduled)."""
        self._seq += 1
        return self._seq

    @property
    def entries(self) -> list[tuple[int, int, int, P]]:
        """The heap itself (the run loop pops it directly: :meth:`pop_due`, inlined)."""
        return self._heap

    def head(self) -> tuple[int, int, int, P] | None:
        """The next entry ``(time, sequence, kind, payload)`` without popping it (``None``: empty)."""
        return self._heap[0] if self._heap else None

    def push(self, at_ms: int, kind: int, payload: P) -> None:
        if at_ms < self.now_ms:
            # the past cannot be scheduled: an event "now or earlier" runs now, after what is queued
            at_ms = self.now_ms
        self._seq += 1
        heapq.heappush(self._heap, (at_ms, self._seq, kind, payload))

    def peek_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[int, P]:
        at_ms, _, kind, payload = heapq.heappop(self._heap)
        self.now_ms = at_ms
        return kind, payload

    def pop_due(self, until_ms: int) -> tuple[int, int, P] | None:
        """Pop the next event if it is due by ``until_ms``: ``(time, kind, payload)``, else ``None``."""
        heap = self._heap
        if not heap or heap[0][0] > until_ms:
            return None
        at_ms, _, kind, payload = heapq.heappop(heap)
        self.now_ms = at_ms
        return at_ms, kind, payload

    def __len__(self) -> int:
        return len(self._heap)


class HostTimers(TimerTable):
    """The coordinator's timer table, telling the run loop when its head may have changed
    (``changed``), so that the loop looks it up again only then instead of at every step."""

    __slots__ = ("changed",)

    def __init__(self, sequence: Callable[[], int] | None = None) -> None:
        super().__init__(sequence)
        self.changed = True

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        self.changed = True
        super().schedule(key, deadline_ms)

    def cancel(self, key: TimerKey) -> None:
        self.changed = True
        super().cancel(key)

    def apply(self, effects: Iterable[TimerEffect]) -> None:
        self.changed = True
        super().apply(effects)

    def pop_due(self, now_ms: int) -> TimerKey | None:
        self.changed = True
        return super().pop_due(now_ms)
