"""The sink's bulk write path against real brokers (kgroup's and Apache Kafka): the producer on
Kafka's wire, and the sink's two paths in Spark.

* :class:`BulkProducer` (no Spark): every record lands once, in order, on its partition, read back by
  confluent-kafka; with its connections cut while requests are in flight, the batches sent again are
  written once (the idempotent producer's sequences); a record larger than the broker takes, an
  unreachable broker and a missing topic each fail with one line;
* in Spark: the librdkafka path (taken for ``kafka.compression.type``) writes what the bulk path
  writes, on the same partitions; a record the broker refuses fails the write with one line.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from kgroup.broker import dispatch
from kgroup.model import KgroupError
from kgroup.partitioning import partition_for_key
from kgroup.spark.source.bulk_producer import BulkProducer, ProducerSettings, SentBatch
from kgroup.spark.source.record_batches import encode_records, group_rows, seal_batch
from kgroup.wire.api_keys import ApiKey

TOPIC_PARTITIONS = 4  # the test brokers' topics (tests/spark/conftest.py)


def _consume_all(bootstrap: str, topic: str) -> dict[int, list[Any]]:
    """Every record of the topic, per partition in offset order, read by confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bulk-write-check",
            "log_level": 3,
            "enable.auto.commit": False,
        }
    )
    try:
        out: dict[int, list[Any]] = {}
        ends = {}
        for p in range(TOPIC_PARTITIONS):
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[p] = high
            out[p] = []
        consumer.assign([TopicPartition(topic, p, 0) for p in range(TOPIC_PARTITIONS) if ends[p]])
        while any(len(out[p]) < ends[p] for p in out):
            for message in consumer.consume(1_000, timeout=5):
                assert message.error() is None, message.error()
                out[message.partition()].append(message)
        return out
    finally:
        consumer.close()


def _send(producer: BulkProducer, topic: str, keys: list[bytes], values: list[bytes]) -> None:
    """One Arrow batch's worth, as the sink sends it: keyed partitions, one batch per partition."""
    key_array = pa.array(keys, pa.binary())
    partitions = np.array([partition_for_key(k, TOPIC_PARTITIONS) for k in keys], np.int64)
    order, bounds, groups = group_rows(partitions)
    encoded = encode_records(key_array, pa.array(values, pa.binary()), None, order, bounds, 4_096)
    sent = []
    for batch in encoded.batches:
        partition = int(groups[batch.group])
        sequence = producer.next_sequence(topic, partition, batch.records)
        data = seal_batch(
            encoded,
            batch,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=sequence,
            timestamp_ms=1_700_000_000_000,
        )
        sent.append(SentBatch(topic, partition, data, batch.records, sequence))
    producer.send(sent)


def _expected(keys: list[bytes], values: list[bytes]) -> dict[int, list[tuple[bytes, bytes]]]:
    out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(TOPIC_PARTITIONS)}
    for key, value in zip(keys, values, strict=True):
        out[partition_for_key(key, TOPIC_PARTITIONS)].append((key, value))
    return out


def test_every_record_lands_once_in_order_on_its_partition(kafka_cluster: Any) -> None:
    topic = kafka_cluster.new_topic("bulk-write")
    producer = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 60)
    assert producer.partition_count(topic) == TOPIC_PARTITIONS
    keys = [f"user-{i % 97}".encode() for i in range(5_000)]
    values = [f"value-{i}".encode() * (1 + i % 7) for i in range(5_000)]
    for start in range(0, 5_000, 1_000):  # several requests per partition: batches of at most 4 KiB
        _send(producer, topic, keys[start : start + 1_000], values[start : start + 1_000])
    producer.flush()
    producer.close()
    assert producer.producer_id >= 0  # idempotent, as a Java producer by default
    assert sum(producer.acknowledged.values()) == 5_000
    got = _consume_all(kafka_cluster.bootstrap, topic)
    assert {p: [(m.key(), m.value()) for m in ms] for p, ms in got.items()} == _expected(keys, values)
    assert {m.timestamp() for ms in got.values() for m in ms} == {(1, 1_700_000_000_000)}  # CreateTime


