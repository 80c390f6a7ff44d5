"""A Kafka-protocol broker for the data source tests, started by the tests themselves.

kgroup's own embedded broker (``kgroup.testing``) is used when this build has it; until then the
tests run against librdkafka's mock cluster — a real Kafka-protocol server on loopback TCP ports,
shipped inside confluent-kafka (``test.mock.num.brokers``), living as long as the client that
created it. The mock cluster creates a topic on first use with 4 partitions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

TOPIC_PARTITIONS = 4
_names = itertools.count()


@dataclass
class KafkaCluster:
    """A running broker: its bootstrap address and helpers to make topics and records."""

    bootstrap: str

    def new_topic(self, prefix: str) -> str:
        """A fresh topic of ``TOPIC_PARTITIONS`` partitions (its metadata is fetched, creating it)."""
        from confluent_kafka import Producer

        name = f"{prefix}-{next(_names)}"
        producer = Producer({"bootstrap.servers": self.bootstrap, "log_level": 3})
        metadata = producer.list_topics(topic=name, timeout=10)
        assert len(metadata.topics[name].partitions) == TOPIC_PARTITIONS
        return name

    def produce(
        self, topic: str, records: list[tuple[bytes | None, bytes, int, list[tuple[str, bytes]]]]
    ) -> None:
        """Produce (key, value, partition, headers) records and wait until all are acknowledged."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "log_level": 3, "linger.ms": 5})
        failures: list[Any] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failures.append(error)

        for key, value, partition, headers in records:
            while True:
                try:
                    producer.produce(
                        topic, value, key, partition, on_delivery=delivered, headers=headers or None
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(30) == 0
        assert failures == []


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster]:
    from confluent_kafka.admin import AdminClient

    holder = AdminClient({"test.mock.num.brokers": 1, "log_level": 3})
    metadata = holder.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
    assert bootstrap.startswith("127.0.0.1:")
    yield KafkaCluster(bootstrap)
    del holder  # the mock cluster stops with the client that created it


@pytest.fixture(scope="session")
def kgroup_spark(spark: Any) -> Any:
    """The shared test session with the ``kgroup`` format registered."""
    from kgroup.spark import register

    register(spark)
    return spark
