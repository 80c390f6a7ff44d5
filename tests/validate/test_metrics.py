"""The validation metrics (kgroup.validate.metrics), the event windows and the driver's bookkeeping,
on hand-made timelines whose answers are worked out in each test."""

from __future__ import annotations

from kgroup.sim.scenario import parse_scenario
from kgroup.validate.driver import _Players, _timeline
from kgroup.validate.metrics import (
    Batch,
    EventWindow,
    moved_partitions,
    records_reprocessed,
    time_to_stable_ms,
    unowned_partition_ms,
)
from kgroup.validate.runs import MetricRow, event_windows

P = ["t-0", "t-1"]


def test_unowned_counts_from_the_first_moment_everything_was_owned() -> None:
    # t-0 owned from 1000, t-1 from 3000: the group formed at 3000; before that nothing counts.
    # Then t-1 has no owner from 5000 to 6500 (a handover with a gap): 1500 partition-ms.
    intervals = [("t-0", "a", 1000, 10_000), ("t-1", "a", 3000, 5000), ("t-1", "b", 6500, 10_000)]
    assert unowned_partition_ms(P, intervals, 10_000) == 1500
    # both unowned for 1 s after the group formed: 2000
    both = [("t-0", "a", 0, 2000), ("t-0", "a", 3000, 9000), ("t-1", "b", 0, 2000), ("t-1", "b", 3000, 9000)]
    assert unowned_partition_ms(P, both, 9000) == 2000


def test_unowned_is_zero_when_the_group_never_formed() -> None:
    assert unowned_partition_ms(P, [("t-0", "a", 0, 5000)], 5000) == 0


def test_a_handover_at_the_same_millisecond_leaves_nothing_unowned_but_is_a_move() -> None:
    intervals = [("t-0", "a", 0, 4000), ("t-0", "b", 4000, 8000), ("t-1", "a", 0, 8000)]
    assert unowned_partition_ms(P, intervals, 8000) == 0
    assert moved_partitions(intervals) == 1
    # the handover is the last change after an event at 3000
    assert time_to_stable_ms(P, intervals, EventWindow("x", 3000, 8000), 8000) == 1000


def test_moved_partitions_ignores_first_owners_and_an_owner_getting_its_own_partition_back() -> None:
    intervals = [
        ("t-0", "a", 0, 100),
        ("t-0", "a", 300, 500),  # eager: revoked and given back to a
        ("t-0", "b", 600, 900),  # moved to b
        ("t-0", "a", 900, 1000),  # moved back to a
        ("t-1", "b", 0, 1000),
    ]
    assert moved_partitions(intervals) == 2


def test_time_to_stable() -> None:
    intervals = [("t-0", "a", 0, 2000), ("t-0", "b", 2600, 9000), ("t-1", "a", 0, 9000)]
    # event at 1000: the last change before 5000 is b taking t-0 at 2600
    assert time_to_stable_ms(P, intervals, EventWindow("crash a", 1000, 5000), 9000) == 1600
    # nothing changes in [3000, 9000) and everything is owned: 0
    assert time_to_stable_ms(P, intervals, EventWindow("later", 3000, 9000), 9000) == 0
    # a window that ends with t-0 unowned never became stable
    assert time_to_stable_ms(P, intervals, EventWindow("early", 1000, 2300), 9000) is None
    # intervals still open at the end of the run end there: not a change
    assert time_to_stable_ms(P, intervals, EventWindow("end", 2700, 9000), 9000) == 0


def test_records_reprocessed_in_time_order_whoever_reports_first() -> None:
    batches = [
        Batch(2000, "t-0", 50, 80),  # b starts again at 50 (a had reached 99): 50..80 again = 31
        Batch(1000, "t-0", 0, 99),
        Batch(3000, "t-0", 81, 120),  # 81..99 again = 19, the rest is new
        Batch(3000, "t-1", 0, 10),
        Batch(3500, "t-1", 11, 20),
    ]
    assert records_reprocessed(batches) == 31 + 19


