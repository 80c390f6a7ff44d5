"""The group ETL benchmark's Java stage (``kgroup.bench.java_etl``, ``EtlStage.java``): Kafka's Java
clients run a stage on ``kgroup serve`` — members churn (more members started than run at once),
every source record reaches the sink at least once, and the group's committed offsets reach the end
of every source partition. Figures are the benchmark's; nothing here asserts a time."""

from __future__ import annotations

import pytest

from kgroup.bench.java_etl import run_java_stage
from kgroup.model import KgroupError
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.broker import KafkaBroker

pytestmark = pytest.mark.timeout(300)

RECORDS = 2000
PARTITIONS = 4


def _produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, key=str(i).encode(), value=b"v")
    assert producer.flush(60) == 0


def _end_offsets(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "etl-test-reader"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)
        ]
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


@pytest.mark.parametrize("kind", ["range", "consumer-uniform"])
def test_a_java_stage_carries_every_record_and_commits_to_the_end(kind: str) -> None:
    require_apache_kafka()
    with KafkaBroker(topics={"src": PARTITIONS, "dst": PARTITIONS}) as kafka:
        _produce(kafka.bootstrap_servers, "src")
        result = run_java_stage(kind, kafka.bootstrap_servers, f"etl-{kind}", "src", "dst", RECORDS, 2, 120.0)
        assert result.members > 2  # each member leaves after RECORDS / 4: new ones took their slots
        assert result.elapsed_s > 0
        assert sum(_end_offsets(kafka.bootstrap_servers, "dst")) >= RECORDS  # at least once
        assert _committed(kafka.bootstrap_servers, f"etl-{kind}", "src") == _end_offsets(
            kafka.bootstrap_servers, "src"
        )


def test_an_unknown_kind_is_one_line() -> None:
    with pytest.raises(KgroupError, match="unknown kind 'sticky'"):
        run_java_stage("sticky", "127.0.0.1:9", "g", "a", "b", 1, 1, 1.0)
