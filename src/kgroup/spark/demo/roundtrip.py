"""Records through Kafka and back on Spark: produce a DataFrame with the sink, read it back with a
streaming query, and check that every record was read exactly once (the demo's pipeline stage).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ReadBack", "log_end_offsets", "produce_events", "read_back_and_check", "read_back_in_group"]


def produce_events(
    spark: Any, events: Any, key_column: str, bootstrap: str, topic: str, strategy: str, seed: int
) -> float:
    """Write ``events`` (key: ``key_column``, value: the other columns as JSON) to ``topic`` through
    the ``kgroup`` sink; returns the seconds it took."""
    from pyspark.sql import functions as F

    from kgroup.spark.source.datasource import register

    register(spark)
    others = [c for c in events.columns if c != key_column]
    rows = events.select(F.col(key_column).alias("key"), F.to_json(F.struct(*others)).alias("value"))
    started = time.perf_counter()
    (
        rows.write.format("kgroup")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("nullKeyStrategy", strategy)
        .option("nullKeySeed", str(seed))
        .mode("append")
        .save()
    )
    return time.perf_counter() - started


def log_end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """Each partition's log end offset (its record count for a topic that was only appended to)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kgroup-watermarks"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)
        ]
    finally:
        consumer.close()


def _input_rows(progress: Any) -> int:
    value = getattr(progress, "numInputRows", None)
    if value is None and isinstance(progress, dict):
        value = progress.get("numInputRows")
    return int(value or 0)


@dataclass(frozen=True)
class ReadBack:
    """What the read-backs read and check against: ``events`` (keys in ``key_column``) as produced to
    ``topic`` (``partitions`` partitions) on the broker at ``bootstrap``."""

    spark: Any
    events: Any
    key_column: str
    bootstrap: str
    topic: str
    partitions: int

    def checks(self, read: Any) -> dict[str, int]:
        return _checks(read, self.events, self.key_column, self.partitions)


def read_back_and_check(
    source: ReadBack, folder: Path, per_batch: int, extra_options: dict[str, str]
) -> dict[str, Any]:
    """Read the topic from the earliest offsets with a ``Trigger.AvailableNow`` streaming query into a
    Parquet file sink under ``folder``, then compare with the events: per-key counts (null key
    included), (partition, offset) pairs read twice, keyed records off murmur2's partition."""

    from kgroup.spark.source.datasource import register

    spark = source.spark
    register(spark)
    reader = _earliest_stream(spark, source.bootstrap, source.topic, per_batch)
    for name, value in extra_options.items():
        reader = reader.option(name, value)
    started = time.perf_counter()
    query = _into_parquet(reader.load(), folder, availableNow=True)
    query.awaitTermination()
    seconds = time.perf_counter() - started
    batches = sum(1 for p in query.recentProgress if _input_rows(p) > 0)
    read = spark.read.parquet(str(folder / "records"))
    return {
        "mode": extra_options.get("consume", "partition"),
        "batches": batches,
        "seconds": seconds,
        **source.checks(read),
        "extra": (("first_batch_seconds", _first_batch_seconds(query)),),
    }


def _earliest_stream(spark: Any, bootstrap: str, topic: str, per_batch: int) -> Any:
    """A ``kgroup`` streaming read of ``topic`` from its earliest offsets, at most ``per_batch`` records
    a micro-batch (a ``DataStreamReader``: more options may follow before ``load``)."""
    return (
        spark.readStream.format("kgroup")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_batch))
    )


def _into_parquet(stream: Any, folder: Path, **trigger: Any) -> Any:
    """Start streaming ``stream``'s records (key as a string, partition, offset) into Parquet files
    under ``folder / "records"`` (checkpoint in ``folder / "checkpoint"``), with Spark's ``trigger``;
    the started query."""
    from pyspark.sql import functions as F

    return (
        stream.select(F.col("key").cast("string").alias("key"), "partition", "offset")
        .writeStream.format("parquet")
        .option("checkpointLocation", str(folder / "checkpoint"))
        .trigger(**trigger)
        .start(str(folder / "records"))
    )


def _first_batch_seconds(query: Any) -> float | None:
    """How long the query's first micro-batch with records took (``triggerExecution``): in a
    session's first streaming query it includes Spark's warm-up (its Python workers, the plan's
    code generation, the sink's first files)."""
    for progress in query.recentProgress:
        if _input_rows(progress) > 0:
            durations = getattr(progress, "durationMs", None)
            if durations is None and isinstance(progress, dict):
                durations = progress.get("durationMs")
            value = dict(durations or {}).get("triggerExecution")
            return None if value is None else round(float(value) / 1000, 3)
    return None


