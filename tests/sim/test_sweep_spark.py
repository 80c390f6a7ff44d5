"""The Spark sweep on a real local Spark: one task per simulation, the same numbers as in-process."""

from __future__ import annotations

from typing import Any

import pytest

from kgroup.sim import load_scenario
from kgroup.sim.compare import ROW_COLUMNS, add_event_recoveries, run_local, summarize
from kgroup.sim.variants import Variant

from .conftest import EXAMPLES


@pytest.mark.spark
def test_sweep_on_spark_matches_the_local_run(spark: Any) -> None:
    from kgroup.spark.demo.sweep import run_sweep, summary_dataframe, sweep_dataframe

    scenario = load_scenario(EXAMPLES / "scale-out.yaml")
    variants = [
        Variant("range", "eager", "dynamic"),
        Variant("cooperative-sticky", "cooperative", "static"),
        Variant("simple", "share"),  # (its share-only columns: -1 on the others, averaged apart)
    ]
    seeds = [1, 2]
    df = sweep_dataframe(spark, [scenario], variants, seeds)
    assert df.rdd.getNumPartitions() == len(variants) * len(seeds)  # one task per simulation
    assert df.columns == [name for name, _ in ROW_COLUMNS]
    assert summary_dataframe(df).count() == len(variants)

    rows, summary = run_sweep([scenario], variants, seeds, spark=spark)
    local = run_local(scenario, variants, seeds)
    assert rows == local
    # the recovery per event comes from the rows, on either engine
    assert add_event_recoveries(summary, rows) == summarize(local)
    assert summary[0]["recovery_ms_1"] > 0
    assert [s["variant"] for s in summary] == [
        "range/eager/dynamic",
        "cooperative-sticky/cooperative/static",
        "simple/share",
    ]
    assert summary[0]["delivery_p99_ms"] == -1.0 and summary[2]["delivery_p99_ms"] >= 0
    assert all(r["double_owned_ms"] == 0 and r["invariant_violations"] == 0 for r in rows)


@pytest.mark.spark
def test_demo_stage_runs_its_sweep_on_spark(spark: Any) -> None:
    """How kgroup demo wires the stage: the Spark sweep injected as the runner."""
    from functools import partial

    from kgroup.sim.demo_stage import run_rebalance_stage
    from kgroup.spark.demo.sweep import run_sweep

    scenario = load_scenario(EXAMPLES / "scale-out.yaml")
    data = run_rebalance_stage(
        scenario=scenario, seeds=1, runner=partial(run_sweep, spark=spark), highlights=False
    )
    assert len(data.rows) == 14 and data.summary[0]["variant"] == "range/eager/dynamic"
    assert all(len(scenario.events) == sum(k.startswith("recovery_ms_") for k in s) for s in data.summary)
    assert all(r["invariant_violations"] == 0 for r in data.rows)


@pytest.mark.spark
def test_campaign_on_spark_matches_the_local_run(spark: Any) -> None:
    """--campaign --engine spark: one task per seed (at most four slices a core), the same runs."""
    from kgroup.sim.campaign import check_seed, run_on_spark

    seeds = list(range(40, 46))
    assert run_on_spark(spark, seeds) == [check_seed(s) for s in seeds]