def test_event_windows_end_at_the_next_event() -> None:
    scenario = parse_scenario(
        {
            "duration_ms": 30_000,
            "topics": {"t": 2},
            "consumers": [{"count": 2, "prefix": "w", "topics": ["t"]}],
            "events": [
                {"at_ms": 20_000, "kind": "scale", "count": 1, "topics": ["t"]},
                {"at_ms": 10_000, "kind": "crash", "consumer": "w1"},
            ],
        }
    )
    windows = event_windows(scenario)
    assert [(w.label, w.at_ms, w.until_ms) for w in windows] == [
        ("start @0s", 0, 10_000),
        ("crash w1 @10s", 10_000, 20_000),
        ("scale +1 @20s", 20_000, 30_000),
    ]


def test_ratio() -> None:
    row = MetricRow("m", 6.0, {"kgroup": 5.0, "apache": 0.0, "other": None})
    assert row.ratio("kgroup") == 1.2
    assert row.ratio("apache") is None  # 6 against 0: no ratio
    assert row.ratio("other") is None
    assert MetricRow("m", 0, {"kgroup": 0}).ratio("kgroup") == 1.0


def test_the_driver_unrolls_restarts_and_rolling_restarts() -> None:
    scenario = parse_scenario(
        {
            "duration_ms": 60_000,
            "topics": {"t": 2},
            "consumers": [{"count": 2, "prefix": "w", "topics": ["t"]}],
            "events": [
                {
                    "at_ms": 5000,
                    "kind": "rolling_restart",
                    "consumers": "all",
                    "gap_ms": 4000,
                    "downtime_ms": 1000,
                },
                {"at_ms": 20_000, "kind": "restart", "consumer": "w0", "downtime_ms": 500, "graceful": False},
            ],
        }
    )
    steps = [(at, action, event.consumer, event.graceful) for at, action, event in _timeline(scenario)]
    assert steps == [
        (5000, "down", "w0", True),
        (6000, "up", "w0", True),
        (9000, "down", "w1", True),
        (10_000, "up", "w1", True),
        (20_000, "down", "w0", False),
        (20_500, "up", "w0", False),
    ]


def test_the_driver_builds_ownership_from_the_callbacks_and_a_kill_ends_it() -> None:
    scenario = parse_scenario(
        {
            "duration_ms": 10_000,
            "topics": {"t": 2},
            "consumers": [{"count": 2, "prefix": "w", "topics": ["t"]}],
        }
    )
    players = _Players(scenario, "127.0.0.1:1", "g", {"t": "t-run1"})
    players.t0_ms = 1_000_000
    reports = [
        ("w0", {"t": 1_001_000, "e": "assigned", "p": ["t-run1-0"]}),
        ("w1", {"t": 1_001_000, "e": "assigned", "p": ["t-run1-1"]}),
        ("w0", {"t": 1_002_000, "e": "batch", "b": [["t-run1-0", 0, 9]]}),
        ("w1", {"t": 1_004_000, "e": "killed"}),
        ("w0", {"t": 1_007_000, "e": "revoked", "p": ["t-run1-0"]}),
        ("w0", {"t": 1_007_100, "e": "assigned", "p": ["t-run1-0", "t-run1-1"]}),
    ]
    players.lines.extend(reports)
    run = players.result(10_000)
    assert run.partitions == ["t-0", "t-1"]
    assert sorted(run.intervals) == [
        ("t-0", "w0", 1000, 7000),
        ("t-0", "w0", 7100, 10_000),
        ("t-1", "w0", 7100, 10_000),
        ("t-1", "w1", 1000, 4000),
    ]
    assert run.batches == [Batch(2000, "t-0", 0, 9)]


