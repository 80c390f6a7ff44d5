"""The child side of a benchmark measurement: one cell, in a fresh process, timed.

``python -m kgroup.bench.worker '<json spec>'`` builds the case's request (untimed), prepares one fresh
assignor instance per run, resets the process's peak-resident-memory mark, runs one warm-up and the
timed runs, and prints one JSON line: ``{"runs_ms": [...], "peak_rss_mb": ...}`` or ``{"error": "..."}``.

A fresh process per cell keeps every cell's memory its own and lets the parent enforce a timeout by
killing it.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.bench.cases import Phase, build_request, build_topics, case_by_name, phases_for
from kgroup.model import Assignment, KgroupError

__all__ = ["IMPLEMENTATIONS", "CellSpec", "main", "measure_cell"]

#: ``kgroup``: the assignor registered under the name (what users get); ``fast``:
#: ``kgroup.assignors.fast``'s implementation; ``kafka-python``: kafka-python 3.x's assignor.
IMPLEMENTATIONS = ("kgroup", "fast", "kafka-python")


@dataclass(frozen=True, slots=True)
class CellSpec:
    case: str
    assignor: str
    phase: str
    impl: str = "kgroup"
    runs: int = 5
    warmups: int = 1
    scale: float = 1.0
    memory_limit_mb: int = 0

    def to_json(self) -> str:
        return json.dumps({f: getattr(self, f) for f in self.__dataclass_fields__})

    @classmethod
    def from_json(cls, text: str) -> CellSpec:
        return cls(**json.loads(text))


def _kgroup_factory(impl: str, assignor: str) -> Callable[[], Assignor]:
    if impl == "fast":
        from kgroup.assignors.fast import create_fast_assignor

        create_fast_assignor(assignor)  # fail now, outside the timed region, if there is none
        return lambda: create_fast_assignor(assignor)
    from kgroup.assignors.registry import create_assignor

    create_assignor(assignor)
    return lambda: create_assignor(assignor)


def _initial_assignment(spec: CellSpec, request: AssignmentRequest) -> Assignment:
    """The ``initial`` result the ``reassign`` phase starts from: Kafka's answer, computed by kgroup
    (the fast path when there is one), so every implementation gets the same reassign input."""
    impl = spec.impl
    if impl == "kafka-python":
        try:
            from kgroup.assignors.fast import create_fast_assignor

            return create_fast_assignor(spec.assignor).assign(request)
        except (ImportError, KgroupError):
            impl = "kgroup"
    return _kgroup_factory(impl, spec.assignor)().assign(request)


def _prepare_calls(spec: CellSpec) -> list[Callable[[], Any]]:
    """One zero-argument call per run (warm-ups first), every input built now, outside the timing."""
    if spec.impl not in IMPLEMENTATIONS:
        known = ", ".join(IMPLEMENTATIONS)
        raise KgroupError(f"impl: unknown implementation {spec.impl!r}; use one of: {known}")
    if spec.runs < 1:
        raise KgroupError(f"runs: {spec.runs}; give 1 or more runs")
    shape = case_by_name(spec.case).scaled(spec.scale)
    try:
        phase = Phase(spec.phase)
    except ValueError:
        raise KgroupError(f"phase: unknown phase {spec.phase!r}; use initial or reassign") from None
    if phase not in phases_for(spec.assignor):
        raise KgroupError(
            f"phase: {spec.assignor!r} has no {phase.value!r} phase (it ignores owned partitions); "
            "use --phase initial"
        )
    topics = build_topics(shape)
    request = build_request(shape, spec.assignor, Phase.INITIAL, topics=topics)
    if phase is Phase.REASSIGN:
        initial = _initial_assignment(spec, request)
        request = build_request(shape, spec.assignor, phase, topics=topics, initial=initial)
        del initial
    count = spec.warmups + spec.runs
    if spec.impl == "kafka-python":
        from kgroup.bench.kafka_python import prepare_kafka_python

        return [prepare_kafka_python(spec.assignor, request) for _ in range(count)]
    factory = _kgroup_factory(spec.impl, spec.assignor)
    calls: list[Callable[[], Any]] = []
    for _ in range(count):
        instance = factory()
        calls.append(lambda instance=instance: instance.assign(request))  # type: ignore[misc]
    return calls


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux ``clear_refs`` 5) so the peak is the timed runs' own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss_mb(reset_worked: bool) -> float:
    if reset_worked:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_cell(spec: CellSpec) -> dict[str, Any]:
    """Run one cell in this process: ``{"runs_ms": [...], "peak_rss_mb": ...}``."""
    calls = _prepare_calls(spec)
    gc.collect()
    reset = _reset_peak_rss()
    runs_ms: list[float] = []
    for i, call in enumerate(calls):
        gc.collect()
        start = time.perf_counter_ns()
        result = call()
        # the young-generation collection the call's allocations are due: an assignor that pauses
        # the collector while it builds a million objects pays here for what it deferred
        gc.collect(0)
        elapsed = time.perf_counter_ns() - start
        del result
        calls[i] = _done
        if i >= spec.warmups:
            runs_ms.append(elapsed / 1e6)
    return {"runs_ms": runs_ms, "peak_rss_mb": round(_peak_rss_mb(reset), 1)}


def _done() -> None:
    """Replaces a finished call so its assignor instance can be freed."""


def _limit_memory(limit_mb: int) -> None:
    if limit_mb > 0:
        limit = limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        spec = CellSpec.from_json(args[0])
        _limit_memory(spec.memory_limit_mb)
        out = measure_cell(spec)
    except KgroupError as exc:
        out = {"error": exc.message}
    except MemoryError:
        out = {"error": "out of memory", "oom": True}
    except Exception as exc:  # report, never a traceback: the parent prints one line per cell
        out = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0 if "error" not in out else 1


if __name__ == "__main__":
    sys.exit(main())
