"""The differential suite, broker settings Kafka refuses at start: Apache Kafka 4.4.0's
``GroupCoordinatorConfig`` holds ``group.consumer.heartbeat.interval.ms`` and
``group.consumer.session.timeout.ms`` within ``group.consumer.{min,max}.*`` (5-15 s, 45-60 s by
default) and a node outside them does not start; kgroup's broker refuses the same settings, in Kafka's
words (``BrokerConfig``; ``kgroup serve`` prints them as one line)."""

from __future__ import annotations

import pytest

from kgroup.model import KgroupError
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka

WORDS = (
    "group.consumer.heartbeat.interval.ms must be greater than or equal to "
    "group.consumer.min.heartbeat.interval.ms"
)


@pytest.mark.parametrize("kind", ["kgroup", "apache"])
def test_a_heartbeat_interval_below_kafkas_minimum_is_refused_at_start(kind: str) -> None:
    if kind == "apache":
        require_apache_kafka()
        # Kafka's own check (its storage tool already builds the KafkaConfig, so the node never runs)
        with (
            pytest.raises(KgroupError) as died,
            ApacheKafka(configs={"group.consumer.heartbeat.interval.ms": 500}),
        ):
            pass
        assert f"IllegalArgumentException: {WORDS}" in died.value.message
    else:
        with pytest.raises(KgroupError) as refused:
            KafkaBroker(group_consumer_heartbeat_interval_ms=500)
        assert refused.value.message.startswith(WORDS)