def test_a_consumer_process_that_dies_on_its_own_is_reported_with_its_last_error_line() -> None:
    import subprocess
    import sys
    import tempfile
    import threading

    from kgroup.validate.driver import _Process

    scenario = parse_scenario(
        {"duration_ms": 10_000, "topics": {"t": 1}, "consumers": [{"id": "w0", "topics": ["t"]}]}
    )
    players = _Players(scenario, "127.0.0.1:1", "g", {"t": "t-run1"})
    errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _Process.end)
    popen = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stderr.write('first\\nboom: bad config\\n'); sys.exit(3)"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    popen.wait(30)
    process = _Process("w0", popen, threading.Thread(target=lambda: None), threading.Event(), errors)
    process.reader.start()
    players.running["w0"] = process
    players.crash("w0")
    assert players.failures == ["consumer w0: its process ended on its own (exit status 3: boom: bad config)"]


def test_simulated_over_seeds_is_the_median_and_jitter_reaches_the_network() -> None:
    import statistics

    from kgroup.validate.runs import simulated, with_jitter

    scenario = parse_scenario(
        {
            "seed": 3,
            "duration_ms": 20_000,
            "topics": {"t": 4},
            "group": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "assignors": ["range"]},
            "consumers": [{"count": 2, "prefix": "w", "topics": ["t"]}],
            "events": [{"at_ms": 8000, "kind": "crash", "consumer": "w1"}],
        }
    )
    assert with_jitter(scenario, 20).network.jitter_ms == 20
    assert with_jitter(scenario, None) is scenario
    medians, details = simulated(scenario, seeds=3, jitter_ms=20)
    assert details["seeds"] == [3, 4, 5] and details["jitter_ms"] == 20
    for metric, values in details["per_seed"].items():
        assert len(values) == 3
        assert medians[metric] == statistics.median(v for v in values if v is not None)
    # one seed without jitter is the plain simulation
    one, one_details = simulated(scenario)
    assert "per_seed" not in one_details and one_details["jitter_ms"] == 0
    assert one["rebalances"] == one_details["simulator_metrics"]["generation"]


def test_the_worker_speaks_the_scenarios_protocol_in_a_config_librdkafka_accepts() -> None:
    from confluent_kafka import Consumer

    from kgroup.validate.worker import consumer_config

    spec = {
        "bootstrap": "127.0.0.1:9",
        "group": "g",
        "id": "w0",
        "assignors": ["cooperative-sticky"],
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 30000,
        "enable_auto_commit": True,
        "auto_commit_interval_ms": 1000,
        "auto_offset_reset": "earliest",
    }
    classic = consumer_config({**spec, "protocol": "classic"})
    assert classic["partition.assignment.strategy"] == "cooperative-sticky"
    assert classic["session.timeout.ms"] == 6000 and "group.protocol" not in classic
    kip848 = consumer_config({**spec, "protocol": "consumer", "server_assignor": "range"})
    assert kip848["group.protocol"] == "consumer" and kip848["group.remote.assignor"] == "range"
    # the coordinator owns these with KIP-848: librdkafka refuses a consumer that sets them
    assert not {"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"} & set(kip848)
    for config in (classic, kip848):
        Consumer(config).close()  # librdkafka accepts it (nothing connects before a poll)


def test_the_java_drivers_events_become_the_workers_reports() -> None:
    from kgroup.validate.java_driver import _reports

    events = [
        {"event": "started", "ts": 1},
        {"event": "assigned", "ts": 5, "partitions": [["t-run1", 0], ["t-run1", 1]], "assignment": []},
        {"event": "record", "ts": 7, "topic": "t-run1", "partition": 1, "offset": 42},
        {"event": "revoked", "ts": 9, "partitions": [["t-run1", 1]], "assignment": []},
        {"event": "lost", "ts": 11, "partitions": [["t-run1", 0]], "assignment": []},
    ]
    assert _reports(events) == [
        {"t": 5, "e": "assigned", "p": ["t-run1-0", "t-run1-1"]},
        {"t": 7, "e": "batch", "b": [["t-run1-1", 42, 42]]},
        {"t": 9, "e": "revoked", "p": ["t-run1-1"]},
        {"t": 11, "e": "lost", "p": ["t-run1-0"]},
    ]
