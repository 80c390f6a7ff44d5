"""``consume=group``: a streaming read whose partitions a real consumer group decides, on real Spark
against kgroup's embedded broker and Apache Kafka, with confluent-kafka consumers in the same group."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.model import KgroupError

from .conftest import TOPIC_PARTITIONS, KafkaCluster

pytestmark = pytest.mark.spark

COOPERATIVE_STICKY_CLASS = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
FAST_GROUP = {
    "kafka.session.timeout.ms": "10000",
    "kafka.heartbeat.interval.ms": "1000",
    "kafka.max.poll.interval.ms": "60000",
}


def _produce(cluster: KafkaCluster, topic: str, start: int, count: int) -> None:
    cluster.produce(
        topic,
        [(f"k{i}".encode(), f"v{i}".encode(), i % TOPIC_PARTITIONS, []) for i in range(start, start + count)],
    )


def _group_stream(
    spark: Any,
    cluster: KafkaCluster,
    topic: str,
    group: str,
    fast: dict[str, str] = FAST_GROUP,
    **options: str,
) -> Any:
    reader = (
        spark.readStream.format("kgroup")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("consume", "group")
        .option("kafka.group.id", group)
    )
    for name, value in {**fast, **options}.items():
        reader = reader.option(name, value)
    return reader.load().select("key", "value", "partition", "offset")


def _committed(cluster: KafkaCluster, topic: str, group: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "log_level": 3})
    try:
        parts = [TopicPartition(topic, p) for p in range(TOPIC_PARTITIONS)]
        return [tp.offset for tp in consumer.committed(parts, timeout=10)]
    finally:
        consumer.close()


def _members_leave(cluster: KafkaCluster, group: str, within_s: float = 15.0) -> float:
    """Seconds until the group has no members (well under the 45 s session timeout: they left)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    start = time.monotonic()
    members = -1
    while time.monotonic() - start < within_s:
        described = admin.describe_consumer_groups([group])[group].result(10)
        members = len(described.members)
        if members == 0:
            return time.monotonic() - start
        time.sleep(0.25)
    raise AssertionError(f"{group}: still {members} members {within_s} s after the query ended")


