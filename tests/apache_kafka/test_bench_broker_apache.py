"""``kgroup bench broker --peers apache``: Apache Kafka as a peer, started, measured and stopped.

A tiny run (figures printed by the benchmark, never asserted): every cell has a figure, every record
produced is fetched back, and the peer is stopped (``ApacheKafka.stop`` raises when a JVM outlives it).
"""

from __future__ import annotations

import pytest

from kgroup.bench.broker import BrokerBenchConfig, metric_names, run_broker_bench
from kgroup.testing.apache_kafka import KAFKA_VERSION, require_apache_kafka

pytestmark = pytest.mark.timeout(300)


def test_apache_kafka_peer_runs_every_cell_and_stops() -> None:
    require_apache_kafka()
    config = BrokerBenchConfig(peers=("apache",), records=500, record_bytes=1024, warmup_records=100,
                               group_sizes=(2,), group_topics=1, runs=1, timeout_s=60)
    result = run_broker_bench(config)
    assert set(result.cells) == {("apache", m) for m, _unit in metric_names(config)}
    for cell in result.cells.values():
        assert cell.failures == [], cell.failures
        assert len(cell.values) == 1 and cell.values[0] > 0
    assert result.cells[("apache", "produce")].details[0].startswith("500 records in ")
    assert result.cells[("apache", "fetch")].details[0].startswith("500 records in ")
    assert result.cells[("apache", "group of 2 stable")].details == ["2 consumers own 4 partitions"]
    assert any(KAFKA_VERSION in note for note in result.notes["apache"])

