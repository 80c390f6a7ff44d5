"""Share groups in ``kgroup validate``: the share metrics (kgroup.validate.metrics) on hand-made
deliveries, the driver's bookkeeping of what share consumers report, the simulated side, and the
worker's share consumer config (accepted by librdkafka)."""

from __future__ import annotations

from kgroup.sim.scenario import parse_scenario
from kgroup.validate.driver import _Players
from kgroup.validate.metrics import (
    Delivery,
    idle_member_ms,
    read_intervals,
    records_redelivered,
    unowned_partition_ms,
)
from kgroup.validate.runs import READ_HOLD_MS, share_real_metrics, simulated
from kgroup.validate.worker import _runs

P = ["t-0", "t-1"]


def _d(t: int, consumer: str, partition: str, first: int, last: int, count: int = 1) -> Delivery:
    return Delivery(t, consumer, partition, first, last, count)


def test_redelivered_counts_records_at_a_delivery_count_above_one() -> None:
    deliveries = [_d(0, "a", "t-0", 0, 9), _d(100, "b", "t-0", 5, 9, 2), _d(200, "b", "t-1", 3, 3, 3)]
    assert records_redelivered(deliveries) == 5 + 1


def test_idle_member_time_is_start_to_first_records_per_running_span() -> None:
    deliveries = [_d(1500, "a", "t-0", 0, 0), _d(3000, "a", "t-0", 1, 1), _d(9000, "b", "t-1", 0, 0)]
    # a: started at 0, first records at 1500; b: started at 2000, first at 9000; c: never got any,
    # its span 4000-6000 counts whole; a's second span (restarted at 5000) got nothing more: to 8000
    spans = [("a", 0, 4000), ("b", 2000, 10_000), ("c", 4000, 6000), ("a", 5000, 8000)]
    assert idle_member_ms(spans, deliveries) == 1500 + 7000 + 2000 + 3000


def test_unread_partition_time_is_what_comes_more_than_the_hold_after_a_delivery() -> None:
    # t-0 read every 500 ms to the end; t-1 read until 2000, then nothing until 6000: unread from
    # 2000 + hold to 6000
    deliveries = [_d(t, "a", "t-0", t, t) for t in range(0, 10_000, 500)]
    deliveries += [_d(t, "b", "t-1", t, t) for t in (0, 1000, 2000, 6000, 6500, 7000, 7500, 8000, 8500, 9000)]
    read = read_intervals(deliveries, READ_HOLD_MS)
    assert unowned_partition_ms(P, read, 10_000) == 6000 - (2000 + READ_HOLD_MS)


def test_the_worker_reports_runs_of_offsets_at_one_delivery_count() -> None:
    got = [("t-0", 3, 1), ("t-0", 1, 1), ("t-0", 2, 1), ("t-0", 4, 2), ("t-1", 7, 1), ("t-0", 6, 1)]
    assert _runs(got) == [["t-0", 1, 3, 1], ["t-0", 4, 4, 2], ["t-0", 6, 6, 1], ["t-1", 7, 7, 1]]


SHARE = {
    "duration_ms": 10_000,
    "topics": {"t": 2},
    "group": {"protocol": "share"},
    "consumers": [{"count": 2, "prefix": "c", "topics": ["t"]}],
    "workload": {"produce_per_partition_per_s": 10, "auto_offset_reset": "earliest"},
    "events": [{"at_ms": 5000, "kind": "crash", "consumer": "c1"}],
}


def test_the_driver_books_what_share_consumers_report() -> None:
    scenario = parse_scenario(SHARE)
    players = _Players(scenario, "127.0.0.1:1", "g", {"t": "t-run1"})
    players.t0_ms = 1_000_000
    players.lines.extend(
        [
            ("c0", {"t": 1_000_000, "e": "started"}),
            ("c1", {"t": 1_000_000, "e": "started"}),
            ("c0", {"t": 1_004_000, "e": "got", "r": [["t-run1-0", 0, 39, 1]]}),
            ("c0", {"t": 1_004_200, "e": "done", "n": 40}),
            ("c1", {"t": 1_004_500, "e": "got", "r": [["t-run1-1", 0, 44, 1]]}),
            ("c1", {"t": 1_005_000, "e": "killed"}),
            ("c0", {"t": 1_005_100, "e": "got", "r": [["t-run1-1", 0, 44, 2], ["t-run1-1", 45, 50, 1]]}),
            ("c0", {"t": 1_005_400, "e": "done", "n": 51}),
            # after the run's end: not counted (the simulation stops there)
            ("c0", {"t": 1_010_500, "e": "got", "r": [["t-run1-0", 40, 99, 1]]}),
            ("c0", {"t": 1_010_600, "e": "done", "n": 60}),
        ]
    )
    run = players.result(10_000)
    assert run.processed == 40 + 51
    assert run.deliveries[0] == Delivery(4000, "c0", "t-0", 0, 39, 1)
    assert len(run.deliveries) == 4
    assert run.spans == [("c0", 0, 10_000), ("c1", 0, 5000)]
    metrics = share_real_metrics(run)
    assert metrics["records_processed"] == 91
    assert metrics["records_redelivered"] == 45
    assert metrics["idle_member_s"] == (4000 + 4500) / 1000
    # every partition delivered from 4500 on; t-0's last delivery at 4000, so unread from 5000 to
    # the end; t-1 read to the end (5100 + hold = 6100), then unread to 10 000
    assert metrics["unread_partition_s"] == (10_000 - 5000 + 10_000 - 6100) / 1000


def test_the_simulated_side_reads_the_simulators_share_books() -> None:
    scenario = parse_scenario(SHARE)
    metrics, details = simulated(scenario)
    own = details["simulator_metrics"]
    assert own["protocol"] == "share"
    assert metrics == {
        "records_processed": own["records_processed"],
        "records_redelivered": own["records_redelivered"],
        "idle_member_s": own["idle_member_ms"] / 1000,
        "unread_partition_s": own["unowned_partition_ms"] / 1000,
    }
    assert metrics["records_processed"] and metrics["records_processed"] > 0


def test_the_share_worker_config_is_one_librdkafka_accepts() -> None:
    from confluent_kafka import ShareConsumer

    from kgroup.validate.worker import share_consumer_config

    config = share_consumer_config(
        {"bootstrap": "127.0.0.1:9", "group": "g", "id": "c0", "max_poll_interval_ms": 300_000}
    )
    assert config["share.acknowledgement.mode"] == "explicit"
    ShareConsumer(config).close()  # nothing connects before a poll
