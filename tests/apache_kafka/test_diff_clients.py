"""The differential suite through real clients: what confluent-kafka (and its AdminClient),
kafka-python, aiokafka and ``kgroup.client`` observe against kgroup's broker and Apache Kafka 4.4.0.

Normalized, and why: node ids, hosts and ports (the coordinator is "the one node", whatever its
id); member ids as ``<client id>-<uuid>`` (random on both brokers); timestamps chosen by the test are
compared exactly. Topic configs: ``segment.bytes`` is left out (the Apache fixture sets
``log.segment.bytes`` to 64 MiB on the broker, so its value and source differ by the fixture's choice).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator, member_id_shape, offset_fetch

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

TIMEOUT_S = 30.0


def coordinator(target: Target, group_id: str) -> Raw:
    return Raw(find_coordinator(target.bootstrap_servers, group_id))


def _admin(target: Target) -> AdminClient:
    return AdminClient({"bootstrap.servers": target.bootstrap_servers, "log_level": 3})


def _produce(target: Target, topic: str, records: list[tuple[int, bytes, int]]) -> list[tuple[int, int, int]]:
    """(partition, value, timestamp) records through confluent's producer; (partition, offset, timestamp)
    of each as its delivery report says."""
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "linger.ms": 0, "log_level": 3})
    reports: list[tuple[int, int, int]] = []

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        reports.append((message.partition(), message.offset(), message.timestamp()[1]))

    for partition, value, timestamp in records:
        producer.produce(topic, value=value, partition=partition, timestamp=timestamp, on_delivery=delivered)
        producer.flush(TIMEOUT_S)  # one batch per record: the offsets are in the test's order
    del producer  # closed now, not at the next collection
    return reports


def _confluent_member(target: Target, group: str, topic: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": group,
            "client.id": "diff-confluent",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": 10_000,
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + TIMEOUT_S
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.2)
    return consumer


def test_confluent_admin_sees_the_same_group_offsets_and_topic(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    now = int(time.time() * 1000)
    reports = _produce(
        target,
        topic,
        [(0, b"a", now - 3000), (0, b"b", now - 1000), (0, b"c", now - 2000), (1, b"d", now - 500)],
    )
    assert reports == [(0, 0, now - 3000), (0, 1, now - 1000), (0, 2, now - 2000), (1, 0, now - 500)]
    consumer = _confluent_member(target, group, topic)
    admin = _admin(target)
    try:
        consumer.commit(
            offsets=[CTopicPartition(topic, 0, 2, metadata="first"), CTopicPartition(topic, 1, 1)],
            asynchronous=False,
        )
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
        ours = [g for g in listed.valid if g.group_id == group]
        (described,) = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S).values()
        description = described.result()
        (fetched,) = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S
        ).values()
        offsets = fetched.result()
        specs = {
            "earliest": OffsetSpec.earliest(),
            "latest": OffsetSpec.latest(),
            "max timestamp": OffsetSpec.max_timestamp(),
            "at or after now-2500": OffsetSpec.for_timestamp(now - 2500),
            "after all": OffsetSpec.for_timestamp(now + 60_000),
        }
        found = {
            name: {
                tp.partition: (info.result().offset, info.result().timestamp)
                for tp, info in admin.list_offsets(
                    {CTopicPartition(topic, p): spec for p in (0, 1)}, request_timeout=TIMEOUT_S
                ).items()
            }
            for name, spec in specs.items()
        }
        (configs,) = admin.describe_configs(
            [ConfigResource("TOPIC", topic)], request_timeout=TIMEOUT_S
        ).values()
        topic_configs = configs.result()
    finally:
        consumer.close()
    assert [(g.group_id, g.is_simple_consumer_group, g.state.name, g.type.name) for g in ours] == [
        (group, False, "STABLE", "CLASSIC")
    ]
    (member,) = description.members
    host, _, port = target.bootstrap_servers.partition(":")
    assert {
        "group": (description.group_id, description.is_simple_consumer_group, description.state.name),
        "assignor": description.partition_assignor,
        "type": description.type.name,
        "coordinator": (description.coordinator.host, description.coordinator.port),
        "member": (
            member_id_shape(member.member_id),
            member.client_id,
            member.host,
            member.group_instance_id,
        ),
        "assignment": sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions),
    } == {
        "group": (group, False, "STABLE"),
        "assignor": "range",
        "type": "CLASSIC",
        "coordinator": (host, int(port)),
        "member": ("diff-confluent-<uuid>", "diff-confluent", "/127.0.0.1", None),
        "assignment": [(topic, 0), (topic, 1)],
    }
    assert sorted((tp.partition, tp.offset, tp.error) for tp in offsets.topic_partitions) == [
        (0, 2, None),
        (1, 1, None),
    ]
    with coordinator(target, group) as raw:  # metadata strings: on the wire (see the aiokafka test)
        # confluent-kafka 2.16 sends the metadata with C's terminating NUL: both brokers keep it as sent
        assert offset_fetch(raw, group, None) == {(topic, 0): (2, "first\x00", 0), (topic, 1): (1, "", 0)}
    assert found == {
        "earliest": {0: (0, -1), 1: (0, -1)},
        "latest": {0: (3, -1), 1: (1, -1)},
        "max timestamp": {0: (1, now - 1000), 1: (0, now - 500)},
        "at or after now-2500": {0: (1, now - 1000), 1: (0, now - 500)},
        "after all": {0: (-1, -1), 1: (-1, -1)},
    }
    shown = {
        name: (entry.value, entry.is_default, entry.source, entry.is_read_only, entry.is_sensitive)
        for name, entry in topic_configs.items()
        if name
        in (
            "cleanup.policy",
            "compression.type",
            "max.message.bytes",
            "message.timestamp.type",
            "min.insync.replicas",
            "retention.bytes",
            "retention.ms",
        )
    }
    default = (True, 5, False, False)  # DEFAULT_CONFIG, not read-only, not sensitive
    assert shown == {
        "cleanup.policy": ("delete", *default),
        "compression.type": ("producer", *default),
        "max.message.bytes": ("1048588", *default),
        "message.timestamp.type": ("CreateTime", *default),
        # Kafka 4.x (eligible leader replicas) keeps it as a cluster-wide dynamic default
        "min.insync.replicas": ("1", False, 3, False, False),
        "retention.bytes": ("-1", *default),
        "retention.ms": ("604800000", *default),
    }


def test_kgroup_client_member_seen_by_kafka_python(target: Target, names: str) -> None:
    from kgroup.client import GroupConsumer
    from kgroup.member import MemberConfig
    from kgroup.model import TopicPartition

    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 3)
    _produce(target, topic, [(0, b"a", 1_000), (0, b"b", 2_000), (2, b"c", 3_000)])
    config = MemberConfig(
        group,
        client_id="diff-kgroup",
        group_instance_id="kg-1",
        assignors=("range",),
        enable_auto_commit=False,
        session_timeout_ms=10_000,
    )

    async def member_then_admin() -> tuple[Any, ...]:
        async with GroupConsumer(target.bootstrap_servers, config, topics=[topic]) as consumer:
            owned = await consumer.wait_stable(timeout_ms=int(TIMEOUT_S * 1000))
            await consumer.commit({TopicPartition(topic, 0): 2, TopicPartition(topic, 2): 1})
            stable = await asyncio.to_thread(_kafka_python_view, target, group, topic)
        # a static member leaves no LeaveGroup behind on close: the group stays Stable (KIP-345)
        after = await asyncio.to_thread(_kafka_python_view, target, group, topic)
        return owned, stable, after

    owned, stable, after = asyncio.run(member_then_admin())
    assert sorted(tp.partition for tp in owned) == [0, 1, 2]
    member = {
        "member_id": "kg-1-<uuid>",
        "client_id": "diff-kgroup",
        "client_host": "/127.0.0.1",
        "group_instance_id": "kg-1",
        "assignment": [(topic, 0), (topic, 1), (topic, 2)],
    }
    expected = {
        "listed": [(group, "consumer", "Stable")],
        "described": ("Stable", "consumer", "range", [member]),
        "offsets": {0: (2, ""), 2: (1, "")},
        "earliest": {0: 0, 1: 0, 2: 0},
        "latest": {0: 2, 1: 0, 2: 1},
        "by time 1500": {0: (1, 2_000), 1: None, 2: (0, 3_000)},
    }
    assert stable == expected
    assert after == expected


def _kafka_python_view(target: Target, group: str, topic: str) -> dict[str, Any]:
    """What kafka-python's admin client and a group-less KafkaConsumer report (the shared Apache node
    lists other tests' groups too: only this test's group is kept)."""
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap_servers, request_timeout_ms=30_000)
    consumer = KafkaConsumer(
        bootstrap_servers=target.bootstrap_servers, group_id=None, request_timeout_ms=30_000
    )
    partitions = [KTopicPartition(topic, p) for p in range(3)]
    try:
        listed = admin.list_groups()
        described = admin.describe_groups([group])[group]
        offsets = admin.list_group_offsets({group: None})[group]
        earliest = consumer.beginning_offsets(partitions)
        latest = consumer.end_offsets(partitions)
        by_time = consumer.offsets_for_times(dict.fromkeys(partitions, 1_500))
    finally:
        consumer.close()
        admin.close()
    assert described["error"] is None
    members = [
        {
            "member_id": member_id_shape(m["member_id"]),
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "group_instance_id": m["group_instance_id"],
            "assignment": sorted(
                (a["topic"], p)
                for a in m["member_assignment"]["assigned_partitions"]
                for p in a["partitions"]
            ),
        }
        for m in described["members"]
    ]
    return {
        "listed": [
            (g["group_id"], g["protocol_type"], g["group_state"]) for g in listed if g["group_id"] == group
        ],
        "described": (
            described["group_state"],
            described["protocol_type"],
            described["protocol_data"],
            members,
        ),
        "offsets": {tp.partition: (o.offset, o.metadata) for tp, o in offsets.items()},
        "earliest": {tp.partition: o for tp, o in earliest.items()},
        "latest": {tp.partition: o for tp, o in latest.items()},
        "by time 1500": {
            tp.partition: None if o is None else (o.offset, o.timestamp) for tp, o in by_time.items()
        },
    }


def test_aiokafka_member_commits_and_leaves(target: Target, names: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import OffsetAndMetadata
    from aiokafka.structs import TopicPartition as ATopicPartition

    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    _produce(target, topic, [(0, b"a", 1_000), (0, b"b", 2_000), (0, b"c", 3_000)])

    async def consume() -> tuple[Any, ...]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=target.bootstrap_servers,
            group_id=group,
            client_id="diff-aiokafka",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10_000,
        )
        await consumer.start()
        try:
            records = await consumer.getmany(timeout_ms=int(TIMEOUT_S * 1000), max_records=3)
            first, second = ATopicPartition(topic, 0), ATopicPartition(topic, 1)
            await consumer.commit({first: OffsetAndMetadata(3, "aio")})
            committed = (await consumer.committed(first), await consumer.committed(second))
            owned = sorted(tp.partition for tp in consumer.assignment())
            fetched = sorted(
                (tp.partition, r.offset, r.value, r.timestamp) for tp, rs in records.items() for r in rs
            )
        finally:
            await consumer.stop()  # a dynamic member: LeaveGroup, so the group is Empty at once
        return committed, owned, fetched

    committed, owned, fetched = asyncio.run(consume())
    admin = _admin(target)
    (described,) = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S).values()
    description = described.result()
    (listed,) = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [CTopicPartition(topic, 0), CTopicPartition(topic, 1)])],
        request_timeout=TIMEOUT_S,
    ).values()
    offsets = sorted((tp.partition, tp.offset) for tp in listed.result().topic_partitions)
    # OffsetFetch answers -1 for a partition without a commit: aiokafka reads it as None
    assert committed == (3, None)
    assert owned == [0, 1]
    assert fetched == [(0, 0, b"a", 1_000), (0, 1, b"b", 2_000), (0, 2, b"c", 3_000)]
    assert (description.state.name, description.members, description.partition_assignor) == ("EMPTY", [], "")
    # librdkafka shows -1 as OFFSET_INVALID (-1001); confluent-kafka 2.16 reads a fetched metadata
    # string past its end (garbage, or a UnicodeDecodeError), so the metadata is checked on the wire
    assert offsets == [(0, 3), (1, -1001)]
    with coordinator(target, group) as raw:
        assert offset_fetch(raw, group, {topic: [0, 1]}) == {
            (topic, 0): (3, "aio", 0),
            (topic, 1): (-1, "", 0),
        }
        assert offset_fetch(raw, group, None) == {(topic, 0): (3, "aio", 0)}  # all: only what was committed
