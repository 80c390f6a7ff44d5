"""The Java producer's keyed records land where kgroup says, on kgroup's broker and on Apache Kafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from apache_kafka.conftest import Target
from kgroup.partitioning import partition_for_key
from kgroup.testing.apache_kafka.java_client import JavaConsumer, JavaProducer, start_all

pytestmark = pytest.mark.slow


def test_keyed_records_land_on_partition_for_key(target: Target, names: str, tmp_path: Path) -> None:
    topic = f"{names}-keys"
    target.create_topic(topic, 7)
    keys = [f"key-{i}" for i in range(300)] + ["", "ключ", "🔑"]
    producer = JavaProducer(target.bootstrap_servers, name="producer", log_dir=tmp_path)
    consumer = JavaConsumer(
        target.bootstrap_servers, f"{names}-g", [topic], client_id="reader", name="reader", log_dir=tmp_path
    )
    start_all(producer, consumer)
    with producer, consumer:
        sent = producer.send_records(topic, [(key, f"value-{key}") for key in keys])
        assert {s.key: s.partition for s in sent} == {k: partition_for_key(k.encode(), 7) for k in keys}
        # one producer, in order: each partition's records got offsets 0, 1, 2 … in the order they were sent
        for partition in range(7):
            landed = [s for s in sent if s.partition == partition]
            assert [s.offset for s in landed] == list(range(len(landed)))
            assert [s.key for s in landed] == [
                k for k in keys if partition_for_key(k.encode(), 7) == partition
            ]
        # and a Java consumer reads each back from there
        records = consumer.wait_records(len(keys))
    assert sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records) == sorted(
        (s.partition, s.offset, s.key, f"value-{s.key}") for s in sent
    )
