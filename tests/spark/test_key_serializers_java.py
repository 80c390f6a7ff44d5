"""Integer key columns partition where Apache Kafka's Java producer puts the same keys:
``with_kafka_partition(..., key_serializer="long"/"integer"/"short")`` against a real
``KafkaProducer`` (the pinned Apache Kafka, ``LongSerializer``/``IntegerSerializer``/
``ShortSerializer``, its default partitioner) producing those keys to the run's Apache Kafka node."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from kgroup.spark.partitioning.partition_column import with_kafka_partition
from kgroup.testing.apache_kafka.java_client import JavaProducer

pytestmark = [pytest.mark.spark, pytest.mark.apache_kafka]

PARTITIONS = 12
#: key serializer → (Kafka's class, the Spark column type, the width in bits)
SERIALIZERS = {
    "long": ("LongSerializer", "bigint", 64),
    "integer": ("IntegerSerializer", "int", 32),
    "short": ("ShortSerializer", "smallint", 16),
}


def _keys(bits: int) -> list[int]:
    """Every edge of the width (either side of zero, the extremes, byte edges) and random values."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    edges = {0, 1, -1, low, high, low + 1, high - 1, 127, -128, 255, 256, -129}
    rng = random.Random(bits)
    return sorted(edges | {rng.randint(low, high) for _ in range(300)})


@pytest.mark.parametrize("serializer", list(SERIALIZERS))
def test_integer_keys_land_where_the_java_producer_puts_them(
    spark: Any, apache_kafka: Any, serializer: str, tmp_path: Path
) -> None:
    java_class, column_type, bits = SERIALIZERS[serializer]
    keys = _keys(bits)
    topic = f"int-keys-{serializer}-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, PARTITIONS)
    config = {"key.serializer": f"org.apache.kafka.common.serialization.{java_class}"}
    with JavaProducer(
        apache_kafka.bootstrap_servers, config=config, name=f"{serializer}-keys", log_dir=tmp_path
    ) as producer:
        sent = producer.send_records(topic, [(str(key), "v") for key in keys])
    java = {int(record.key): record.partition for record in sent}
    assert sorted(java) == keys  # every key was acknowledged
    assert len(set(java.values())) == PARTITIONS  # the keys reach every partition: a real check

    df = spark.createDataFrame([(key,) for key in keys], f"k {column_type}")
    partitioned = with_kafka_partition(df, "k", PARTITIONS, key_serializer=serializer)
    assert {row["k"]: row["partition"] for row in partitioned.collect()} == java