def _ends(cluster: KafkaCluster, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kgroup-ends", "log_level": 3})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(4)]
    finally:
        consumer.close()


def test_available_now_reads_everything_once_and_leaves_the_group_with_no_lag(
    kgroup_spark: Any, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = kafka_cluster.new_topic("group-all")
    group = kafka_cluster.new_group("g-all")
    _produce(kafka_cluster, topic, 0, 400)
    frame = _group_stream(
        kgroup_spark, kafka_cluster, topic, group, groupMembers="2", maxOffsetsPerTrigger="100"
    )
    query = (
        frame.writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(str(tmp_path / "out"))
    )
    assert query.awaitTermination(180)
    # the query's members leave the group as it ends (issue 19: they used to wait out the session)
    _members_leave(kafka_cluster, group)
    rows = kgroup_spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (i % TOPIC_PARTITIONS, i // TOPIC_PARTITIONS) for i in range(400)
    )
    assert sorted(r.value for r in rows) == sorted(f"v{i}".encode() for i in range(400))
    sizes = [p.numInputRows for p in query.recentProgress if p.numInputRows]
    assert sum(sizes) == 400 and max(sizes) <= 100  # maxOffsetsPerTrigger bounds every batch
    # the last batch's offsets reach the group too (the query listener), so the lag is 0
    deadline = time.monotonic() + 30
    while (
        _committed(kafka_cluster, topic, group) != _ends(kafka_cluster, topic) and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert _committed(kafka_cluster, topic, group) == _ends(kafka_cluster, topic) == [100] * 4
    # every batch recorded who owned which partition, in which generation
    ends = [json.loads(p.sources[0].endOffset) for p in query.recentProgress if p.numInputRows]
    owners = ends[-1]["kgroupGroup"]["members"]
    assert len(owners) == 2 and all(o["generation"] >= 1 for o in owners)
    owned = sorted(int(p) for o in owners for parts in o["partitions"].values() for p in parts)
    assert owned == [0, 1, 2, 3]


@pytest.mark.consumer_protocol
def test_consumer_protocol_reads_everything_once_and_commits_with_member_epochs(
    kgroup_spark: Any, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """``kafka.group.protocol=consumer`` (KIP-848): the coordinator assigns the query's two members;
    every record is read once, the batches record member epochs, and the group's offsets reach the
    ends."""
    topic = kafka_cluster.new_topic("group-kip848")
    group = kafka_cluster.new_group("g-kip848")
    _produce(kafka_cluster, topic, 0, 400)
    frame = _group_stream(
        kgroup_spark,
        kafka_cluster,
        topic,
        group,
        fast={"kafka.max.poll.interval.ms": "60000"},
        groupMembers="2",
        maxOffsetsPerTrigger="100",
        **{"kafka.group.protocol": "consumer", "kafka.group.remote.assignor": "uniform"},
    )
    query = (
        frame.writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(str(tmp_path / "out"))
    )
    assert query.awaitTermination(180)
    _members_leave(kafka_cluster, group)  # the consumer protocol's leave heartbeat
    rows = kgroup_spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (i % TOPIC_PARTITIONS, i // TOPIC_PARTITIONS) for i in range(400)
    )
    deadline = time.monotonic() + 30
    while (
        _committed(kafka_cluster, topic, group) != _ends(kafka_cluster, topic) and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert _committed(kafka_cluster, topic, group) == _ends(kafka_cluster, topic) == [100] * 4
    ends = [json.loads(p.sources[0].endOffset) for p in query.recentProgress if p.numInputRows]
    owners = ends[-1]["kgroupGroup"]["members"]
    # the uniform assignor splits the four partitions two and two; a member's epoch is at least the
    # group's first epoch (2: a new consumer group starts at 1 and its first member bumps it)
    assert len(owners) == 2 and all(o["generation"] >= 2 for o in owners)
    split = sorted(len(parts) for o in owners for parts in o["partitions"].values())
    assert split == [2, 2]


def test_a_consumer_joining_mid_stream_takes_partitions_and_nothing_is_read_twice(
    kgroup_spark: Any, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    """A plain confluent-kafka consumer joins the Spark job's group mid-stream: the group rebalances
    between two batches, the job's later batches read only the partitions its members still own,
    and the job plus the consumer read every record exactly once."""
    from confluent_kafka import Consumer

    topic = kafka_cluster.new_topic("group-join")
    group = kafka_cluster.new_group("g-join")
    _produce(kafka_cluster, topic, 0, 200)
    frame = _group_stream(kgroup_spark, kafka_cluster, topic, group, maxOffsetsPerTrigger="1000")
    query = (
        frame.writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="1 second")
        .start(str(tmp_path / "out"))
    )
    plain_read: list[tuple[int, int]] = []
    stop = threading.Event()
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": group,
            "partition.assignment.strategy": "range",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )

    assigned: list[int] = []

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        assigned.extend(tp.partition for tp in partitions)

    def consume() -> None:
        # every call on the consumer stays on this thread: confluent-kafka's Consumer must not be
        # used from two threads at once (assignment() beside poll() blocked the caller here)
        consumer.subscribe([topic], on_assign=on_assign)
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                plain_read.append((message.partition(), message.offset()))
                consumer.commit(message, asynchronous=False)

    worker = threading.Thread(target=consume, name="plain-consumer", daemon=True)
    try:
        deadline = time.monotonic() + 120
        while sum(p.numInputRows for p in query.recentProgress) < 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(p.numInputRows for p in query.recentProgress) == 200
        worker.start()
        deadline = time.monotonic() + 60
        while not assigned and time.monotonic() < deadline:
            time.sleep(0.2)
        taken = sorted(assigned)
        assert taken, "the plain consumer never got partitions"
        _produce(kafka_cluster, topic, 200, 200)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            spark_rows = sum(p.numInputRows for p in query.recentProgress)
            if spark_rows + len(plain_read) >= 400:
                break
            time.sleep(0.3)
    finally:
        stop.set()
        if worker.is_alive():
            worker.join(30)
        query.stop()
        consumer.close()
    rows = kgroup_spark.read.parquet(str(tmp_path / "out")).collect()
    spark_read = [(r.partition, r.offset) for r in rows]
    everything = sorted(spark_read + plain_read)
    assert everything == sorted((i % TOPIC_PARTITIONS, i // TOPIC_PARTITIONS) for i in range(400))
    # after the rebalance the job read only its own partitions
    late = [(r.partition, r.offset) for r in rows if r.offset >= 50]
    assert late and all(p not in taken for p, _ in late)


@pytest.mark.consumer_protocol
def test_consumer_protocol_options_are_checked_as_kafka_checks_them() -> None:
    """Kafka's ConsumerConfig refuses the classic-only configs with group.protocol=consumer and the
    remote assignor with classic; kgroup says which option, before Spark starts anything."""
    from kgroup.spark.source.group_options import parse_group_settings

    settings = parse_group_settings(
        {"group.id": "g", "group.protocol": "CONSUMER", "group.remote.assignor": "range"}, None
    )
    assert (settings.group_protocol, settings.remote_assignor) == ("consumer", "range")
    for name in ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"):
        message = f"kafka.{name}: not supported with kafka.group.protocol=consumer"
        with pytest.raises(KgroupError, match="^" + re.escape(message)):
            parse_group_settings({"group.id": "g", "group.protocol": "consumer", name: "range"}, None)
    message = "kafka.group.remote.assignor: only with kafka.group.protocol=consumer"
    with pytest.raises(KgroupError, match="^" + re.escape(message)):
        parse_group_settings({"group.id": "g", "group.remote.assignor": "uniform"}, None)
    with pytest.raises(KgroupError, match="^" + re.escape("kafka.group.protocol: 'streams'; give")):
        parse_group_settings({"group.id": "g", "group.protocol": "streams"}, None)


def test_group_mode_bad_input(kgroup_spark: Any, kgroup_cluster: KafkaCluster) -> None:
    base = {"kafka.bootstrap.servers": kgroup_cluster.bootstrap, "subscribe": "t", "consume": "group"}
    cases = [
        ({}, "kafka.group.id: consume=group needs"),
        ({"kafka.group.id": "g", "groupMembers": "0"}, "groupMembers: 0"),
        ({"kafka.group.id": "g", "kafka.partition.assignment.strategy": "bogus"}, "is not an assignor"),
        ({"kafka.group.id": "g", "kafka.heartbeat.interval.ms": "60000"}, "kafka.heartbeat.interval.ms"),
    ]
    for extra, message in cases:
        with pytest.raises(Exception, match=message):
            reader = kgroup_spark.readStream.format("kgroup")
            for k, v in {**base, **extra}.items():
                reader = reader.option(k, v)
            reader.load()
    from kgroup.spark.source.options import ReadKind, parse_source_options

    with pytest.raises(KgroupError, match="consume: group is for streaming reads"):
        parse_source_options({**base, "kafka.group.id": "g"}, ReadKind.BATCH)
    with pytest.raises(KgroupError, match="assign: consume=group"):
        parse_source_options(
            {
                "kafka.bootstrap.servers": "h:1",
                "assign": '{"t":[0]}',
                "consume": "group",
                "kafka.group.id": "g",
            },
            ReadKind.STREAM,
        )
    parsed = parse_source_options(
        {
            **base,
            "kafka.group.id": "g",
            "kafka.partition.assignment.strategy": COOPERATIVE_STICKY_CLASS,
            "groupMembers": "3",
        },
        ReadKind.STREAM,
    )
    assert parsed.group is not None and parsed.group.assignors == ("cooperative-sticky",)
    assert parsed.group.members == 3
    assert "group.id" not in dict(parsed.client_config)  # the fetchers never join the group
