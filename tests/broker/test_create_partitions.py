"""CreatePartitions on kgroup's broker with real clients over loopback: a topic grown by confluent-kafka's
AdminClient and by raw requests, the new partitions produced to and consumed from, placed with the
topic's replication factor, kept across a restart, assigned to a KIP-848 group subscribed to the topic,
and Kafka's errors. (Kafka's own answers to the same requests are compared in
``tests/apache_kafka/test_diff_create_partitions.py``.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.apache_kafka.wire import Raw, metadata
from tests.apache_kafka.wire import create_partitions as _grow
from tests.broker.rawdata import consumer_heartbeat

from kgroup.testing import KafkaBroker

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42


def _counts(raw: Raw, *names: str) -> dict[str, int]:
    topics = metadata(raw, list(names), auto_create=False)["topics"]
    return {t["name"]: len(t["partitions"]) for t in topics if t["error_code"] == NONE}


def test_confluent_admin_grows_a_topic_and_the_new_partitions_serve(broker: KafkaBroker) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_partitions([NewPartitions("orders", 5)], validate_only=True)["orders"].result(10)
    assert len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 3
    admin.create_partitions([NewPartitions("orders", 5)])["orders"].result(10)
    assert len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 5
    for count, code in ((5, "INVALID_PARTITIONS"), (4, "INVALID_PARTITIONS")):
        with pytest.raises(KafkaException, match=code):
            admin.create_partitions([NewPartitions("orders", count)])["orders"].result(10)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.create_partitions([NewPartitions("nowhere", 2)])["nowhere"].result(10)

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
    for partition in (3, 4):
        producer.produce("orders", value=f"to-{partition}".encode(), partition=partition)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("orders", p, 0) for p in (3, 4)])
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 20
    while len(got) < 2 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            got[message.partition()] = message.value()
    consumer.close()
    assert got == {3: b"to-3", 4: b"to-4"}


def test_raw_answers_and_errors(broker: KafkaBroker) -> None:
    with Raw(broker.bootstrap_servers) as raw:
        broker.create_topic("other", 1)
        assert _grow(raw, [("orders", 4)], validate_only=True) == [("orders", NONE, None)]
        assert _counts(raw, "orders") == {"orders": 3}  # validate_only changes nothing
        assert _grow(raw, [("orders", 4)], version=0) == [("orders", NONE, None)]
        assert _grow(raw, [("orders", 4)]) == [
            ("orders", INVALID_PARTITIONS, "Topic already has 4 partition(s).")
        ]
        assert _grow(raw, [("orders", 2)]) == [
            (
                "orders",
                INVALID_PARTITIONS,
                "The topic orders currently has 4 partition(s); 2 would not be an increase.",
            )
        ]
        assert _grow(raw, [("missing", 2)]) == [("missing", UNKNOWN_TOPIC_OR_PARTITION, None)]
        # a repeated name is answered first and not grown; the rest are
        assert _grow(raw, [("orders", 6), ("other", 2), ("orders", 7)]) == [
            ("orders", INVALID_REQUEST, "Duplicate topic name."),
            ("other", NONE, None),
        ]
        assert _grow(raw, [("orders", 6, [[0]])]) == [
            (
                "orders",
                INVALID_REPLICA_ASSIGNMENT,
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
            )
        ]
        assert _grow(raw, [("orders", 5, [[7]])]) == [
            (
                "orders",
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes broker 7, but no such broker is registered.",
            )
        ]
        assert _grow(raw, [("orders", 5, [[]])]) == [
            (
                "orders",
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        ]
        assert _grow(raw, [("orders", 5, [[0, 0]])]) == [
            (
                "orders",
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes the broker 0 more than once.",
            )
        ]
        assert _grow(raw, [("orders", 5, [[0]])]) == [("orders", NONE, None)]
        assert _counts(raw, "orders", "other") == {"orders": 5, "other": 2}


def test_new_partitions_take_the_topics_replication_factor_and_survive_a_restart(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path, brokers=3) as kafka, Raw(kafka.bootstrap_servers) as raw:
        created = raw.call(
            "CreateTopics",
            7,
            {
                "topics": [
                    {
                        "name": "wide",
                        "num_partitions": 2,
                        "replication_factor": 2,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 30_000,
                "validate_only": False,
            },
        )
        assert created["topics"][0]["error_code"] == NONE, created
        cluster = kafka.broker.cluster
        before = cluster.topics["wide"]
        assert _grow(raw, [("wide", 120)]) == [("wide", NONE, None)]  # three steps of 50
        grown = cluster.topics["wide"]
        assert grown.topic_id == before.topic_id and grown.replicas[:2] == before.replicas
        assert len(grown.replicas) == 120
        assert all(len(set(r)) == 2 and set(r) <= {0, 1, 2} for r in grown.replicas)
        assert {r[0] for r in grown.replicas} == {0, 1, 2}  # striped over the brokers
        assert _grow(raw, [("wide", 121, [[2, 1]])]) == [("wide", NONE, None)]
        assert cluster.topics["wide"].replicas[120] == (2, 1)
        assert _grow(raw, [("wide", 122, [[0]])]) == [
            (
                "wide",
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes a partition with 1 replica(s), but this is "
                "not consistent with previous partitions, which have 2 replica(s).",
            )
        ]
        kept = cluster.topics["wide"]
    with KafkaBroker(data_dir=tmp_path, brokers=3) as kafka, Raw(kafka.bootstrap_servers) as raw:
        again = kafka.broker.cluster.topics["wide"]
        assert (again.topic_id, again.replicas) == (kept.topic_id, kept.replicas)
        assert _counts(raw, "wide") == {"wide": 121}


def _heartbeat(raw: Raw, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body = consumer_heartbeat(group, member, epoch, **fields)
    answer = raw.call("ConsumerGroupHeartbeat", 1, body)
    assert answer["error_code"] == NONE, answer
    return answer


def test_a_consumer_group_subscribed_to_the_topic_gets_the_new_partitions(broker: KafkaBroker) -> None:
    topic_id = broker.broker.cluster.topics["orders"].topic_id
    with Raw(broker.bootstrap_servers) as raw:
        member = str(uuid.uuid4())
        joined = _heartbeat(raw, "g", member, 0, subscribed_topic_names=["orders"])
        assert [t["partitions"] for t in joined["assignment"]["topic_partitions"]] == [[0, 1, 2]]
        owned = [{"topic_id": topic_id, "partitions": [0, 1, 2]}]
        epoch = _heartbeat(raw, "g", member, joined["member_epoch"], topic_partitions=owned)["member_epoch"]
        assert _grow(raw, [("orders", 5)]) == [("orders", NONE, None)]
        deadline = time.monotonic() + 15
        while True:
            answer = _heartbeat(raw, "g", member, epoch, topic_partitions=owned)
            if answer["assignment"] is not None:
                break
            assert time.monotonic() < deadline, "the group never got the new partitions"
            time.sleep(0.1)
    assert answer["member_epoch"] > epoch
    assert [(t["topic_id"], t["partitions"]) for t in answer["assignment"]["topic_partitions"]] == [
        (str(topic_id), [0, 1, 2, 3, 4])
    ]


def test_a_kip848_confluent_consumer_is_assigned_the_new_partitions(broker: KafkaBroker) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewPartitions

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "kip848",
            "group.protocol": "consumer",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    consumer.subscribe(["orders"])

    def owned_until(count: int) -> set[int]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            consumer.poll(0.2)
            owned = {tp.partition for tp in consumer.assignment()}
            if owned == set(range(count)):
                return owned
        return {tp.partition for tp in consumer.assignment()}

    try:
        assert owned_until(3) == {0, 1, 2}
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_partitions([NewPartitions("orders", 6)])["orders"].result(10)
        assert owned_until(6) == set(range(6))
    finally:
        consumer.close()
