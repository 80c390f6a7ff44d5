"""Issue 31: the ``kgroup`` sink writing to a topic that does not exist does what Spark's own
``format("kafka")`` sink does (its Java producer's Metadata request lets the broker create the topic
where ``auto.create.topics.enable`` is on: checked with Spark's connector 4.2.0 on kgroup serve,
which made the topic with the broker's ``num.partitions``); where the cluster will not create it, one
line before any Spark job (Spark's sink fails each task after ``max.block.ms``). On both brokers, on
the bulk path and on librdkafka's."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kgroup.partitioning import partition_for_key

pytestmark = pytest.mark.spark

_names = itertools.count()
PATHS = {"bulk": {}, "librdkafka": {"kafka.compression.type": "gzip"}}
GROUP = "kgroup-sink-new-topic"


def fresh(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


@pytest.fixture
def auto_creating(kafka_cluster: Any) -> Iterator[tuple[str, int]]:
    """A broker that creates topics on first use, and the partition count it gives them: a kgroup
    broker of its own (the shared one has auto-creation off) or the shared Apache Kafka (on, with
    num.partitions=1)."""
    if kafka_cluster.kind == "apache":
        yield kafka_cluster.bootstrap, 1
        return
    from kgroup.testing import KafkaBroker

    with KafkaBroker(auto_create_topics=True, num_partitions=3) as broker:
        yield broker.bootstrap_servers, 3


def _write(spark: Any, bootstrap: str, topic: str, path: str) -> None:
    df = spark.range(0, 200, 1, 2).selectExpr("concat('user-', id) as key", "cast(id as string) as value")
    writer = df.write.format("kgroup").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
    for key, value in PATHS[path].items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def _read_back(bootstrap: str, topic: str, partitions: int) -> dict[str, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        where: dict[str, int] = {}
        ended: set[int] = set()
        for _ in range(200):  # bounded
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                ended.add(message.partition())
                if len(ended) == partitions:
                    break
                continue
            where[message.key().decode()] = message.partition()
        return where
    finally:
        consumer.close()


@pytest.mark.parametrize("path", list(PATHS))
def test_a_topic_that_does_not_exist_is_created_as_by_sparks_connector(
    kgroup_spark: Any, auto_creating: tuple[str, int], path: str
) -> None:
    from confluent_kafka.admin import AdminClient

    bootstrap, partitions = auto_creating
    topic = fresh("sink-new")
    _write(kgroup_spark, bootstrap, topic, path)
    described = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    assert len(described.topics[topic].partitions) == partitions  # the broker's num.partitions
    where = _read_back(bootstrap, topic, partitions)
    assert len(where) == 200
    assert all(p == partition_for_key(k, partitions) for k, p in where.items())


@pytest.mark.parametrize("path", list(PATHS))
def test_a_topic_the_cluster_will_not_create_is_one_line_before_any_job(
    kgroup_spark: Any, kgroup_cluster: Any, path: str
) -> None:
    """kgroup_cluster runs with auto-creation off (tests/security holds the Apache Kafka case)."""
    context = kgroup_spark.sparkContext
    context.setJobGroup(GROUP, "no such topic")
    topic = fresh("sink-none")
    try:
        with pytest.raises(Exception) as caught:
            _write(kgroup_spark, kgroup_cluster.bootstrap, topic, path)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert (
        f"topic: '{topic}' does not exist on the cluster at {kgroup_cluster.bootstrap}, which does not "
        "create topics on first use (auto.create.topics.enable=false); create it first"
    ) in str(caught.value)
    assert list(context.statusTracker().getJobIdsForGroup(GROUP)) == []
