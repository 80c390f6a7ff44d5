"""The run loop's speed parts (issue 37): what they promise, checked in isolation.

The outputs themselves are pinned by ``test_golden_outputs.py``; these check the parts' own
contracts: the timer table tells the loop whenever its head may have moved, and the collector's
thresholds are back as they were after a run, even a failed one.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable

import pytest

from kgroup.collector import RELAXED_THRESHOLDS, relaxed_collector
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer
from kgroup.group.timers import CancelTimer, ScheduleTimer
from kgroup.sim.scheduler import HostTimers


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
