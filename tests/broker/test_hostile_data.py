"""Hostile Produce requests (issue 17) through the broker: Kafka's answer for each, nothing garbage
stored, and consumers of the partition served afterwards; real clients with every codec."""

from __future__ import annotations

import time
from typing import Any

import cramjam
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from tests.broker.rawclient import RawClient
from tests.broker.rawdata import produce_request
from tests.log.batches import kio_batch
from tests.log.hostile_batches import HOSTILE, LONG_MAX, ONE, batch

from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class


@pytest.fixture(scope="module")
def kafka() -> KafkaBroker:
    with KafkaBroker(topics={"t": 1}) as broker:
        yield broker  # type: ignore[misc]


def _consume(bootstrap: str, topic: str, partition: int, want: int, timeout_s: float = 20) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([CkTopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(values) < want and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
        return values
    finally:
        consumer.close()


def test_each_hostile_batch_is_answered_as_kafka_and_the_partition_stays_readable(kafka: KafkaBroker) -> None:
    with RawClient(kafka.bootstrap_servers) as client:
        for case, (records, kafka_code) in HOSTILE.items():
            answer = client.request(produce_request("t", 0, records))
            (partition,) = answer.responses[0].partition_responses
            assert int(partition.error_code) == kafka_code, case
            if kafka_code == 32:  # INVALID_TIMESTAMP lists the records, as Kafka's answer does
                assert [int(e.batch_index) for e in partition.record_errors] == [0]
        after = client.request(produce_request("t", 0, kio_batch([b"after"])))
        assert int(after.responses[0].partition_responses[0].error_code) == 0
    # only the wrapped-timestamp record (accepted by Kafka too) and the last one were stored: a
    # consumer reads both and is not stuck on a batch it cannot decode (confluent-kafka used to
    # report _BAD_COMPRESSION and stop there)
    assert _consume(kafka.bootstrap_servers, "t", 0, 2) == [b"v", b"after"]


def test_the_wrapped_timestamp_is_stored_with_kafkas_max_timestamp(kafka: KafkaBroker) -> None:
    kafka.create_topic("wrap", 1)
    records, _ = HOSTILE["timestamp 2^63-1 + 2^62 (wraps)"]
    with RawClient(kafka.bootstrap_servers) as client:
        answer = client.request(produce_request("wrap", 0, records))
        assert answer.responses[0].partition_responses[0].error_code == 0

    async def stored() -> tuple[int, int]:
        from kgroup.log.batch import parse_header

        header = parse_header(kafka.broker.cluster.partition_log("wrap", 0).read(0, 1 << 20))
        return header.base_timestamp, header.max_timestamp

    assert kafka.run_in_loop(stored()) == (LONG_MAX, -1)  # what Apache Kafka 4.4.0 stores


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_produces_and_consumes_with_every_codec(kafka: KafkaBroker, codec: str) -> None:
    topic = f"codec-{codec}"
    kafka.create_topic(topic, 1)
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "compression.type": codec, "linger.ms": 50}
    )
    values = [b"%s-%d-" % (codec.encode(), n) + b"z" * (n % 300) for n in range(500)]
    errors: list[object] = []
    for value in values:
        producer.produce(
            topic, value=value, partition=0, on_delivery=lambda e, m: errors.append(e) if e else None
        )
    assert producer.flush(30) == 0
    assert errors == []
    assert _consume(kafka.bootstrap_servers, topic, 0, len(values)) == values

    async def stored_codec() -> int:
        from kgroup.log.batch import parse_header

        return parse_header(kafka.broker.cluster.partition_log(topic, 0).read(0, 1 << 20)).compression

    assert stored_codec_id(codec) == kafka.run_in_loop(stored_codec())  # librdkafka did compress


def stored_codec_id(codec: str) -> int:
    return {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]


@pytest.mark.parametrize(
    ("topic", "count", "size"),
    [
        # 600 × 1 KiB: a frame over LARGE_FRAME_BYTES of one batch, decoded and validated on the loop
        ("large-few", 600, 1024),
        # 5,000 small records (over _HEAVY_BATCH_RECORDS): validated in the codec thread
        ("large-many", 5000, 24),
    ],
)
def test_a_large_batch_round_trips_and_a_damaged_one_is_corrupt_message(
    kafka: KafkaBroker, topic: str, count: int, size: int
) -> None:
    kafka.create_topic(topic, 1)
    values = [bytes([n % 251]) * size for n in range(count)]
    good = kio_batch(values)
    damaged = bytearray(good)
    damaged[-3] ^= 0x01  # a byte of the last record's value: the CRC-32C no longer matches
    with RawClient(kafka.bootstrap_servers) as client:
        refused = client.request(produce_request(topic, 0, bytes(damaged)))
        (partition,) = refused.responses[0].partition_responses
        assert int(partition.error_code) == 2  # CORRUPT_MESSAGE, as Kafka answers a CRC mismatch
        stored = client.request(produce_request(topic, 0, good))
        (partition,) = stored.responses[0].partition_responses
        assert (int(partition.error_code), int(partition.base_offset)) == (0, 0)
    # nothing of the damaged batch was stored: the consumer reads exactly the good batch's records
    assert _consume(kafka.bootstrap_servers, topic, 0, count) == values


def test_a_request_of_many_compressed_batches_is_answered_as_each_alone_with_one_codec_hand_over(
    kafka: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every hostile batch to a partition of its own in one request, beside good compressed batches
    and one to a partition that does not exist: each partition is answered as that batch alone is
    (the test above), the good ones are stored, and the compressed batches of the request were
    checked in the codec thread in one hand-over, not one each."""
    cases = list(HOSTILE.items())
    topic = "many"
    kafka.create_topic(topic, len(cases) + 2)
    good = [
        batch(bytes(cramjam.snappy.compress_raw(ONE)), codec=2),
        batch(bytes(cramjam.zstd.compress(ONE)), codec=4),
    ]
    partitions = [(i, records) for i, (_, (records, _code)) in enumerate(cases)]
    partitions += [(len(cases) + i, records) for i, records in enumerate(good)]
    partitions.append((len(cases) + 2, good[0]))  # no such partition
    request = build(
        request_class(0, 9),
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": i, "records": r} for i, r in partitions]}
            ],
        },
    )
    real_off_loop = kafka.broker.off_loop
    handed: list[str] = []

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(function.__name__)
        return await real_off_loop(function, *args, **kwargs)

    monkeypatch.setattr(kafka.broker, "off_loop", counting)
    with RawClient(kafka.bootstrap_servers) as client:
        answer = client.request(request)
    monkeypatch.setattr(kafka.broker, "off_loop", real_off_loop)
    codes = {int(p.index): int(p.error_code) for p in answer.responses[0].partition_responses}
    expected = {i: code for i, (_, (_, code)) in enumerate(cases)}
    expected |= {len(cases): 0, len(cases) + 1: 0, len(cases) + 2: 3}  # UNKNOWN_TOPIC_OR_PARTITION
    assert codes == expected
    stored = {int(p.index): int(p.base_offset) for p in answer.responses[0].partition_responses}
    assert stored[len(cases)] == stored[len(cases) + 1] == 0
    assert handed == ["_validate_each"]
