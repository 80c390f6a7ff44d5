"""A Python worker's long-lived objects, taken out of the garbage collector's walk after each task.

PySpark's daemon runs ``gc.collect()`` in a reused Python worker after every task it ran
(``pyspark/daemon.py``). A worker that ran a kgroup task holds kgroup's modules and Arrow's, pandas'
and numba's (with the kernels it loaded): over a hundred thousand tracked objects, so each of those
full collections costs tens of milliseconds, and a streaming query runs one per task of every
micro-batch. :func:`task_started`, called at the start of each kgroup task, moves what is alive at a
worker's second kgroup task — after the first has imported everything and loaded its kernels — into
the collector's permanent generation (``gc.freeze``) once. Later collections walk only the objects
made after that; the frozen ones are still freed when nothing refers to them, only reference cycles
among them are left to the process's end. ``make demo`` used 16 % less CPU (docs/spark.md).

Beyond Kafka: a PySpark matter, not a Kafka one.
"""

from __future__ import annotations

import gc

__all__ = ["task_started"]

#: kgroup tasks this process has started
_tasks = 0


def task_started() -> None:
    """Count a kgroup task starting in this process; at the second, freeze the survivors once."""
    global _tasks
    _tasks += 1
    if _tasks == 2:
        gc.collect()  # what the first task left unreachable is not frozen with the rest
        gc.freeze()
