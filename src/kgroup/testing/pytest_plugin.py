"""kgroup's pytest fixtures, loaded by pytest through the ``pytest11`` entry point ``kgroup``.

* ``kafka_broker`` / ``kafka_broker_instance``: a fresh in-process kgroup broker per test;
* ``apache_kafka``: the real Apache Kafka (:mod:`kgroup.testing.apache_kafka`), one node shared by
  the whole test run (tests keep apart by topic and group names); skipped with a one-line reason
  where it cannot run, failed with it in CI.

Importing this module starts nothing; a broker starts when a test asks for its fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

__all__ = ["apache_kafka", "kafka_broker", "kafka_broker_instance"]


@pytest.fixture
def kafka_broker_instance() -> Iterator[object]:
    """A running :class:`kgroup.testing.KafkaBroker` (one per test), stopped after the test."""
    from kgroup.testing.broker import KafkaBroker

    with KafkaBroker() as broker:
        yield broker


@pytest.fixture
def kafka_broker(kafka_broker_instance: object) -> str:
    """The ``bootstrap.servers`` string of a fresh in-process broker (topics are auto-created)."""
    from kgroup.testing.broker import KafkaBroker

    assert isinstance(kafka_broker_instance, KafkaBroker)
    return kafka_broker_instance.bootstrap_servers


@pytest.fixture(scope="session")
def apache_kafka() -> Iterator[object]:
    """A running :class:`kgroup.testing.apache_kafka.ApacheKafka` (one KRaft node) for the whole run.

    Its settings are :data:`~kgroup.testing.apache_kafka.DEFAULT_CONFIGS`; a test that needs others
    (three nodes, another rebalance delay) starts its own ``ApacheKafka``. After the run the fixture
    checks that the node did not die and that no JVM is left.
    """
    from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka

    require_apache_kafka()
    kafka = ApacheKafka()
    kafka.start()
    try:
        yield kafka
        kafka.check_alive()
    finally:
        kafka.stop()
