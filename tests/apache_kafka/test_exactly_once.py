"""Exactly-once across a rebalance, with confluent-kafka (librdkafka) on ``kgroup serve`` and on Apache
Kafka 4.4.0: a consume-transform-produce loop (each batch's outputs and its input offsets committed in
one transaction with ``send_offsets_to_transaction(consumer.position(...),
consumer.consumer_group_metadata())``), a second member joining mid-run, and a zombie: the first member's
transaction begun before the rebalance, whose offsets (sent with the group metadata of the old generation)
are refused (KIP-447) and which is aborted. Every input record is in the output exactly once for a
``read_committed`` reader, on both brokers.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target

pytestmark = pytest.mark.transactions

RECORDS = 300
PARTITIONS = 4
BATCH = 20


class _Worker:
    """One member of the group: its consumer and its transactional producer."""

    def __init__(self, bootstrap: str, group: str, transactional_id: str) -> None:
        from confluent_kafka import Consumer, Producer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "session.timeout.ms": 10_000,
                "log_level": 0,
            }
        )
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "log_level": 0}
        )
        self.producer.init_transactions(60)
        self.transactions = 0

    def consume(self, topic_in: str) -> list[Any]:
        """A batch of records (the consumer's rebalances are served here)."""
        return [m for m in self.consumer.consume(BATCH, 0.3) if m.error() is None]

    def produce(self, topic_out: str, messages: list[Any]) -> None:
        for m in messages:
            self.producer.produce(topic_out, m.value().upper(), key=m.key(), partition=m.partition())

    def positions(self) -> list[Any]:
        return list(self.consumer.position(self.consumer.assignment()))

    def process(self, topic_in: str, topic_out: str) -> int:
        """One transaction over one batch; a refused transaction is aborted and the consumer rewound
        to the committed offsets. The records consumed and committed."""
        from confluent_kafka import KafkaException

        messages = self.consume(topic_in)
        if not messages:
            return 0
        self.producer.begin_transaction()
        self.produce(topic_out, messages)
        try:
            self.producer.send_offsets_to_transaction(
                self.positions(), self.consumer.consumer_group_metadata(), 30
            )
            self.producer.commit_transaction(30)
        except KafkaException as failed:
            if not failed.args[0].txn_requires_abort():
                raise
            self.producer.abort_transaction(30)
            self.rewind()
            return 0
        self.transactions += 1
        return len(messages)

    def rewind(self) -> None:
        """Back to the committed offsets (the start of a partition with none)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        for tp in self.consumer.committed(list(self.consumer.assignment()), 30):
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(10)


def _committed_total(bootstrap: str, group: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        committed = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        return sum(max(tp.offset, 0) for tp in committed)
    finally:
        reader.close()


def _read_committed(bootstrap: str, topic: str, expected: int) -> list[tuple[bytes, bytes]]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        seen: list[tuple[bytes, bytes]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (len(at_end) == PARTITIONS and len(seen) >= expected):
            message = reader.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            seen.append((message.key(), message.value()))
        return seen
    finally:
        reader.close()


def test_consume_transform_produce_is_exactly_once_across_a_rebalance(target: Target, names: str) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    topic_in, topic_out, group = f"{names}-in", f"{names}-out", f"{names}-g"
    target.create_topic(topic_in, PARTITIONS)
    target.create_topic(topic_out, PARTITIONS)
    bootstrap = target.bootstrap_servers
    source = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(RECORDS):
        source.produce(topic_in, f"record-{i}".encode(), key=str(i).encode(), partition=i % PARTITIONS)
    assert source.flush(30) == 0

    first = _Worker(bootstrap, group, f"{names}-tx-a")
    first.consumer.subscribe([topic_in])
    second: _Worker | None = None
    try:
        done = 0
        deadline = time.monotonic() + 120
        while done < RECORDS // 3:  # the first member alone
            assert time.monotonic() < deadline, f"{done} records processed"
            done += first.process(topic_in, topic_out)

        # the zombie's transaction: a batch consumed and produced at the first generation
        zombie_batch: list[Any] = []
        while not zombie_batch:
            assert time.monotonic() < deadline
            zombie_batch = first.consume(topic_in)
        stale_positions = first.positions()
        stale_metadata = first.consumer.consumer_group_metadata()
        first.producer.begin_transaction()
        first.produce(topic_out, zombie_batch)

        # a second member joins: the group rebalances (the first member's consumer serves it in
        # consume(); what it reads meanwhile is read again from the committed offsets afterwards)
        second = _Worker(bootstrap, group, f"{names}-tx-b")
        second.consumer.subscribe([topic_in])
        while not (second.consumer.assignment() and first.consumer.assignment()):
            assert time.monotonic() < deadline, "the rebalance did not complete"
            second.consume(topic_in)
            first.consume(topic_in)
        second.rewind()

        # the zombie's offsets carry the old generation: refused, and its transaction aborted
        with pytest.raises(KafkaException) as refused:
            first.producer.send_offsets_to_transaction(stale_positions, stale_metadata, 30)
        error = refused.value.args[0]
        assert error.code() == KafkaError.ILLEGAL_GENERATION, error
        assert error.txn_requires_abort(), error
        first.producer.abort_transaction(30)
        first.rewind()

        # both members go on until every input offset is committed
        while _committed_total(bootstrap, group, topic_in) < RECORDS:
            assert time.monotonic() < deadline, "the group did not process every record"
            for worker in (first, second):
                worker.process(topic_in, topic_out)
        assert first.transactions > 0 and second.transactions > 0
    finally:
        first.close()
        if second is not None:
            second.close()

    output = _read_committed(bootstrap, topic_out, RECORDS)
    expected = Counter((str(i).encode(), f"RECORD-{i}".encode()) for i in range(RECORDS))
    assert Counter(output) == expected  # each input once: no loss, no duplicate, nothing aborted
