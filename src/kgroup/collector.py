"""The cyclic garbage collector's thresholds for a process whose live heap is large and long-lived.

A simulation of a thousand members and a broker holding a group of thousands both keep millions of
objects alive (members, their assignments, timers, records) and allocate millions of short-lived ones
(messages, tuples) that reference counting frees. With CPython's default thresholds (700, 10, 10) the
collector walks the whole live heap every few hundred thousand allocations and finds almost nothing:
in a 1,000-member simulation that was about 15 % of the run; in ``kgroup serve`` holding a
5,000-member group at 1,000 heartbeats a second it was a full collection of 115–133 ms every 1.4 s,
each one a pause every connection waited out (docs/performance.md). Nothing computed depends on when
the collector runs; cycles are still collected, later.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RELAXED_THRESHOLDS", "relaxed_collector"]

#: generation 0 collected every 50,000 net allocations, 1 every 20 of those, 2 every 100 of those
#: (and only when the objects waiting for it are a quarter of the long-lived ones, as CPython decides)
RELAXED_THRESHOLDS = (50_000, 20, 100)


@contextmanager
def relaxed_collector() -> Iterator[None]:
    """Run the cyclic garbage collector rarely while the body runs (each threshold at least
    :data:`RELAXED_THRESHOLDS`'), then as before, even when the body fails."""
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(before, RELAXED_THRESHOLDS, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
