"""Real clients over loopback: create a topic, produce keyed records with headers and timestamps, consume
them all back exactly (values, keys, headers, timestamps, offsets)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kgroup import partition_for_key
from kgroup.testing import KafkaBroker

# kafka-python 3.0 reads its JSON schemas with importlib.resources.read_text (deprecated in 3.11)
pytestmark = pytest.mark.filterwarnings(r"ignore:.* is deprecated. Use files\(\) instead:DeprecationWarning")

N = 60
PARTITIONS = 4
BASE_TS = 1_700_000_000_000


def _records(prefix: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    return [
        (
            f"{prefix}-key-{i}".encode(),
            f"value-{i}".encode(),
            [("n", str(i).encode()), ("src", b"t")],
            BASE_TS + i,
        )
        for i in range(N)
    ]


def _check(got: list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]], int]], prefix: str) -> None:
    """Every record once, on murmur2's partition, with consecutive offsets per partition."""
    expected = {key: (value, headers, ts) for key, value, headers, ts in _records(prefix)}
    assert len(got) == N
    assert {g[2] for g in got} == set(expected)
    by_partition: dict[int, list[int]] = {}
    for partition, offset, key, value, headers, ts in got:
        assert (value, headers, ts) == expected[key]
        assert partition == partition_for_key(key, PARTITIONS)
        by_partition.setdefault(partition, []).append(offset)
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))


def test_confluent_kafka_round_trip(broker: KafkaBroker) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics([NewTopic("ck", num_partitions=PARTITIONS, replication_factor=1)])
    futures["ck"].result(timeout=10)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    delivered: list[Any] = []
    for key, value, headers, ts in _records("ck"):
        producer.produce(
            "ck",
            key=key,
            value=value,
            headers=headers,
            timestamp=ts,
            on_delivery=lambda e, m: delivered.append(e),
        )
    assert producer.flush(20) == 0
    assert delivered == [None] * N
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("ck", p, 0) for p in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < N and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        got.append(
            (
                message.partition(),
                message.offset(),
                message.key(),
                message.value(),
                message.headers(),
                message.timestamp()[1],
            )
        )
    consumer.close()
    _check(got, "ck")


def test_kafka_python_round_trip(broker: KafkaBroker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    admin.create_topics([NewTopic("kp", num_partitions=PARTITIONS, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", enable_idempotence=True)
    futures = [
        producer.send("kp", key=key, value=value, headers=headers, timestamp_ms=ts)
        for key, value, headers, ts in _records("kp")
    ]
    for future in futures:
        future.get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
    consumer.assign([TopicPartition("kp", p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got = []
    deadline = time.monotonic() + 20
    while len(got) < N and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            for r in records:
                got.append((r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp))
    consumer.close()
    _check(got, "kp")


def test_aiokafka_round_trip(broker: KafkaBroker) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> list[Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        await admin.start()
        await admin.create_topics([NewTopic("ak", num_partitions=PARTITIONS, replication_factor=1)])
        await admin.close()
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, acks="all", enable_idempotence=True
        )
        await producer.start()
        try:
            for key, value, headers, ts in _records("ak"):
                await producer.send_and_wait("ak", key=key, value=value, headers=headers, timestamp_ms=ts)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        got = []
        try:
            consumer.assign([TopicPartition("ak", p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + 20
            while len(got) < N and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    for r in records:
                        got.append((r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp))
        finally:
            await consumer.stop()
        return got

    _check(asyncio.run(asyncio.wait_for(run(), 60)), "ak")


def test_kafka_broker_fixture_gives_bootstrap_servers(kafka_broker: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_broker})
    producer.produce("auto-created", value=b"x")
    assert producer.flush(20) == 0


@pytest.mark.parametrize("acks", ["0", "1"])
def test_confluent_kafka_acks_0_and_1(broker: KafkaBroker, acks: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "acks": acks, "enable.idempotence": False}
    )
    errors: list[Any] = []
    for i in range(20):
        producer.produce("orders", key=str(i).encode(), value=b"v", on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(20) == 0
    assert errors == [None] * 20
