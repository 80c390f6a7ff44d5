"""Differential: the ``config_type`` and the order DescribeConfigs (v3+) gives the topic and broker
configs kgroup describes — sent raw to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture), both
held to Kafka's ``ConfigDef`` types (``DescribeConfigsResponse.ConfigType``: 1 BOOLEAN, 2 STRING, 3 INT,
5 LONG, 7 LIST) and to the order Kafka lists them in.
"""

from __future__ import annotations

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata

from kgroup.broker.handlers_admin import TOPIC_CONFIG_DEFAULTS
from kgroup.broker.handlers_describe_configs import CONFIG_TYPES

pytestmark = pytest.mark.apache_kafka

KAFKA_TYPES = {
    "cleanup.policy": 7,
    "compression.type": 2,
    "max.message.bytes": 3,
    "message.timestamp.type": 2,
    "min.insync.replicas": 3,
    "retention.bytes": 5,
    "retention.ms": 5,
    "segment.bytes": 3,
    "auto.create.topics.enable": 1,
    "num.partitions": 3,
    "default.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "socket.request.max.bytes": 3,
    "group.initial.rebalance.delay.ms": 3,
    "group.consumer.heartbeat.interval.ms": 3,
    "group.consumer.session.timeout.ms": 3,
    "group.consumer.assignment.interval.ms": 3,
    "group.consumer.min.heartbeat.interval.ms": 3,
    "group.consumer.max.heartbeat.interval.ms": 3,
    "group.consumer.min.session.timeout.ms": 3,
    "group.consumer.max.session.timeout.ms": 3,
}


#: the order Apache Kafka 4.4.0 answers these keys in (read from it, and the same in every run: its
#: config maps are hash maps of 64 and 512 buckets)
TOPIC_ORDER = [
    "compression.type",
    "min.insync.replicas",
    "cleanup.policy",
    "segment.bytes",
    "retention.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "retention.bytes",
]
BROKER_ORDER = [
    "offsets.topic.num.partitions",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.min.session.timeout.ms",
    "socket.request.max.bytes",
    "group.consumer.assignment.interval.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.session.timeout.ms",
    "auto.create.topics.enable",
    "group.consumer.min.heartbeat.interval.ms",
    "default.replication.factor",
    "num.partitions",
    "group.initial.rebalance.delay.ms",
    "group.consumer.max.heartbeat.interval.ms",
]


def test_config_types(target: Target, names: str) -> None:
    topic = f"{names}-t"
    broker_keys = sorted(set(KAFKA_TYPES) - set(TOPIC_CONFIG_DEFAULTS))
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        node = metadata(raw, [topic], auto_create=False)["brokers"][0]["node_id"]
        answer = raw.call(
            "DescribeConfigs",
            4,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": topic,
                        "configuration_keys": sorted(TOPIC_CONFIG_DEFAULTS),
                    },
                    {"resource_type": 4, "resource_name": str(node), "configuration_keys": broker_keys},
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
    types = {c["name"]: c["config_type"] for r in answer["results"] for c in r["configs"]}
    assert types == KAFKA_TYPES
    # listed in Kafka's order (its config maps' hash order), the same keys on both brokers
    order = [[c["name"] for c in r["configs"]] for r in answer["results"]]
    assert order == [TOPIC_ORDER, BROKER_ORDER]
    assert CONFIG_TYPES == KAFKA_TYPES  # every config kgroup describes has its type
