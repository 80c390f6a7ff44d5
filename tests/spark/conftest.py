"""A Kafka broker for the data source tests, started by the tests themselves: kgroup's own embedded
broker (:class:`kgroup.testing.KafkaBroker`, in this process, on a loopback port), one for the whole
session; every test makes its own topics of 4 partitions."""

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
    broker: Any

    def new_topic(self, prefix: str) -> str:
        """A fresh topic of ``TOPIC_PARTITIONS`` partitions."""
        name = f"{prefix}-{next(_names)}"
        self.broker.create_topic(name, TOPIC_PARTITIONS)
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
    from kgroup.testing import KafkaBroker

    with KafkaBroker(num_partitions=TOPIC_PARTITIONS, auto_create_topics=False) as broker:
        assert broker.bootstrap_servers.startswith("127.0.0.1:")
        yield KafkaCluster(broker.bootstrap_servers, broker)


@pytest.fixture(scope="session")
def kgroup_spark(spark: Any) -> Any:
    """The shared test session with the ``kgroup`` format registered."""
    from kgroup.spark import register

    register(spark)
    return spark