def test_the_producer_speaks_the_newest_versions_both_sides_support(
    kafka_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ApiVersions decides, as in Kafka's clients: against Kafka 4.4.0 (and kgroup, which serves what it
    serves) Produce v13 by topic id, Metadata v13, InitProducerId v5; against a broker whose ranges
    stop lower (kgroup's, capped in this process) the versions it has, Produce by name."""
    topic = kafka_cluster.new_topic("bulk-write-versions")
    keys = [f"user-{i}".encode() for i in range(200)]
    values = [b"v"] * 200
    producer = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 60)
    _send(producer, topic, keys, values)
    producer.flush()
    producer.close()
    newest = {ApiKey.PRODUCE: 13, ApiKey.METADATA: 13, ApiKey.INIT_PRODUCER_ID: 5}
    assert producer.versions_spoken == newest
    if kafka_cluster.kind != "kgroup":
        return
    registry = dispatch._REGISTRY
    for api, top in ((ApiKey.PRODUCE, 9), (ApiKey.METADATA, 9), (ApiKey.INIT_PRODUCER_ID, 3)):
        monkeypatch.setitem(registry, api, dataclasses.replace(registry[api], max_version=top))
    older = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 60)
    _send(older, topic, keys, values)
    older.flush()
    older.close()
    assert older.versions_spoken == {ApiKey.PRODUCE: 9, ApiKey.METADATA: 9, ApiKey.INIT_PRODUCER_ID: 3}
    got = _consume_all(kafka_cluster.bootstrap, topic)
    assert sum(len(ms) for ms in got.values()) == 400


def test_batches_sent_again_after_a_lost_connection_are_written_once(kafka_cluster: Any) -> None:
    topic = kafka_cluster.new_topic("bulk-write-retry")
    producer = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 60)
    keys = [f"user-{i % 31}".encode() for i in range(3_000)]
    values = [f"value-{i}".encode() for i in range(3_000)]
    cuts = 0
    for start in range(0, 3_000, 300):
        _send(producer, topic, keys[start : start + 300], values[start : start + 300])
        for connection in list(producer._connections.values()):
            if connection.waiting:  # requests the broker has (most likely) written, their answers unread
                connection.link._sock.shutdown(socket.SHUT_RDWR)
                cuts += 1
    producer.flush()
    producer.close()
    assert cuts >= 5
    got = _consume_all(kafka_cluster.bootstrap, topic)
    assert {p: [(m.key(), m.value()) for m in ms] for p, ms in got.items()} == _expected(keys, values)


def test_a_record_larger_than_the_broker_takes_fails_in_one_line(kafka_cluster: Any) -> None:
    topic = kafka_cluster.new_topic("bulk-write-large")
    producer = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 60)
    with pytest.raises(KgroupError) as caught:
        _send(producer, topic, [b"big"], [b"x" * 2_000_000])  # Kafka's message.max.bytes: 1 MiB
        producer.flush()
    producer.close()
    partition = partition_for_key(b"big", TOPIC_PARTITIONS)
    assert str(caught.value).startswith(
        f"kafka.bootstrap.servers: 1 records to {topic}-{partition} were not delivered (MESSAGE_TOO_LARGE"
    )
    assert str(caught.value).endswith("; a record is larger than the topic's max.message.bytes")
    assert "\n" not in str(caught.value)


