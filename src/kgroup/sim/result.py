"""What a simulation returns: metrics, the ownership and event logs, and the data behind the charts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kgroup.sim.scenario import Scenario

__all__ = ["METRIC_NAMES", "LagSample", "SimResult"]

#: the metrics issue 5 names, in output order (extras follow them; docs/simulator.md defines all)
METRIC_NAMES = (
    "rebalances",
    "generation",
    "unowned_partition_ms",
    "double_owned_ms",
    "zombie_owned_ms",
    "moved_partitions",
    "time_to_stable_ms",
    "max_lag_records",
    "records_produced",
    "records_processed",
    "records_reprocessed",
    "invariant_violations",
)


@dataclass(frozen=True, slots=True)
class LagSample:
    t_ms: int
    committed_lag: int  # sum over subscribed partitions of log end - committed offset
    position_lag: int  # sum over subscribed partitions of log end - the furthest offset processed


@dataclass(slots=True)
class SimResult:
    scenario: Scenario
    metrics: dict[str, Any]
    ownership: list[dict[str, Any]]
    events: list[dict[str, Any]]
    # for the report (not in the JSON output)
    partitions: list[str] = field(default_factory=list)  # partition index -> "topic-p"
    consumers: list[str] = field(default_factory=list)
    intervals: list[tuple[int, str, int, int]] = field(default_factory=list)
    lag: list[LagSample] = field(default_factory=list)
    rebalance_starts: list[int] = field(default_factory=list)
    stable_marks: list[int] = field(default_factory=list)
    #: consumer protocol: (partition, "revoking" | "unreleased", start, end), for the timeline
    handover_intervals: list[tuple[int, str, int, int]] = field(default_factory=list)
    #: per scenario event, ms from its last action (a rolling restart's last restart) to stable, None
    #: if never: the comparison's recovery per event (``time_to_stable_ms`` counts from the event's start)
    recovery_ms: list[int | None] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """The ``--json`` document: ``{"scenario", "metrics", "ownership", "events"}``."""
        return {
            "scenario": self.scenario.name,
            "metrics": self.metrics,
            "ownership": self.ownership,
            "events": self.events,
        }

    def to_json(self) -> str:
        """Deterministic JSON text (same scenario and seed -> the same bytes)."""
        return json.dumps(self.to_data(), indent=2, ensure_ascii=False) + "\n"
