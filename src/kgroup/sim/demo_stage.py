"""The demo's rebalance stage: a realistic group through a rolling restart, a crash and a scale-out,
compared across strategies and protocols.

:func:`run_rebalance_stage` returns plain data (:class:`RebalanceStageData`); the report side
(:class:`kgroup.report.timeline.RebalanceStageResult`) renders it. The sweep itself is injected as
``runner`` so that this module stays pure: ``kgroup demo`` passes the Spark sweep
(``functools.partial(kgroup.spark.demo.sweep.run_sweep, spark=session)``); without a runner the cells
run in this process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.sim.compare import add_event_recoveries, run_local, summarize
from kgroup.sim.result import SimResult
from kgroup.sim.scenario import Scenario, parse_scenario
from kgroup.sim.variants import Variant, compare_variants

__all__ = ["RebalanceStageData", "demo_scenario", "run_rebalance_stage"]

#: (scenarios, variants, seeds) -> (every run's row, one summary row per scenario and variant)
SweepRunner = Callable[
    [Sequence[Scenario], Sequence[Variant], Sequence[int]],
    tuple[list[dict[str, Any]], list[dict[str, Any]]],
]

#: the variants whose timelines the report shows side by side: classic eager, classic cooperative
#: and the consumer protocol (KIP-848)
HIGHLIGHTS = (
    Variant("range", "eager", "dynamic"),
    Variant("cooperative-sticky", "cooperative", "dynamic"),
    Variant("uniform", "consumer", "dynamic"),
)


def demo_scenario(seed: int = 42) -> Scenario:
    """Ten consumers of two topics at a busy hour: a deploy, a crash, then two more consumers."""
    return parse_scenario(
        {
            "name": "demo-group",
            "seed": seed,
            "duration_ms": 720_000,
            "topics": {"orders": 40, "payments": 20},
            "group": {"assignors": ["range"]},
            "consumers": [{"count": 10, "prefix": "app-", "topics": ["orders", "payments"]}],
            "network": {"latency_ms": 1, "jitter_ms": 1},
            "workload": {"produce_per_partition_per_s": 40, "consume_per_consumer_per_s": 250},
            "events": [
                {
                    "at_ms": 60_000,
                    "kind": "rolling_restart",
                    "consumers": "all",
                    "gap_ms": 20_000,
                    "downtime_ms": 5_000,
                },
                {"at_ms": 360_000, "kind": "crash", "consumer": "app-3"},
                {
                    "at_ms": 480_000,
                    "kind": "scale",
                    "count": 2,
                    "prefix": "extra-",
                    "topics": ["orders", "payments"],
                },
            ],
        },
        name="demo-group",
    )


@dataclass(frozen=True, slots=True)
class RebalanceStageData:
    scenario: Scenario
    seeds: tuple[int, ...]
    rows: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    skipped: list[tuple[str, str]]
    highlights: list[tuple[str, SimResult]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.to_data(),
            "seeds": list(self.seeds),
            "summary": self.summary,
            "skipped": [{"variant": v, "reason": why} for v, why in self.skipped],
            "runs": self.rows,
        }


def run_rebalance_stage(
    *,
    seed: int = 42,
    seeds: int = 2,
    scenario: Scenario | None = None,
    runner: SweepRunner | None = None,
    highlights: bool = True,
) -> RebalanceStageData:
    """Run every strategy × protocol × membership over ``seeds`` seeds of the demo scenario."""
    from kgroup.sim.runner import simulate

    base = scenario if scenario is not None else demo_scenario(seed)
    variants, skipped = compare_variants(share=False)  # (the demo's stage compares consumer groups)
    seed_list = [base.seed + k for k in range(seeds)]
    if runner is None:
        rows = run_local(base, variants, seed_list)
        summary = summarize(rows)
    else:
        rows, summary = runner([base], variants, seed_list)
        summary = add_event_recoveries(summary, rows)
    shown = [(v.label, simulate(v.apply(base))) for v in HIGHLIGHTS] if highlights else []
    return RebalanceStageData(
        scenario=base,
        seeds=tuple(seed_list),
        rows=rows,
        summary=summary,
        skipped=[(v.label, why) for v, why in skipped],
        highlights=shown,
    )
