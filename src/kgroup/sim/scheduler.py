"""The virtual clock and the event queue every simulation runs on.

Nothing here reads a real clock: time is an integer number of milliseconds that only moves when the
scheduler pops the next event, and a run is a pure function of its scenario and seed. Events that fall
on the same millisecond are ordered by a *tie*: by default the order they were scheduled in (a
sequence number); the classic and consumer protocols' simulation orders them by what they are
instead (:func:`event_tie`), so that leaving one member's routine events out of the queue — carried
out in closed form instead — cannot change the order of anyone else's.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from kgroup.group import TimerTable
from kgroup.group.timers import TimerEffect, TimerKey
from kgroup.messages import Request, Response

__all__ = ["COAST", "LAST_KIND", "EventQueue", "HostTimers", "Payload", "Tie", "event_tie", "timer_tie"]

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
#: a coasting member's look-again before its poll timer could run out (kgroup.sim.coasting; payload:
#: (process, time)); not a step of the run: the loop hands it over without counting or checking it
COAST = 14
#: the last kind this module numbers (a simulation's own kinds are numbered after it)
LAST_KIND = COAST

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

#: what orders the entries of one millisecond: a sequence number, or (:func:`event_tie`) a tuple
Tie = int | tuple[int | str, ...]

#: the owner of the scenario's own events (scenario events, samples, transaction sweeps) in
#: :func:`event_tie`: before every process's at the same millisecond
_OWNER_SCENARIO = -1
#: the owner of the coordinator's timers in a simulation ordered by :func:`event_tie` (:func:`timer_tie`)
_OWNER_TIMERS = -2
# a process's own kinds at the same millisecond: a timeout before the answer arriving at its deadline
# (``send_requests`` counts an answer at the deadline as too late), then answers, requests at the
# coordinator, the heartbeat thread, the application loop, and the process's life
_PROCESS_RANK = {TIMEOUT: 0, RESET: 1, TO_MEMBER: 2, TO_COORD: 3, WAKE: 4, APP_POLL: 5, UNSTALL: 6,
                 HEAL: 7, RESTART: 8, START: 9}  # fmt: skip


def timer_tie(key: TimerKey) -> tuple[int | str, ...]:
    """A coordinator timer's tie beside :func:`event_tie`: at one millisecond before every queued
    event, and among themselves in ``TimerKey`` order (its parts; worked out once, when the timer is
    armed, so that a heap of many timers due at one millisecond compares plain tuples)."""
    return (_OWNER_TIMERS, *key.parts())


def event_tie(kind: int, payload: Any, seq: int) -> tuple[int, int, int, int]:
    """The same-millisecond order of a classic or consumer-protocol simulation's queue entry, from
    what the entry is: ``(owner, rank, detail, seq)``. The scenario's own events come first (in
    the scenario's order), then each process's by process index; within one process by kind
    (:data:`_PROCESS_RANK`), then by what tells two of a kind apart — a request's correlation id
    (a member numbers its requests in the order it sends them, and a connection delivers in that
    order), a wake-up's version —, and only then by scheduling order (``seq``), among entries whose
    order does not matter (two identical looks of the application loop, say).

    So one process's entries never change the order of another's: a member's steady heartbeats can
    be left out of the queue and carried out in closed form, and everyone else runs as before."""
    if kind == SCENARIO:
        return (_OWNER_SCENARIO, 0, payload, seq)
    if kind == SAMPLE:
        return (_OWNER_SCENARIO, 1, 0, seq)
    if kind == TXN_TIMER:
        return (_OWNER_SCENARIO, 2, payload, seq)
    if kind in (TO_MEMBER, TO_COORD, TIMEOUT):
        return (payload[0], _PROCESS_RANK[kind], payload[2], seq)
    if kind == COAST:  # before anything else of the process's at that millisecond
        return (payload[0], -1, 0, seq)
    if type(payload) is int:  # UNSTALL, HEAL: the process
        return (payload, _PROCESS_RANK[kind], 0, seq)
    return (payload[0], _PROCESS_RANK[kind], 0, seq)


class EventQueue(Generic[P]):
    """A min-queue of ``(time_ms, tie, kind, payload)``; the clock is the time of the last pop.
    ``P``: what its payloads are (:data:`Payload` for the classic and consumer protocols' kinds).
    ``tie(kind, payload, seq)`` (e.g. :func:`event_tie`) orders one millisecond's entries; without
    it they run in the order they were scheduled."""

    __slots__ = ("_heap", "_seq", "_tie", "now_ms")

    def __init__(self, tie: Callable[[int, P, int], Tie] | None = None) -> None:
        self._heap: list[tuple[int, Tie, int, P]] = []
        self._seq = 0
        self._tie = tie
        self.now_ms = 0

    def next_seq(self) -> int:
        """Take a sequence number (shared with the coordinator's timer table, so a timer and an
        event scheduled for the same millisecond run in the order they were scheduled)."""
        self._seq += 1
        return self._seq

    @property
    def entries(self) -> list[tuple[int, Tie, int, P]]:
        """The heap itself (the run loop pops it directly: :meth:`pop_due`, inlined)."""
        return self._heap

    def head(self) -> tuple[int, Tie, int, P] | None:
        """The next entry ``(time, tie, kind, payload)`` without popping it (``None``: empty)."""
        return self._heap[0] if self._heap else None

    def push(self, at_ms: int, kind: int, payload: P) -> None:
        if at_ms < self.now_ms:
            # the past cannot be scheduled: an event "now or earlier" runs now, after what is queued
            at_ms = self.now_ms
        self._seq = seq = self._seq + 1
        tie = self._tie
        heapq.heappush(self._heap, (at_ms, seq if tie is None else tie(kind, payload, seq), kind, payload))

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

    def __init__(
        self,
        sequence: Callable[[], Tie] | None = None,
        *,
        key_tie: Callable[[TimerKey], Tie] | None = None,
    ) -> None:
        super().__init__(sequence, key_tie=key_tie)
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
