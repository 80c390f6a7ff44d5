"""Bad input to the ``kgroup`` data source on real local Spark: one clear error naming the option and
the fix, raised while the DataFrame is defined (``load()``) or while the read is planned — before
any Spark job starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

GROUP = "kgroup-bad-input"


def _fails_before_a_job(spark: Any, action: Callable[[], Any], message: str) -> str:
    """Run ``action`` in a job group; it must fail with ``message`` and no Spark job may have run."""
    context = spark.sparkContext
    context.setJobGroup(GROUP, "bad input")
    try:
        with pytest.raises(Exception) as caught:
            action()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    text = str(caught.value)
    assert message in text, text
    assert list(context.statusTracker().getJobIdsForGroup(GROUP)) == []
    return text


def _read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def test_contradicting_and_unknown_options_fail_at_load(kgroup_spark: Any, kgroup_cluster: Any) -> None:
    boot = kgroup_cluster.bootstrap
    _fails_before_a_job(
        kgroup_spark,
        lambda: _read(kgroup_spark, boot, subscribe="a", assign='{"a":[0]}').load(),
        "assign, subscribe: only one of the options assign, subscribe, subscribePattern may be set",
    )
    _fails_before_a_job(
        kgroup_spark,
        lambda: _read(kgroup_spark, boot, subscribe="a", startingOfsets="earliest").load(),
        "did you mean 'startingOffsets'?",
    )
    _fails_before_a_job(
        kgroup_spark,
        lambda: _read(kgroup_spark, boot, subscribe="a", consume="group").load(),
        "kafka.group.id: consume=group needs the consumer group's id; set kafka.group.id",
    )


def test_broker_and_offset_errors_fail_while_planning(kgroup_spark: Any, kafka_cluster: Any) -> None:
    topic = kafka_cluster.new_topic("bad")
    kafka_cluster.produce(topic, [(b"k", b"v", p, []) for p in range(4)])
    _fails_before_a_job(
        kgroup_spark,
        lambda: (
            _read(kgroup_spark, "127.0.0.1:1", subscribe=topic, **{"kafka.default.api.timeout.ms": "1500"})
            .load()
            .collect()
        ),
        "kafka.bootstrap.servers: no broker answered at 127.0.0.1:1 within 1.5 s",
    )
    text = _fails_before_a_job(
        kgroup_spark,
        lambda: (
            _read(kgroup_spark, kafka_cluster.bootstrap, subscribe=f"{topic},no-such-topic").load().collect()
        ),
        "subscribe: topic(s) ['no-such-topic'] not found",
    )
    assert "set failOnDataLoss to false" in text
    # without failOnDataLoss the topics that exist are read
    read = _read(
        kgroup_spark, kafka_cluster.bootstrap, subscribe=f"{topic},no-such-topic", failOnDataLoss="false"
    )
    assert read.load().count() == 4
    offsets = f'{{"{topic}":{{"0":0,"1":0,"2":0,"3":7}}}}'
    _fails_before_a_job(
        kgroup_spark,
        lambda: (
            _read(kgroup_spark, kafka_cluster.bootstrap, subscribe=topic, startingOffsets=offsets)
            .load()
            .collect()
        ),
        f"startingOffsets: offset 7 of {topic}-3 is out of range (the partition holds offsets 0 to 1)",
    )


def test_stream_and_sink_errors(kgroup_spark: Any, kgroup_cluster: Any, tmp_path: Path) -> None:
    boot = kgroup_cluster.bootstrap
    stream = kgroup_spark.readStream.format("kgroup").option("kafka.bootstrap.servers", boot)

    def start_stream() -> None:
        query = (
            stream.option("subscribe", "a")
            .option("endingOffsets", "latest")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .start()
        )
        try:
            query.awaitTermination(120)  # the query stops at its start, with the error
        finally:
            query.stop()

    _fails_before_a_job(kgroup_spark, start_stream, "endingOffsets: not valid in streaming queries")
    frame = kgroup_spark.createDataFrame([("k", "v")], "key string, body string")
    _fails_before_a_job(
        kgroup_spark,
        lambda: (
            frame.write.format("kgroup")
            .option("kafka.bootstrap.servers", boot)
            .option("topic", "t")
            .mode("append")
            .save()
        ),
        "value: the DataFrame has no value column; add one (string or binary)",
    )
    values = kgroup_spark.createDataFrame([("k", "v")], "key string, value string")
    _fails_before_a_job(
        kgroup_spark,
        lambda: values.write.format("kgroup").option("kafka.bootstrap.servers", boot).mode("append").save(),
        "topic: no topic option and no topic column",
    )
    _fails_before_a_job(
        kgroup_spark,
        lambda: (
            values.write.format("kgroup")
            .option("kafka.bootstrap.servers", boot)
            .option("topic", "t")
            .mode("overwrite")
            .save()
        ),
        "mode: overwrite is not allowed for Kafka",
    )
    _fails_before_a_job(
        kgroup_spark,
        lambda: (
            values.write.format("kgroup")
            .option("kafka.bootstrap.servers", boot)
            .option("topic", "t")
            .option("nullKeyStrategy", "random")
            .mode("append")
            .save()
        ),
        "nullKeyStrategy:",
    )


def test_sink_refuses_a_partition_the_topic_does_not_have(kgroup_spark: Any, kafka_cluster: Any) -> None:
    topic = kafka_cluster.new_topic("bad-partition")
    frame = kgroup_spark.createDataFrame([("k", "v", 9)], "key string, value string, partition int")
    with pytest.raises(Exception) as caught:
        (
            frame.write.format("kgroup")
            .option("kafka.bootstrap.servers", kafka_cluster.bootstrap)
            .option("topic", topic)
            .mode("append")
            .save()
        )
    assert f"partition: 9 is not a partition of topic '{topic}' (it has 4: 0 to 3)" in str(caught.value)
