"""The interpreter's thread switch interval for a process whose threads serve requests together.

``kgroup serve`` runs its event loop, the coordinators' loop and helper threads (the codec thread that
translates and encodes a large answer, the tasks' thread) in one interpreter. A thread that gives the
interpreter lock up for a system call — every socket read and write, every wake-up of the other
loop — and finds a busy thread holding it on its return waits until that thread is made to drop it:
CPython's switch interval, 5 ms by default. A loop makes several such calls per request, so while the
codec thread encoded a 5,000-member group's ConsumerGroupDescribe answer (~150 ms of Python) every
heartbeat in flight waited some 200 ms; at 0.5 ms the waits are a tenth of that (docs/performance.md:
held p99 12-13 ms against 68-70 ms, same CPU). Nothing computed depends on when threads switch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SERVING_SWITCH_INTERVAL_S", "quick_thread_switches"]

#: the longest a thread holds the interpreter lock while another waits for it, while serving
SERVING_SWITCH_INTERVAL_S = 0.0005


@contextmanager
def quick_thread_switches() -> Iterator[None]:
    """Run with the switch interval at most :data:`SERVING_SWITCH_INTERVAL_S` while the body runs,
    then as before, even when the body fails."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, SERVING_SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(before)
