"""The demo's rebalance stage: the simulator's strategy sweep, run on Spark, as a demo stage.

The simulation side is :func:`kgroup.sim.demo_stage.run_rebalance_stage` (a realistic group
through a rolling restart, a crash and a scale-out, under every strategy × protocol × membership)
and its rendering :class:`kgroup.report.timeline.RebalanceStageResult`; this stage only runs it with
the Spark sweep (:func:`kgroup.spark.demo.sweep.run_sweep`: one Spark task per simulation) on the demo's
session and seed.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from kgroup.demo.stages import DemoContext

__all__ = ["RebalanceStage"]


class RebalanceStage:
    name = "rebalance"
    title = "simulating rebalances under every strategy (Spark, one task per simulation)"

    def __init__(self, seeds: int = 2, scenario: Any = None) -> None:
        self.seeds = seeds
        self.scenario = scenario  # a kgroup.sim Scenario; None = the demo's own group

    def run(self, context: DemoContext) -> Any:
        from kgroup.report.timeline import RebalanceStageResult
        from kgroup.sim.demo_stage import run_rebalance_stage
        from kgroup.spark.demo.sweep import run_sweep

        data = run_rebalance_stage(
            seed=context.config.seed,
            seeds=self.seeds,
            scenario=self.scenario,
            runner=partial(run_sweep, spark=context.spark),
        )
        return RebalanceStageResult(data)
