"""How far a running Spark job has got, for a progress bar: Spark's status tracker, polled.

Spark reports finished tasks only to its own listeners (the JVM side); its status tracker is the
public way to read them from Python. :func:`watch_tasks` polls it from a daemon thread while the
caller's job runs and reports the completed and total tasks of the largest active stage — in
kgroup's jobs, the stage that does the work (one task per simulation in the sweep).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["watch_tasks"]


def _largest_active_stage(spark: Any) -> tuple[int, int] | None:
    tracker = spark.sparkContext.statusTracker()
    best: tuple[int, int] | None = None
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None and (best is None or info.numTasks > best[1]):
            best = (info.numCompletedTasks, info.numTasks)
    return best


@contextmanager
def watch_tasks(spark: Any, on_update: Callable[[int, int], None], interval_s: float = 0.5) -> Iterator[None]:
    """While the block runs, call ``on_update(completed, total)`` every ``interval_s`` seconds
    with the largest active stage's task counts (nothing while no stage is active)."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(interval_s):
            try:
                counts = _largest_active_stage(spark)
            except Exception:  # the session is stopping: the caller's job reports its own errors
                return
            if counts is not None:
                on_update(*counts)

    thread = threading.Thread(target=poll, name="kgroup-spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5 * interval_s)
