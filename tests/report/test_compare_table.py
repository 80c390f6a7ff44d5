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
    )
    events = scenario.events
    assert metric_label("recovery_ms_1", events) == "recovery after rolling restart at 10 s (s)"
    assert metric_label("recovery_ms_2", events) == "recovery after crash at 90 s (s)"


def test_the_piped_text_table_keeps_every_column(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    command = [
        sys.executable,
        "-m",
        "kgroup",
        "simulate",
        str(path),
        "--compare",
        "--engine",
        "local",
        "--static",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = [line for line in lines if line.startswith("│ ")]
    assert len(rows) == 7  # every strategy × protocol Kafka runs, static
    # every row has a cell per column, the last one (invariant violations) included
    assert all(line.count("│") == len(table_columns(2)) + 1 for line in rows), rows
    assert all(line.rstrip().endswith("0 │") for line in rows)  # no violation, the last column there
    headers = " ".join(line for line in lines if line.startswith("┃"))
    for word in ("violations", "crash", "rolling", "reprocessed"):
        assert word in headers
