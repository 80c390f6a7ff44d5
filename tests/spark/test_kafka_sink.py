"""The ``kgroup`` sink on real local Spark: every record lands where a Java producer puts it —
keyed records on ``partition_for_key``, explicit partitions kept, keyless records by the chosen
null-key strategy — with its key, value and headers; writeStream copies a topic exactly."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kgroup.partitioning import null_key_chooser, partition_for_key
from kgroup.spark.null_keys import task_seed

pytestmark = pytest.mark.spark

TOPIC_PARTITIONS = 4  # the test broker's topics (tests/spark/conftest.py)


def _read_topic(spark: Any, bootstrap: str, topic: str) -> list[Any]:
    return (
        spark.read.format("kgroup")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .collect()
    )


def test_batch_write_partitions_like_a_java_producer(kgroup_spark: Any, kafka_cluster: Any) -> None:
    from pyspark.sql import functions as F

    topic = kafka_cluster.new_topic("sink")
    ids = kgroup_spark.range(0, 3_000, 1, 1)  # one task: its keyless records follow one producer
    df = ids.select(
        F.when(F.col("id") % 5 == 0, F.lit(None))
        .otherwise(F.concat(F.lit("user-"), F.col("id")))
        .alias("key"),
        F.concat(F.lit("v"), F.lpad(F.col("id").cast("string"), 6, "0")).alias("value"),
        F.when(F.col("id") % 11 == 1, (F.col("id") % 4).cast("int")).alias("partition"),
        F.when(
            F.col("id") % 3 == 0,
            F.array(
                F.struct(F.lit("id").alias("key"), F.col("id").cast("string").cast("binary").alias("value"))
            ),
        ).alias("headers"),
    )
    (
        df.write.format("kgroup")
        .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
        .option("topic", topic)
        .option("nullKeyStrategy", "round-robin")
        .option("nullKeySeed", "5")
        .mode("append")
        .save()
    )
    rows = _read_topic(kgroup_spark, kafka_cluster.bootstrap, topic)
    assert len(rows) == 3_000
    by_id = {int(bytes(r["value"])[1:]): r for r in rows}
    assert sorted(by_id) == list(range(3_000))
    keyless: list[tuple[int, int]] = []
    for i, r in by_id.items():
        key = None if i % 5 == 0 else f"user-{i}"
        assert (bytes(r["key"]) if r["key"] is not None else None) == (key.encode() if key else None)
        headers = [(h["key"], bytes(h["value"])) for h in r["headers"] or []]
        assert headers == ([("id", str(i).encode())] if i % 3 == 0 else [])
        if i % 11 == 1:
            assert r["partition"] == i % 4
        elif key is not None:
            assert r["partition"] == partition_for_key(key, TOPIC_PARTITIONS)
        else:
            keyless.append((i, r["partition"]))
    # keyless records: the partitions one round-robin producer (task 0, seeded) gives, in order
    choose = null_key_chooser(
        "round-robin", TOPIC_PARTITIONS, rng=random.Random(task_seed(5, 0, TOPIC_PARTITIONS))
    )
    expected = [choose(7) for _ in keyless]  # every value is 7 bytes
    assert [p for _i, p in sorted(keyless)] == expected
    assert len(set(expected)) >= 2  # spread, not stuck on one partition


def test_write_stream_copies_a_topic(kgroup_spark: Any, kafka_cluster: Any, tmp_path: Path) -> None:
    source = kafka_cluster.new_topic("copy-from")
    target = kafka_cluster.new_topic("copy-to")
    kafka_cluster.produce(
        source, [(f"k{i}".encode(), f"v{i}".encode(), i % TOPIC_PARTITIONS, []) for i in range(600)]
    )
    stream = (
        kgroup_spark.readStream.format("kgroup")
        .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "250")
        .load()
        .select("key", "value")
    )
    query = (
        stream.writeStream.format("kgroup")
        .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240)
    assert query.exception() is None
    rows = _read_topic(kgroup_spark, kafka_cluster.bootstrap, target)
    got = sorted((bytes(r["key"]).decode(), bytes(r["value"]).decode(), r["partition"]) for r in rows)
    assert got == sorted((f"k{i}", f"v{i}", partition_for_key(f"k{i}", TOPIC_PARTITIONS)) for i in range(600))
