"""The broker's numba kernels, compiled — or read from numba's cache — in a thread of their own as it starts.

A kernel compiles on its first call. A broker's first Produce would compile the record walk on the
loop that serves every connection, and its first KIP-848 assignment the server assignors' kernels on
the coordinators' thread: on a machine whose cache is cold (a fresh install that has not run
``python -m kgroup.kernels``) the uniform kernels alone take about 40 s of CPU — two minutes under
load, measured — during which no group's heartbeat was answered. :func:`warm_in_background` starts that
work at once in a thread of its own, once per process; until the server assignors' kernels are ready
``RangeAssignor`` and ``UniformAssignor`` answer with their step-by-step builders, which give the same
answer (:func:`kgroup.group.assignors.fast.kernels_ready`). From numba's cache it takes a fraction of
a second. Beyond Kafka: its JIT warms as code runs, with no such pause.
"""

from __future__ import annotations

import logging
import threading
import time

from kgroup.group.assignors import fast
from kgroup.log.records import load_kernel

__all__ = ["finish", "warm_codec_in_background", "warm_in_background"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_started: threading.Thread | None = None
#: every warm-up thread this process started (the kernels', each broker's codec)
_threads: list[threading.Thread] = []


def warm_in_background() -> threading.Thread | None:
    """Start warming the record walk, then the server assignors; the thread, or ``None`` when this
    process has already started it."""
    global _started
    with _lock:
        if _started is not None:
            return None
        fast.hold_until_warm()
        _started = threading.Thread(target=_warm, name="kgroup-warm-kernels", daemon=True)
        _started.start()
        _threads.append(_started)
        return _started


def warm_codec_in_background() -> threading.Thread:
    """Read the schemas of the APIs clients speak in a thread, rather than in the first requests."""
    from kgroup.broker.dispatch import warm_codec

    thread = threading.Thread(target=warm_codec, name="kgroup-warm-codec", daemon=True)
    with _lock:
        _threads.append(thread)
    thread.start()
    return thread


def finish(timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` in all for the warm-up threads to end; whether none still runs. A
    process that ends while one still compiles would have the interpreter's finalization stop it inside
    numba's compiler: ``FATAL: exception not rethrown``, SIGABRT (seen in CI: ``kgroup serve``, stopped
    with SIGTERM soon after it started, under load)."""
    deadline = time.monotonic() + timeout_s
    with _lock:
        threads = list(_threads)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)


def _warm() -> None:
    start = time.perf_counter()
    try:
        load_kernel()
        fast.warm()
    except Exception:  # they compile on first use instead, as before
        log.exception("warming the broker's kernels failed")
    finally:
        fast.release()
    log.info("the broker's kernels are ready (%.1f s)", time.perf_counter() - start)
