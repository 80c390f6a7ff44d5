"""The simulation sweep on Spark: scenarios × strategies × protocols × seeds, one task per simulation.

Each cell (a scenario as plain data, a :class:`~kgroup.sim.variants.Variant`, a seed) is one element
of an RDD with as many slices as cells, so Spark schedules every simulation as its own task on
whatever executors the master offers. Each task runs the pure simulator
(:func:`kgroup.sim.compare.run_one`) and returns one row of metrics; the rows form a DataFrame
(:data:`kgroup.sim.compare.ROW_COLUMNS`), and the comparison table is a ``groupBy`` over it with the
same definitions as the in-process :func:`kgroup.sim.compare.summarize`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroup.sim.compare import ROW_COLUMNS, SHARE_COLUMNS, SUMMARY_METRICS, run_one
from kgroup.sim.scenario import Scenario
from kgroup.sim.variants import Variant

__all__ = ["run_sweep", "summary_dataframe", "sweep_dataframe"]


def _schema() -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    types = {"str": StringType(), "int": LongType()}
    return StructType([StructField(name, types[kind], nullable=False) for name, kind in ROW_COLUMNS])


def _run_cell(cell: tuple[dict[str, Any], Variant, int]) -> tuple[Any, ...]:
    from kgroup.spark.worker_gc import task_started

    task_started()  # one cell per task (sweep_dataframe)
    data, variant, seed = cell
    row = run_one(data, variant, seed)
    return tuple(row[name] for name, _ in ROW_COLUMNS)


def sweep_dataframe(
    spark: Any, scenarios: Sequence[Scenario], variants: Sequence[Variant], seeds: Sequence[int]
) -> Any:
    """A DataFrame with one row per (scenario, variant, seed), each computed by its own Spark task."""
    cells = [(sc.to_data(), v, s) for sc in scenarios for v in variants for s in seeds]
    if not cells:
        return spark.createDataFrame([], _schema())
    rdd = spark.sparkContext.parallelize(cells, numSlices=len(cells)).map(_run_cell)
    return spark.createDataFrame(rdd, _schema())


def summary_dataframe(rows: Any) -> Any:
    """One row per (scenario, variant): the run count and the mean of each metric (one decimal).

    ``max_time_to_stable_ms`` averages only runs whose disturbances all settled (-1.0 if none did),
    as :func:`kgroup.sim.compare.summarize` does.
    """
    from pyspark.sql import functions as F

    aggregates = [F.count(F.lit(1)).alias("runs")]
    for metric in SUMMARY_METRICS:
        column = F.col(metric)
        if metric == "max_time_to_stable_ms" or metric in SHARE_COLUMNS:
            mean = F.coalesce(F.avg(F.when(column >= 0, column)), F.lit(-1.0))
        else:
            mean = F.avg(column)
        aggregates.append(F.round(mean.cast("double"), 1).alias(metric))
    return rows.groupBy("scenario", "variant").agg(*aggregates)


def run_sweep(
    scenarios: Sequence[Scenario],
    variants: Sequence[Variant],
    seeds: Sequence[int],
    *,
    master: str = "local[*]",
    spark: Any = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the sweep on Spark; return (every run's row, one summary row per scenario and variant).

    Rows come back in (scenario, variant, seed) order and summaries in scenario then variant order,
    whatever order the tasks finished in. A session is started on ``master`` unless one is given.
    """
    if spark is None:
        from kgroup.spark.session import get_spark

        spark = get_spark(master, app_name="kgroup-simulate-sweep")
    df = sweep_dataframe(spark, scenarios, variants, seeds).cache()
    rows = [r.asDict() for r in df.collect()]
    summary = [r.asDict() for r in summary_dataframe(df).collect()]
    df.unpersist()
    scenario_rank = {sc.name: k for k, sc in enumerate(scenarios)}
    variant_rank = {v.label: k for k, v in enumerate(variants)}
    seed_rank = {s: k for k, s in enumerate(seeds)}
    rows.sort(key=lambda r: (scenario_rank[r["scenario"]], variant_rank[r["variant"]], seed_rank[r["seed"]]))
    summary.sort(key=lambda r: (scenario_rank[r["scenario"]], variant_rank[r["variant"]]))
    return rows, summary