def test_no_broker_and_no_topic_fail_in_one_line(kafka_cluster: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"  # a port nothing listens on
    with pytest.raises(KgroupError, match=rf"^kafka\.bootstrap\.servers: no broker answered at {closed} "):
        BulkProducer(closed, ProducerSettings(), 5).partition_count("t")
    producer = BulkProducer(kafka_cluster.bootstrap, ProducerSettings(), 30)
    if kafka_cluster.kind == "kgroup":  # auto.create.topics.enable=false: one line, no waiting
        with pytest.raises(
            KgroupError,
            match=rf"^topic: 'no-such-topic' does not exist on the cluster at {kafka_cluster.bootstrap}, "
            r"which does not create topics on first use \(auto.create.topics.enable=false\); create it",
        ):
            producer.partition_count("no-such-topic")
    else:  # the shared Apache Kafka creates topics on first use (num.partitions=1), as for Java's producer
        assert producer.partition_count(f"created-on-first-use-{os.getpid()}") == 1
    producer.close()


@pytest.mark.spark
def test_the_librdkafka_path_writes_what_the_bulk_path_writes(kgroup_spark: Any, kafka_cluster: Any) -> None:
    from pyspark.sql import functions as F

    ids = kgroup_spark.range(0, 2_000, 1, 2)
    df = ids.select(
        F.when(F.col("id") % 5 == 0, F.lit(None)).otherwise(F.concat(F.lit("k"), F.col("id"))).alias("key"),
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("value"),
        F.when(
            F.col("id") % 3 == 0,
            F.array(
                F.struct(F.lit("id").alias("key"), F.col("id").cast("string").cast("binary").alias("value"))
            ),
        ).alias("headers"),
    )
    written = {}
    for path, options in (("bulk", {}), ("librdkafka", {"kafka.compression.type": "gzip"})):
        topic = kafka_cluster.new_topic(f"sink-{path}")
        writer = df.write.format("kgroup").option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
        for name, value in options.items():
            writer = writer.option(name, value)
        writer.option("topic", topic).option("nullKeySeed", "3").mode("append").save()
        rows = (
            kgroup_spark.read.format("kgroup")
            .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .load()
            .collect()
        )
        written[path] = sorted(
            (
                bytes(r["value"]),  # unique: what the rows are sorted by
                r["key"] and bytes(r["key"]),
                r["partition"],
                [(h["key"], bytes(h["value"])) for h in r["headers"] or []],
            )
            for r in rows
        )
    assert len(written["bulk"]) == 2_000
    assert written["bulk"] == written["librdkafka"]


@pytest.mark.spark
def test_a_record_the_broker_refuses_fails_the_write_in_one_line(
    kgroup_spark: Any, kafka_cluster: Any
) -> None:
    from pyspark.sql import functions as F

    topic = kafka_cluster.new_topic("sink-refused")
    df = kgroup_spark.range(0, 1, 1, 1).select(
        F.lit("k").alias("key"), F.repeat(F.lit("x"), 2_000_000).alias("value")
    )
    with pytest.raises(Exception) as caught:
        (
            df.write.format("kgroup")
            .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
            .option("topic", topic)
            .mode("append")
            .save()
        )
    partition = partition_for_key("k", TOPIC_PARTITIONS)
    assert (
        f"KgroupError: kafka.bootstrap.servers: 1 records to {topic}-{partition} were not delivered "
        "(MESSAGE_TOO_LARGE"
    ) in str(caught.value)


@pytest.mark.spark
def test_a_topic_column_over_many_arrow_batches(kgroup_spark: Any, kafka_cluster: Any) -> None:
    """Rows naming two topics, in Arrow batches of 50 rows (each batch's topics numbered anew): every
    record on its topic and keyed partition, each partition's records in the task's row order."""
    from pyspark.sql import functions as F

    topics = [kafka_cluster.new_topic("sink-many-a"), kafka_cluster.new_topic("sink-many-b")]
    df = kgroup_spark.range(0, 1_000, 1, 1).select(
        F.when(F.col("id") % 3 == 0, F.lit(topics[1])).otherwise(F.lit(topics[0])).alias("topic"),
        F.concat(F.lit("k"), (F.col("id") % 17).cast("string")).alias("key"),
        F.col("id").cast("string").alias("value"),
    )
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = kgroup_spark.conf.get(key)
    kgroup_spark.conf.set(key, "50")
    try:
        writer = df.write.format("kgroup").option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
        writer.mode("append").save()
    finally:
        kgroup_spark.conf.set(key, before)
    for index, topic in enumerate(topics):
        got = _consume_all(kafka_cluster.bootstrap, topic)
        expected: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(TOPIC_PARTITIONS)}
        for i in range(1_000):
            if (i % 3 == 0) == (index == 1):
                k = f"k{i % 17}".encode()
                expected[partition_for_key(k, TOPIC_PARTITIONS)].append((k, str(i).encode()))
        assert {p: [(m.key(), m.value()) for m in ms] for p, ms in got.items()} == expected
