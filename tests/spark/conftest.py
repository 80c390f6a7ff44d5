"""Kafka brokers for the data source tests: kgroup's own embedded broker
(:class:`kgroup.testing.KafkaBroker`, in this process, on a loopback port), one for the whole
session, and the pinned Apache Kafka (the run's shared ``apache_kafka`` node).

``kafka_cluster`` is parametrized over both (test ids ``[kgroup]`` / ``[apache]``): a source, group or
sink scenario written once runs against each. ``kgroup_cluster`` is kgroup's broker alone, for tests
whose outcome does not depend on the broker (options refused before anything is asked of it). Every
test makes its own topics of 4 partitions and its own groups, with names unique in the run.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TOPIC_PARTITIONS = 4
_names = itertools.count()


@dataclass
class KafkaCluster:
    """A running broker: its bootstrap address and helpers to make topics and records."""

    bootstrap: str
    broker: Any
    #: ``"kgroup"`` or ``"apache"``
    kind: str = "kgroup"

    def new_topic(self, prefix: str) -> str:
        """A fresh topic of ``TOPIC_PARTITIONS`` partitions."""
        name = f"{prefix}-{os.getpid()}-{next(_names)}"
        self.broker.create_topic(name, TOPIC_PARTITIONS)
        return name

    def new_group(self, prefix: str) -> str:
        """A consumer group id no other test of the run uses."""
        return f"{prefix}-{os.getpid()}-{next(_names)}"

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
def kgroup_cluster() -> Iterator[KafkaCluster]:
    from kgroup.testing import KafkaBroker

    with KafkaBroker(num_partitions=TOPIC_PARTITIONS, auto_create_topics=False) as broker:
        assert broker.bootstrap_servers.startswith("127.0.0.1:")
        yield KafkaCluster(broker.bootstrap_servers, broker)


@pytest.fixture(scope="session", params=["kgroup", "apache"])
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    if request.param == "kgroup":
        yield request.getfixturevalue("kgroup_cluster")
        return
    from kgroup.testing.apache_kafka import ApacheKafka

    kafka = request.getfixturevalue("apache_kafka")
    assert isinstance(kafka, ApacheKafka)
    yield KafkaCluster(kafka.bootstrap_servers, kafka, "apache")
    kafka.check_alive()


@pytest.fixture(scope="session")
def kgroup_spark(spark: Any) -> Any:
    """The shared test session with the ``kgroup`` format registered."""
    from kgroup.spark import register

    register(spark)
    return spark


@pytest.fixture(scope="session")
def own_process_sessions() -> dict[str, Any]:
    """What ``own_process_sessions.py`` saw, run once in a process of its own (a fresh Python and
    JVM): per part (``user_session``, ``register``), its results or its traceback under ``"error"``."""
    script = Path(__file__).with_name("own_process_sessions.py")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    parts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parts
