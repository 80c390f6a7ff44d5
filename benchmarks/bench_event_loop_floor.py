"""The floor under the simulator's speed: what a bare discrete-event loop costs per event in this Python.

Each event pops the earliest entry of a heap, dispatches it by kind, builds four small frozen values
of the protocol (an Envelope, a request, a response, a Reply — what even the cheapest heartbeat
exchange needs) and pushes the next event: no protocol decision, no bookkeeping. `kgroup bench
simulate` runs 798,991 events in its hour, so this floor times that count is what no pure-Python
simulator of those events can go below. Median of 5 runs of 600,000 events.

    .venv/bin/python benchmarks/bench_event_loop_floor.py
"""

from __future__ import annotations

import heapq
import statistics
import time

from kgroup.messages import Envelope, HeartbeatRequest, HeartbeatResponse, Reply
from kgroup.model import ErrorCode

EVENTS = 600_000
BENCH_EVENTS = 798_991  # the events of `kgroup bench simulate`'s hour


class _Process:
    __slots__ = ("in_flight", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.in_flight: dict[int, int] = {}


def _run() -> float:
    procs = [_Process() for _ in range(100)]
    heap = [(i, i, 1, (i % 100, f"c{i % 100}#1", i)) for i in range(100)]
    heapq.heapify(heap)
    seq = len(heap)

    def on_message(payload: tuple[int, str, int]) -> None:
        index, conn, correlation_id = payload
        proc = procs[index]
        proc.sent += 1
        proc.in_flight[correlation_id] = 5
        Envelope(conn, correlation_id, HeartbeatRequest("g", 1, "m"), "c")
        Reply(conn, correlation_id, HeartbeatResponse(ErrorCode.NONE))

    handlers = {1: on_message}
    start = time.perf_counter()
    for _ in range(EVENTS):
        at, _, kind, payload = heapq.heappop(heap)
        handlers[kind](payload)
        seq += 1
        heapq.heappush(heap, (at + 100, seq, kind, payload))
    return (time.perf_counter() - start) / EVENTS


def main() -> None:
    runs = [_run() for _ in range(5)]
    per_event = statistics.median(runs)
    print(
        f"bare event loop: {per_event * 1e6:.2f} µs per event (median of 5 × {EVENTS:,}); "
        f"{per_event * BENCH_EVENTS:.1f} s for the {BENCH_EVENTS:,} events of `kgroup bench simulate`"
    )


if __name__ == "__main__":
    main()
