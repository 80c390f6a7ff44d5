"""``kgroup bench assign --leader-path``: one case's three kgroup figures beside Java's two, one run.

kgroup: the bare ``assign()`` (the fast assignors answer lazily), ``assign()`` and reading every
partition of the answer, and the group leader's whole path (subscription bytes in, assignment bytes
out), each in its own child process (:mod:`kgroup.bench.worker`). Java, in one JVM on the same
subscription bytes (:mod:`kgroup.bench.java_leader`): the bare ``assign()`` (its answer is
materialised lists: reading it costs nothing more) and ``onLeaderElected``'s deserialize, assign,
serialize. The two leader paths' bytes are compared.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from kgroup.bench.cases import Phase, build_request, case_by_name, phases_for
from kgroup.bench.java_leader import compare_answers, run_java_leader_path, subscription_bytes
from kgroup.bench.runner import CellResult, run_cell
from kgroup.bench.worker import PATHS, CellSpec
from kgroup.model import KgroupError

__all__ = ["LeaderPathReport", "measure_leader_paths"]


@dataclass(frozen=True, slots=True)
class LeaderPathReport:
    case: str
    assignor: str
    phase: str
    #: path (``assign``, ``read``, ``leader``) -> kgroup's cell
    kgroup: dict[str, CellResult]
    java_bare_ms: tuple[float, ...]
    java_leader_ms: tuple[float, ...]
    kafka_version: str
    #: whether every member gets Java's partitions from kgroup's bytes, and how the bytes compare
    answers_agree: bool
    comparison: str

    @property
    def java_bare_median_ms(self) -> float:
        return statistics.median(self.java_bare_ms)

    @property
    def java_leader_median_ms(self) -> float:
        return statistics.median(self.java_leader_ms)


def measure_leader_paths(
    case: str, assignor: str, phase: str, *, impl: str, runs: int, timeout_s: float, memory_limit_mb: int,
    scale: float = 1.0,
) -> LeaderPathReport:
    """Measure one case's kgroup paths and Java's, in this order, one process at a time."""
    shape = case_by_name(case).scaled(scale)
    try:
        the_phase = Phase(phase)
    except ValueError:
        raise KgroupError(f"phase: unknown phase {phase!r}; use initial or reassign") from None
    if the_phase not in phases_for(assignor):
        raise KgroupError(f"phase: {assignor!r} has no {phase!r} phase (it ignores owned partitions); "
                          "use --phase initial")
    results: dict[str, CellResult] = {}
    for path in PATHS:
        spec = CellSpec(case=case, assignor=assignor, phase=phase, impl=impl, runs=runs, scale=scale,
                        memory_limit_mb=memory_limit_mb, path=path)
        result = run_cell(spec, timeout_s)
        if result.median_ms is None:
            problem = f"{result.label()} {result.message}".strip()
            raise KgroupError(f"{path}: kgroup's measurement failed: {problem}")
        results[path] = result
    request = build_request(shape, assignor, the_phase)
    java = run_java_leader_path(request, assignor, warmups=1, runs=runs, timeout_s=timeout_s)
    # kgroup's bytes on the same input, to set beside Java's (outside any timing)
    from kgroup.assignors.fast import create_fast_assignor
    from kgroup.assignors.leader_path import assign_subscriptions
    from kgroup.assignors.registry import create_assignor

    instance = create_fast_assignor(assignor) if impl == "fast" else create_assignor(assignor)
    mine = dict(assign_subscriptions(instance, subscription_bytes(request), request.topics,
                                     prefer_rack_aware_logic=request.prefer_rack_aware_logic))
    agree, comparison = compare_answers(mine, java.assignments)
    return LeaderPathReport(case, assignor, phase, results, java.bare_ms, java.leader_ms, java.kafka_version,
                            agree, comparison)
