"""Comparing strategies: one row of metrics per simulation, one summary row per variant.

The same functions serve the in-process comparison and the Spark sweep
(:mod:`kgroup.spark.demo.sweep`), so both give the same table for the same scenario and seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kgroup.sim.result import SimResult
from kgroup.sim.scenario import Scenario, parse_scenario
from kgroup.sim.variants import Variant

__all__ = [
    "EOS_COLUMNS",
    "ROW_COLUMNS",
    "SHARE_COLUMNS",
    "SUMMARY_COLUMNS",
    "add_event_recoveries",
    "eos_columns",
    "recovery_column",
    "result_row",
    "run_local",
    "run_one",
    "summarize",
    "table_columns",
]

#: one simulation's row (the Spark sweep's DataFrame schema follows this order)
ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scenario", "str"),
    ("variant", "str"),
    ("strategy", "str"),
    ("protocol", "str"),
    ("membership", "str"),
    ("seed", "int"),
    ("rebalances", "int"),
    ("generation", "int"),
    ("unowned_partition_ms", "int"),
    ("double_owned_ms", "int"),
    ("zombie_owned_ms", "int"),
    ("moved_partitions", "int"),
    ("max_time_to_stable_ms", "int"),  # -1 when some disturbance never settled
    ("unsettled_disturbances", "int"),
    # per scenario event, in order: ms from its last action to stable (-1: never), comma-separated
    ("recovery_by_event_ms", "str"),
    ("max_lag_records", "int"),
    ("records_processed", "int"),
    ("records_reprocessed", "int"),
    ("invariant_violations", "int"),
    # share groups only (-1 on the other protocols): redeliveries, archived records, p99 produce -> accepted
    ("records_redelivered", "int"),
    ("records_archived", "int"),
    ("delivery_p99_ms", "int"),
    # an exactly-once scenario's consumer groups only (-1 otherwise): the same variant and seed run
    # again with processing: exactly_once (the row's other metrics are its at-least-once run's)
    ("eos_records_reread", "int"),
    ("eos_output_duplicates", "int"),
    ("eos_transactions_aborted", "int"),
    ("eos_records_thrown_away", "int"),
    ("eos_latency_added_p99_ms", "int"),
)
#: the columns only a share group's run fills (the other protocols' rows carry -1: not measured)
SHARE_COLUMNS = ("records_redelivered", "records_archived", "delivery_p99_ms")
#: the columns only an exactly-once scenario's consumer-group rows fill (-1 elsewhere)
EOS_COLUMNS = (
    "eos_records_reread",
    "eos_output_duplicates",
    "eos_transactions_aborted",
    "eos_records_thrown_away",
    "eos_latency_added_p99_ms",
)
#: columns averaged over the runs that measured them (-1.0 when none did)
_MEASURED_ONLY = frozenset((*SHARE_COLUMNS, *EOS_COLUMNS))

#: the comparison table's columns: the variant, then means over seeds of these metrics
SUMMARY_METRICS = (
    "rebalances",
    "unowned_partition_ms",
    "double_owned_ms",
    "zombie_owned_ms",
    "moved_partitions",
    "max_time_to_stable_ms",
    "max_lag_records",
    "records_reprocessed",
    "invariant_violations",
    *SHARE_COLUMNS,
    *EOS_COLUMNS,
)
SUMMARY_COLUMNS = ("variant", "runs", *SUMMARY_METRICS)


def recovery_column(event: int) -> str:
    """The summary's column of the ``event``-th scenario event's recovery (0-based), in ms."""
    return f"recovery_ms_{event + 1}"


def table_columns(event_count: int, exactly_once: bool = False) -> tuple[str, ...]:
    """The comparison table's columns for a scenario of ``event_count`` events: the summary's, with
    one recovery column per event where the summary has the slowest time to stable (which counts
    from each event's start, so a rolling restart's own length hid a crash's recovery); the
    exactly-once columns only for an ``exactly_once`` scenario."""
    recoveries = tuple(recovery_column(k) for k in range(event_count))
    out: list[str] = []
    for column in SUMMARY_COLUMNS:
        if column in EOS_COLUMNS and not exactly_once:
            continue
        out.extend(recoveries if column == "max_time_to_stable_ms" else (column,))
    return tuple(out)


def result_row(scenario: Scenario, variant: Variant, result: SimResult) -> dict[str, Any]:
    m = result.metrics
    times = m["time_to_stable_ms"]
    unsettled = sum(1 for t in times if t is None)
    settled = [t for t in times if t is not None]
    return {
        "scenario": scenario.name,
        "variant": variant.label,
        "strategy": variant.strategy,
        "protocol": variant.protocol,
        "membership": variant.membership or "as-written",
        "seed": scenario.seed,
        "rebalances": m["rebalances"],
        "generation": m["generation"],
        "unowned_partition_ms": m["unowned_partition_ms"],
        "double_owned_ms": m["double_owned_ms"],
        "zombie_owned_ms": m["zombie_owned_ms"],
        "moved_partitions": m["moved_partitions"],
        "max_time_to_stable_ms": -1 if unsettled else max(settled, default=0),
        "unsettled_disturbances": unsettled,
        "recovery_by_event_ms": ",".join(str(-1 if t is None else t) for t in result.recovery_ms),
        "max_lag_records": m["max_lag_records"],
        "records_processed": m["records_processed"],
        "records_reprocessed": m["records_reprocessed"],
        "invariant_violations": m["invariant_violation_count"],
        "records_redelivered": m.get("records_redelivered", -1),
        "records_archived": m.get("records_archived", -1),
        "delivery_p99_ms": _p99(m),
        **dict.fromkeys(EOS_COLUMNS, -1),
    }


def eos_columns(result: SimResult) -> dict[str, int]:
    """An exactly-once run's columns of the row."""
    m = result.metrics
    p99 = m["latency_added_ms"]["p99"]
    return {
        "eos_records_reread": m["records_reprocessed"],
        "eos_output_duplicates": m["output_duplicates"],
        "eos_transactions_aborted": m["transactions_aborted"],
        "eos_records_thrown_away": m["records_thrown_away"],
        "eos_latency_added_p99_ms": -1 if p99 is None else int(p99),
    }


def _p99(metrics: dict[str, Any]) -> int:
    latency = metrics.get("delivery_latency_ms")
    if not isinstance(latency, dict) or latency.get("p99") is None:
        return -1
    return int(latency["p99"])


def run_one(scenario_data: dict[str, Any], variant: Variant, seed: int) -> dict[str, Any]:
    """Run one cell from plain data (what a Spark task receives) and return its row."""
    from kgroup.sim.runner import simulate

    base = parse_scenario(scenario_data, name=str(scenario_data.get("name", "scenario")))
    if not base.workload.exactly_once:
        scenario = variant.apply(base, seed=seed)
        return result_row(scenario, variant, simulate(scenario))
    # exactly once: the row is the at-least-once run's, with the exactly-once run's columns beside it
    # (a share group has no exactly-once processing: its row is at least once only)
    at_least_once = dataclasses.replace(
        base, workload=dataclasses.replace(base.workload, processing="at_least_once")
    )
    scenario = variant.apply(at_least_once, seed=seed)
    row = result_row(scenario, variant, simulate(scenario))
    if variant.protocol != "share":
        row.update(eos_columns(simulate(variant.apply(base, seed=seed))))
    return row


def run_local(
    scenario: Scenario,
    variants: Sequence[Variant],
    seeds: Sequence[int],
    on_run: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every variant × seed in this process, in order; ``on_run(n)`` after the n-th run (progress)."""
    data = scenario.to_data()
    rows: list[dict[str, Any]] = []
    for v in variants:
        for s in seeds:
            rows.append(run_one(data, v, s))
            if on_run is not None:
                on_run(len(rows))
    return rows


def summarize(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scenario, variant), in order of first appearance: the number of runs and the
    mean of each metric (one decimal). ``max_time_to_stable_ms`` averages the runs whose
    disturbances all settled; it is -1.0 if none did."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["scenario"], row["variant"]), []).append(row)
    out: list[dict[str, Any]] = []
    for (scenario, variant), group in groups.items():
        summary: dict[str, Any] = {"scenario": scenario, "variant": variant, "runs": len(group)}
        for metric in SUMMARY_METRICS:
            values = [r[metric] for r in group]
            if metric == "max_time_to_stable_ms" or metric in _MEASURED_ONLY:
                values = [v for v in values if v >= 0]
                if not values:
                    summary[metric] = -1.0
                    continue
            summary[metric] = round(sum(values) / len(values), 1)
        out.append(summary)
    return add_event_recoveries(out, [r for group in groups.values() for r in group])


def add_event_recoveries(
    summary: list[dict[str, Any]], rows: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Add each summary row's recovery per scenario event (:func:`recovery_column`): the mean over the
    runs in which that event settled, in ms from the event's last action to stable (-1.0 if it never
    did in any run). Works on either engine's summary (the Spark sweep's rows carry the same column)."""
    by_variant: dict[tuple[str, str], list[list[int]]] = {}
    for row in rows:
        values = [int(v) for v in str(row["recovery_by_event_ms"]).split(",") if v]
        by_variant.setdefault((row["scenario"], row["variant"]), []).append(values)
    for entry in summary:
        runs = by_variant.get((entry["scenario"], entry["variant"]), [])
        for k in range(max((len(v) for v in runs), default=0)):
            settled = [v[k] for v in runs if k < len(v) and v[k] >= 0]
            entry[recovery_column(k)] = round(sum(settled) / len(settled), 1) if settled else -1.0
    return summary
