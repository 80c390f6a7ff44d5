"""The ``kgroup`` data source reading Kafka on real local Spark: batch and streaming reads return
exactly the produced records; maxOffsetsPerTrigger bounds each micro-batch; Trigger.AvailableNow
ends; a query stopped and restarted from its checkpoint neither loses nor repeats a record."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

TOPIC_PARTITIONS = 4  # the test broker's topics (tests/spark/conftest.py)
KafkaCluster = Any

Record = tuple[int, int, bytes | None, bytes, tuple[tuple[str, bytes], ...]]


def _produce(cluster: KafkaCluster, topic: str, count: int, start: int = 0) -> list[tuple[Any, ...]]:
    """``count`` records, round the partitions, every 7th without a key, every 3rd with headers."""
    records = []
    for i in range(start, start + count):
        key = None if i % 7 == 0 else f"key-{i}".encode()
        headers = [("n", str(i).encode()), ("h", b"x")] if i % 3 == 0 else []
        records.append((key, f"value-{i}".encode(), i % TOPIC_PARTITIONS, headers))
    cluster.produce(topic, records)
    return records


def _expected(records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """(partition, key, value, headers) of produced records, sorted."""
    return sorted(((p, k, v, tuple(h)) for k, v, p, h in records), key=repr)


def _rows(rows: list[Any], with_offsets: bool = False) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        headers = tuple((h["key"], bytes(h["value"])) for h in r["headers"]) if r["headers"] else ()
        key = bytes(r["key"]) if r["key"] is not None else None
        item = (r["partition"], key, bytes(r["value"]), headers)
        out.append((*item, r["offset"]) if with_offsets else item)
    return sorted(out, key=repr)


def _reader(spark: Any, cluster: KafkaCluster, stream: bool = False) -> Any:
    source = spark.readStream if stream else spark.read
    return source.format("kgroup").option("kafka.bootstrap.servers", cluster.bootstrap)


def test_batch_read_returns_exactly_the_produced_records(
    kgroup_spark: Any, kafka_cluster: KafkaCluster
) -> None:
    topic = kafka_cluster.new_topic("batch")
    records = _produce(kafka_cluster, topic, 2_000)
    df = (
        _reader(kgroup_spark, kafka_cluster)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    rows = df.collect()
    assert sorted(_rows(rows), key=repr) == sorted(_expected(records), key=repr)
    # offsets 0..499 in every partition, each once; CreateTime stamps
    for p in range(TOPIC_PARTITIONS):
        assert sorted(r["offset"] for r in rows if r["partition"] == p) == list(range(500))
    assert {r["topic"] for r in rows} == {topic}
    assert {r["timestampType"] for r in rows} == {0}
    # minPartitions cuts the four ranges into more tasks, same records
    split = (
        _reader(kgroup_spark, kafka_cluster).option("subscribe", topic).option("minPartitions", "10").load()
    )
    assert split.rdd.getNumPartitions() == 12  # round(500 / 2000 * 10) = 3 pieces per partition
    assert sorted((r["partition"], r["offset"]) for r in split.collect()) == sorted(
        (r["partition"], r["offset"]) for r in rows
    )


def test_batch_read_by_assign_and_json_offsets(kgroup_spark: Any, kafka_cluster: KafkaCluster) -> None:
    topic = kafka_cluster.new_topic("assign")
    _produce(kafka_cluster, topic, 400)  # 100 per partition
    df = (
        _reader(kgroup_spark, kafka_cluster)
        .option("assign", f'{{"{topic}":[1,2]}}')
        .option("startingOffsets", f'{{"{topic}":{{"1":10,"2":-2}}}}')
        .option("endingOffsets", f'{{"{topic}":{{"1":20,"2":-1}}}}')
        .load()
    )
    got = sorted((r["partition"], r["offset"]) for r in df.collect())
    assert got == [(1, o) for o in range(10, 20)] + [(2, o) for o in range(100)]
    # subscribePattern reads the topics whose whole name matches
    pattern = _reader(kgroup_spark, kafka_cluster).option("subscribePattern", f"{topic}|no-such").load()
    assert pattern.count() == 400


def test_a_batch_read_with_nothing_to_read_is_empty(kgroup_spark: Any, kafka_cluster: KafkaCluster) -> None:
    """An empty topic, and ranges that are all empty, read as no rows with the source's columns:
    PySpark then runs one task with its placeholder partition, which reads nothing."""
    empty = kafka_cluster.new_topic("empty")
    df = _reader(kgroup_spark, kafka_cluster).option("subscribe", empty).load()
    assert df.collect() == []
    assert df.count() == 0
    full = kafka_cluster.new_topic("full")
    _produce(kafka_cluster, full, 8)  # 2 per partition: every range starts at its end
    at_the_end = json.dumps({full: {str(p): 2 for p in range(TOPIC_PARTITIONS)}})
    none_left = (
        _reader(kgroup_spark, kafka_cluster)
        .option("subscribe", full)
        .option("startingOffsets", at_the_end)
        .load()
    )
    assert none_left.count() == 0
    assert none_left.columns == df.columns


def _progress_rows(query: Any) -> list[int]:
    return [int(p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]


def _file_records(path: Path, spark: Any) -> list[tuple[Any, ...]]:
    return _rows(spark.read.parquet(str(path)).collect(), with_offsets=True)


def test_stream_available_now_bounded_by_max_offsets_per_trigger(
    kgroup_spark: Any, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = kafka_cluster.new_topic("stream")
    records = _produce(kafka_cluster, topic, 1_000)
    stream = (
        _reader(kgroup_spark, kafka_cluster, stream=True)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .option("maxOffsetsPerTrigger", "300")
        .load()
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240)
    assert query.exception() is None
    sizes = _progress_rows(query)
    assert sizes == [300, 300, 300, 100]  # 75 per partition a batch (floor of 300 * 250 / 1000)
    out = _file_records(tmp_path / "out", kgroup_spark)
    assert [r[:4] for r in sorted(out, key=repr)] == sorted(_expected(records), key=repr)


def test_stream_restarted_from_checkpoint_neither_loses_nor_repeats(
    kgroup_spark: Any, kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = kafka_cluster.new_topic("restart")
    records = _produce(kafka_cluster, topic, 800)

    def start(trigger: dict[str, Any]) -> Any:
        stream = (
            _reader(kgroup_spark, kafka_cluster, stream=True)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100")
            .load()
            .drop("timestamp")
        )
        return (
            stream.writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(**trigger)
            .start()
        )

    first = start({"processingTime": "100 milliseconds"})
    deadline = time.monotonic() + 180
    while sum(_progress_rows(first)) < 300 and time.monotonic() < deadline:
        time.sleep(0.2)
    first.stop()
    assert first.exception() is None
    read_before = sum(_progress_rows(first))
    assert 300 <= read_before < 800
    records += _produce(kafka_cluster, topic, 400, start=800)  # more records while it is stopped
    second = start({"availableNow": True})
    assert second.awaitTermination(240)
    assert second.exception() is None
    assert sum(_progress_rows(second)) == 1_200 - read_before
    rows = kgroup_spark.read.parquet(str(tmp_path / "out")).collect()
    got = sorted((r["partition"], r["offset"]) for r in rows)
    assert len(got) == len(set(got)) == 1_200  # nothing repeated, nothing lost
    assert got == sorted((p, o) for p in range(TOPIC_PARTITIONS) for o in range(300))
    values = sorted(bytes(r["value"]) for r in rows)
    assert values == sorted(v for _k, v, _p, _h in records)