def _checks(read: Any, events: Any, key_column: str, partitions: int) -> dict[str, int]:
    """What was read (key, partition, offset) against the generated ``events``: records, keys whose
    count differs (the null key included), (partition, offset) pairs read twice, and keyed records
    off murmur2's partition."""
    from pyspark.sql import functions as F

    from kgroup.spark.partitioning.partition_column import with_kafka_partition

    expected = events.groupBy(key_column).count().withColumnRenamed(key_column, "key")
    got = read.groupBy("key").count().withColumnRenamed("count", "read")
    joined = expected.join(got, expected["key"].eqNullSafe(got["key"]), "full_outer")
    keyed = read.where(F.col("key").isNotNull())
    placed = with_kafka_partition(keyed, "key", partitions, null_key_strategy=None, output_column="murmur2")
    return {
        "records": read.count(),
        "key_count_mismatches": joined.where(~F.col("count").eqNullSafe(F.col("read"))).count(),
        "duplicate_offsets": read.groupBy("partition", "offset").count().where("count > 1").count(),
        "misplaced_keyed": placed.where(F.col("murmur2") != F.col("partition")).count(),
    }


def read_back_in_group(
    source: ReadBack, folder: Path, per_batch: int, group_id: str, members: int, timeout_s: float = 600.0
) -> dict[str, Any]:
    """Read the topic per consumer group: a ``consume=group`` streaming query with ``members`` members,
    joined mid-stream by one plain confluent-kafka consumer of the same group (a real rebalance), until
    the two together have read every record; then check the union exactly as
    :func:`read_back_and_check` checks one read (per-key counts, offsets read twice, murmur2)."""
    import threading

    from confluent_kafka import Consumer

    from kgroup.spark.source.datasource import register

    spark, bootstrap, topic = source.spark, source.bootstrap, source.topic
    register(spark)
    total = source.events.count()
    started = time.perf_counter()
    query = _into_parquet(
        _earliest_stream(spark, bootstrap, topic, per_batch)
        .option("consume", "group")
        .option("kafka.group.id", group_id)
        .option("groupMembers", str(members))
        .option("kafka.partition.assignment.strategy", "range")
        .option("kafka.session.timeout.ms", "10000")
        .option("kafka.heartbeat.interval.ms", "1000")
        .load(),
        folder,
        processingTime="500 milliseconds",
    )
    plain: list[tuple[str | None, int, int]] = []
    stop = threading.Event()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": "plain-confluent-kafka",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            "enable.auto.commit": True,  # commits what poll() returned: exactly what it read
            "log_level": 3,
        }
    )

    def consume() -> None:
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                key = message.key()
                plain.append(
                    (
                        None if key is None else key.decode(),
                        int(message.partition() or 0),
                        int(message.offset() or 0),
                    )
                )

    def spark_rows() -> int:
        return sum(int(getattr(p, "numInputRows", 0) or 0) for p in query.recentProgress)

    worker = threading.Thread(target=consume, name="plain-consumer", daemon=True)
    deadline = time.monotonic() + timeout_s
    try:
        # the plain consumer joins once the job has read a couple of batches: mid-stream
        while spark_rows() < min(total, 2 * per_batch) and time.monotonic() < deadline:
            time.sleep(0.2)
        consumer.subscribe([topic])
        worker.start()
        while spark_rows() + len(plain) < total and time.monotonic() < deadline:
            time.sleep(0.3)
    finally:
        stop.set()
        if worker.is_alive():
            worker.join(10)
        consumer.close()  # commits what it read and leaves the group
        query.stop()
    seconds = time.perf_counter() - started
    batches = sum(1 for p in query.recentProgress if _input_rows(p) > 0)
    job = spark.read.parquet(str(folder / "records"))
    mine = spark.createDataFrame(plain, "key string, partition int, offset long") if plain else None
    read = job if mine is None else job.unionByName(mine)
    taken = sorted({p for _, p, _ in plain})
    return {
        "mode": "group",
        "batches": batches,
        "seconds": seconds,
        **source.checks(read),
        "extra": (
            ("first_batch_seconds", _first_batch_seconds(query)),
            ("group_id", group_id),
            ("spark_members", members),
            ("records_read_by_spark", job.count()),
            ("records_read_by_the_plain_consumer", len(plain)),
            ("partitions_the_plain_consumer_took", taken),
        ),
    }
