"""A Python worker's long-lived objects, taken out of the garbage collector's walk after each task.

PySpark's daemon runs ``gc.collect()`` in a reused Python worker after every task it ran
(``pyspark/daemon.py``). A worker that ran a kgroup task holds kgroup's modules and Arrow's, pandas'
and numba's (with the kernels it loaded): over a hundred thousand tracked objects, so each of those
full collections costs tens of milliseconds, and a streaming query runs one per task of every
micro-batch. :func:`task_started`, called at the start of each kgroup task, moves what is alive into
the collector's permanent generation (``gc.freeze``) at a worker's second kgroup task — after the
first imported what it needs and loaded its kernels — and again at any later one when modules were
imported since the task before it started: a worker that generated the demo's events and then reads
Kafka holds the reader's modules too, which the first freeze did not see. Later collections walk
only the objects made after that; the frozen ones are still freed when nothing refers to them, only
reference cycles among them are left to the process's end.
``make demo`` used 16 % less CPU (docs/spark.md).

Beyond Kafka: a PySpark matter, not a Kafka one.
"""

from __future__ import annotations

import gc
import sys

__all__ = ["task_started"]

#: kgroup tasks this process has started
_tasks = 0
#: how many modules were loaded when the previous kgroup task of this process started
_modules_at_last_task = 0


def task_started() -> None:
    """Note a kgroup task starting in this process: at the second, freeze the survivors; at a later
    one, freeze them again if modules were imported since the task before it started."""
    global _tasks, _modules_at_last_task
    _tasks += 1
    loaded = len(sys.modules)
    if _tasks == 2 or (_tasks > 2 and loaded != _modules_at_last_task):
        gc.collect()  # what the tasks before left unreachable is not frozen with the rest
        gc.freeze()
    _modules_at_last_task = loaded
