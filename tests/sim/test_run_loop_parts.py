"""The run loop's speed parts (issue 37): what they promise, checked in isolation.

The outputs themselves are pinned by ``test_golden_outputs.py``; these check the parts' own
contracts: the timer table tells the loop whenever its head may have moved, the collector's
thresholds are back as they were after a run, even a failed one, and a millisecond's events are
ordered by what they are.
"""

from __future__ import annotations

import gc
import itertools
import random
from collections.abc import Callable

import pytest

from kgroup.collector import RELAXED_THRESHOLDS, relaxed_collector
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer
from kgroup.group.timers import CancelTimer, ScheduleTimer
from kgroup.sim.scheduler import (
    APP_POLL,
    SAMPLE,
    SCENARIO,
    TIMEOUT,
    TO_COORD,
    TO_MEMBER,
    WAKE,
    EventQueue,
    HostTimers,
    event_tie,
    timer_tie,
)


def test_host_timers_flag_every_change_of_the_head() -> None:
    """After each operation the table is flagged, and the head the loop reads then is the
    table's true next timer (a head cached across a change would fire the wrong timer)."""
    table = HostTimers(sequence=itertools.count(1).__next__)
    a, b, j = HeartbeatTimer("g", "a"), HeartbeatTimer("g", "b"), JoinTimer("g")
    ops: list[Callable[[], object]] = [
        lambda: table.schedule(a, 50),
        lambda: table.apply([ScheduleTimer(b, 20), ScheduleTimer(j, 30)]),
        lambda: table.cancel(b),  # the head goes: j is next
        lambda: table.apply([CancelTimer(j)]),  # and a after it
        lambda: table.schedule(a, 10),  # a moves earlier
        lambda: table.pop_due(10),  # fired: nothing is left
    ]
    heads = []
    for op in ops:
        table.changed = False
        op()
        assert table.changed
        head = table.head()
        heads.append(None if head is None else (head[0], head[2]))
    assert heads == [(50, a), (20, b), (30, j), (50, a), (10, a), None]


def test_relaxed_collector_restores_the_thresholds_even_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), relaxed_collector():
        inside = gc.get_threshold()
        raise RuntimeError("a failed run")
    assert gc.get_threshold() == before
    assert all(t >= r for t, r in zip(inside, RELAXED_THRESHOLDS, strict=True))
    assert all(t >= b for t, b in zip(inside, before, strict=True))


def test_event_ties_order_a_millisecond_by_what_the_events_are_not_when_they_were_queued() -> None:
    """The classic and consumer simulations' queue (``event_tie``): the same entries queued in any
    order come out in one order — the scenario's own first, then by process, and within a process
    by kind and correlation id — so leaving one process's entries out cannot reorder the others'."""
    entries: list[tuple[int, int, object]] = [
        (5, TO_MEMBER, (2, "c2#1", 7, "answer")),
        (5, TO_COORD, (2, "c2#1", 8, "request")),
        (5, TO_COORD, (0, "c0#1", 3, "request")),
        (5, TIMEOUT, (2, 1, 6)),
        (5, WAKE, (1, 1, 4)),
        (5, APP_POLL, (0, 1)),
        (5, SAMPLE, None),
        (5, SCENARIO, 1),
        (5, SCENARIO, 0),
        (4, WAKE, (2, 1, 9)),
    ]
    orders = []
    for seed in range(6):
        shuffled = entries[:]
        random.Random(seed).shuffle(shuffled)
        q: EventQueue[object] = EventQueue(tie=event_tie)
        for at, kind, payload in shuffled:
            q.push(at, kind, payload)
        orders.append([q.pop() for _ in range(len(entries))])
    assert all(order == orders[0] for order in orders)
    assert orders[0] == [
        (WAKE, (2, 1, 9)),  # the earlier millisecond
        (SCENARIO, 0), (SCENARIO, 1), (SAMPLE, None),  # the scenario's own, in the scenario's order
        (TO_COORD, (0, "c0#1", 3, "request")), (APP_POLL, (0, 1)),  # process 0: request, then its loop
        (WAKE, (1, 1, 4)),
        (TIMEOUT, (2, 1, 6)), (TO_MEMBER, (2, "c2#1", 7, "answer")), (TO_COORD, (2, "c2#1", 8, "request")),
    ]  # fmt: skip


def test_timers_tied_by_key_fire_in_key_order_before_the_millisecond_s_events() -> None:
    """With the ties the simulation gives them (``timer_tie``), timers due at one millisecond fire in
    key order whatever order they were armed in, and the run loop takes them before that
    millisecond's queued entries (their tie is smaller than any event's)."""
    keys = [HeartbeatTimer("g", "b"), JoinTimer("g"), HeartbeatTimer("g", "a")]
    fired = []
    for order in itertools.permutations(keys):
        table = HostTimers(key_tie=timer_tie)
        for key in order:
            table.schedule(key, 100)
        fired.append([table.pop_due(100) for _ in keys])
    assert all(f == sorted(keys) for f in fired)
    assert all(event_tie(SCENARIO, 0, 1) > timer_tie(key) for key in keys)
