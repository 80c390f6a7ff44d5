"""``kgroup simulate --compare``: recovery per scenario event, from the event's last action (a crash's
recovery is not hidden behind a rolling restart's own length), and the text table whole when piped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from kgroup.report.timeline import metric_label
from kgroup.sim.compare import run_local, summarize, table_columns
from kgroup.sim.scenario import parse_scenario
from kgroup.sim.variants import Variant

#: a rolling restart of three consumers 20 s apart (40 s from the first restart to the last), then a crash
SCENARIO = {
    "name": "restart-then-crash",
    "seed": 3,
    "duration_ms": 120_000,
    "topics": {"t": 6},
    "group": {"assignors": ["range"], "session_timeout_ms": 10_000},
    "consumers": [{"count": 3, "prefix": "c", "topics": ["t"]}],
    "workload": {"produce_per_partition_per_s": 2, "consume_per_consumer_per_s": 20},
    "events": [
        {
            "at_ms": 10_000,
            "kind": "rolling_restart",
            "consumers": "all",
            "gap_ms": 20_000,
            "downtime_ms": 2_000,
        },
        {"at_ms": 90_000, "kind": "crash", "consumer": "c1"},
    ],
}


def test_recovery_is_per_event_and_counts_from_the_events_last_action() -> None:
    from kgroup.sim.runner import simulate

    scenario = parse_scenario(SCENARIO)
    result = simulate(Variant("range", "eager", "dynamic").apply(scenario))
    rolling, crash = result.metrics["time_to_stable_ms"]
    assert result.recovery_ms[0] is not None and result.recovery_ms[1] is not None
    # the rolling restart's time to stable includes its own 40 + 2 s; its recovery does not
    assert rolling - result.recovery_ms[0] >= 42_000
    # a crash's last action is the crash itself: found by the 10 s session timeout (counted from the
    # last heartbeat, at most 3 s before the crash), then a rebalance
    assert result.recovery_ms[1] == crash >= 7_000
    summary = summarize(run_local(scenario, [Variant("range", "eager", "dynamic")], [3, 4]))
    (row,) = summary
    assert row["recovery_ms_2"] < row["max_time_to_stable_ms"]  # what "slowest recovery" hid
    assert table_columns(2) == (
        "variant",
        "runs",
        "rebalances",
        "unowned_partition_ms",
        "double_owned_ms",
        "zombie_owned_ms",
        "moved_partitions",
        "recovery_ms_1",
        "recovery_ms_2",
        "max_lag_records",
        "records_reprocessed",
        "invariant_violations",
        # a share group's own (— in the consumer groups' rows)
        "records_redelivered",
        "records_archived",
        "delivery_p99_ms",
    )
    events = scenario.events
    assert metric_label("recovery_ms_1", events) == "recovery after rolling restart at 10 s (s)"
    assert metric_label("recovery_ms_2", events) == "recovery after crash at 90 s (s)"


def test_the_engine_is_chosen_by_what_the_sweep_costs() -> None:
    from kgroup.cli.simulate import SPARK_FIXED_S, SPARK_PARALLEL_EFFICIENCY, SPARK_TASK_S, choose_engine

    # two cores (the project's machine): Spark never pays, however long the sweep (measured: 3.3x and
    # 5.0x slower for 14 and 140 runs)
    small = choose_engine(5.0, 14, cores=2)
    assert small.engine == "local" and small.local_s == 70.0 and small.spark_pays_from_s is None
    assert "does not pay" in small.note and "--engine spark or local" in small.note
    assert choose_engine(60.0, 1000, cores=2).engine == "local"
    # eight cores: 14 runs of a second stay here (Spark's start alone is longer), 14 runs of 5 s go
    assert choose_engine(1.0, 14, cores=8).engine == "local"
    big = choose_engine(5.0, 14, cores=8)
    pays_from = big.spark_pays_from_s
    assert big.engine == "spark" and pays_from is not None and big.local_s > pays_from
    spark_s = SPARK_FIXED_S + 14 * SPARK_TASK_S + big.local_s / (8 * SPARK_PARALLEL_EFFICIENCY)
    assert spark_s < big.local_s and "pays from about" in big.note


def test_the_piped_text_table_keeps_every_column(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    # no --engine: auto, which keeps a sweep of a few seconds in this process (Spark's start alone is longer)
    command = [sys.executable, "-m", "kgroup", "simulate", str(path), "--compare", "--static"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("engine: local (auto) — about "), done.stderr
    assert "starting Spark" not in done.stderr
    lines = done.stdout.splitlines()
    rows = [line for line in lines if line.startswith("│ ")]
    # every strategy × protocol Kafka runs, static, and the share group (which has no static members)
    assert len(rows) == 8
    # every row has a cell per column, the last one (a share group's p99 delivery latency) included
    columns = table_columns(2)
    assert all(line.count("│") == len(columns) + 1 for line in rows), rows
    cells = [[cell.strip() for cell in line.strip().strip("│").split("│")] for line in rows]
    violations = columns.index("invariant_violations")
    assert all(row[violations] == "0" for row in cells), cells  # no violation
    consumer_rows = [row for row in cells if not row[0].endswith("/share")]
    (share_row,) = [row for row in cells if row[0].endswith("/share")]
    assert len(consumer_rows) == 7 and all(row[-3:] == ["—", "—", "—"] for row in consumer_rows)
    assert share_row[-1] not in ("", "—")  # the share group's p99, the table's last column
    headers = " ".join(line for line in lines if line.startswith("┃"))
    for word in ("violations", "crash", "rolling", "reprocessed"):
        assert word in headers
