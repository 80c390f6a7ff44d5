"""``kgroup validate`` of a share group (KIP-932) end to end: simulated, then real confluent-kafka
``ShareConsumer``s on ``kgroup serve`` (through the command line, ``--json``) and on Apache Kafka (the
session's ``apache_kafka`` node). 4 consumers share 2 partitions; ``c1`` is killed while the others
read on.

What is checked is the driver and the table, not the ±20 %: every measured number is the share
metric code applied to what the run's consumers got (recomputed here from the run's deliveries and
spans), no record was lost (each partition's delivered offsets run from 0 without a gap) and none was
delivered twice at delivery count 1, every redelivered record had been delivered to the killed consumer
and came again after the kill and before its 30 s lock could have run out (the broker released it when
the connection closed), and the killed consumer got nothing after the kill.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgroup.cli import main
from kgroup.sim.scenario import parse_scenario
from kgroup.validate.driver import RealRun
from kgroup.validate.metrics import Delivery
from kgroup.validate.runs import ApachePool, share_real_metrics, validate

KILL_AT_MS = 7000
DURATION_MS = 12_000
LOCK_MS = 30_000
DATA: dict[str, Any] = {
    "name": "ci-share-crash-4",
    "seed": 1,
    "duration_ms": DURATION_MS,
    "topics": {"t": 2},
    "group": {"protocol": "share", "initial_rebalance_delay_ms": 0, "max_poll_interval_ms": 300_000},
    "consumers": [{"count": 4, "prefix": "c", "topics": ["t"]}],
    "workload": {
        "produce_per_partition_per_s": 50,
        "consume_per_consumer_per_s": 60,
        "auto_offset_reset": "earliest",
    },
    "events": [{"at_ms": KILL_AT_MS, "kind": "crash", "consumer": "c1"}],
}
SCENARIO = parse_scenario(DATA, name="ci-share-crash-4")
PARTITIONS = ["t-0", "t-1"]


def _check_run(entry: dict[str, Any], broker: str) -> None:
    run = entry["runs"][broker]
    share = run["share"]
    rows = {row["metric"]: row for row in entry["metrics"]}
    assert set(rows) == {"records_processed", "records_redelivered", "idle_member_s", "unread_partition_s"}
    measured = {metric: row["measured"][broker] for metric, row in rows.items()}
    assert measured == run["metrics"]
    deliveries = [Delivery(*row) for row in share["deliveries"]]
    spans = [(s["consumer"], s["start_ms"], s["end_ms"]) for s in share["spans"]]
    again = RealRun(PARTITIONS, [], [], DURATION_MS, [], deliveries, share["processed"], spans)
    assert share_real_metrics(again) == measured
    # nothing lost, nothing delivered twice at count 1
    for p in PARTITIONS:
        mine = [d for d in deliveries if d.partition == p]
        offsets = [o for d in mine for o in range(d.first, d.last + 1)]
        firsts = [o for d in mine if d.count == 1 for o in range(d.first, d.last + 1)]
        assert offsets and set(offsets) == set(range(max(offsets) + 1)), (broker, p)
        assert len(firsts) == len(set(firsts)), (broker, p)
    # redeliveries: records the killed consumer held, released when its connection closed
    killed = [e["t_ms"] for e in run["consumer_log"] if e["consumer"] == "c1" and e["kind"] == "killed"]
    assert len(killed) == 1 and killed[0] >= KILL_AT_MS
    held = {(d.partition, o) for d in deliveries if d.consumer == "c1" for o in range(d.first, d.last + 1)}
    for d in deliveries:
        if d.count > 1:
            assert d.consumer != "c1" and killed[0] <= d.t_ms < killed[0] + LOCK_MS, (broker, d)
            assert all((d.partition, o) in held for o in range(d.first, d.last + 1)), (broker, d)
    assert all(d.t_ms <= killed[0] for d in deliveries if d.consumer == "c1")
    # the survivors got records, and some after the kill
    assert {"c0", "c2", "c3"} <= set(share["records_got"])
    assert any(d.t_ms > killed[0] for d in deliveries)
    assert measured["records_processed"] and measured["records_processed"] > 0


@pytest.mark.slow
def test_validate_a_share_group_on_kgroup_through_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenario = tmp_path / "ci.json"
    scenario.write_text(json.dumps(DATA), encoding="utf-8")
    with pytest.raises(SystemExit) as done:
        main(["validate", str(scenario), "--brokers", "kgroup", "--json"])
    out, err = capsys.readouterr()
    assert done.value.code in (0, None), err
    (entry,) = json.loads(out)["scenarios"]
    assert entry["scenario"] == "ci-share-crash-4"
    _check_run(entry, "kgroup")


@pytest.mark.slow
@pytest.mark.apache_kafka
def test_validate_a_share_group_on_apache_kafka(apache_kafka: Any) -> None:
    pool = ApachePool({0: apache_kafka})  # the fixture's node: delay 0, Kafka's share defaults
    try:
        result = validate(SCENARIO, ["apache"], pool)
    finally:
        pool.stop()
    _check_run(json.loads(json.dumps(result.to_data())), "apache")
    assert apache_kafka.pid(apache_kafka.node_ids[0]) is not None  # a lent node is left running
