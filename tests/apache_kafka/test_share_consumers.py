"""Real share consumers (KIP-932) on kgroup serve and on Apache Kafka 4.4.0: Java's
``KafkaShareConsumer`` (4.4.0) and confluent-kafka 2.16's ``ShareConsumer`` (librdkafka's preview,
ShareFetch / ShareAcknowledge v1), in the same share groups.

Each group reads from the earliest offset with a 15 s acquisition lock: on Apache Kafka the group's
``share.auto.offset.reset`` and ``share.record.lock.duration.ms`` are set with IncrementalAlterConfigs,
on kgroup serve the broker's defaults ``share_auto_offset_reset`` and
``group_share_record_lock_duration_ms`` (group configs on kgroup serve: ``test_diff_group_configs.py``).

* more consumers than partitions, both clients together: every produced record is delivered and
  accepted exactly once, at delivery count 1;
* a released record is delivered again with delivery count 2 (each client releasing);
* a consumer killed (``kill -9`` of its JVM) or closed while it holds records: another member gets
  them, at delivery count 2, before their lock runs out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.wire import API, Raw, create_topic

from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka.cluster import ApacheKafka
from kgroup.testing.apache_kafka.java_share import JavaShareConsumer

pytestmark = [pytest.mark.slow, pytest.mark.apache_kafka]

LOCK_MS = 15_000
API.setdefault("IncrementalAlterConfigs", 44)


@dataclass
class ShareBroker:
    kind: str
    bootstrap_servers: str

    def prepare_group(self, group: str) -> None:
        """Kafka: the group's share configs; kgroup serve has them broker-wide (see the module)."""
        if self.kind != "apache":
            return
        with Raw(self.bootstrap_servers) as raw:
            answer = raw.call(
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [
                        {
                            "resource_type": 32,  # GROUP
                            "resource_name": group,
                            "configs": [
                                {
                                    "name": "share.auto.offset.reset",
                                    "config_operation": 0,
                                    "value": "earliest",
                                },
                                {
                                    "name": "share.record.lock.duration.ms",
                                    "config_operation": 0,
                                    "value": str(LOCK_MS),
                                },
                            ],
                        }
                    ],
                    "validate_only": False,
                },
            )
        assert [r["error_code"] for r in answer["responses"]] == [0], answer


@pytest.fixture(params=["kgroup", "apache"])
def share_broker(request: pytest.FixtureRequest) -> Iterator[ShareBroker]:
    if request.param == "apache":
        kafka = request.getfixturevalue("apache_kafka")
        assert isinstance(kafka, ApacheKafka)
        yield ShareBroker("apache", kafka.bootstrap_servers)
        kafka.check_alive()
    else:
        with KafkaBroker(
            share_auto_offset_reset="earliest", group_share_record_lock_duration_ms=LOCK_MS
        ) as broker:
            yield ShareBroker("kgroup", broker.bootstrap_servers)


def _produce(bootstrap: str, topic: str, partitions: int, count: int) -> set[tuple[int, int]]:
    """``count`` records round the partitions; their (partition, offset)s."""
    sent: set[tuple[int, int]] = set()
    failed: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(err)
        else:
            sent.add((msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"r{i}".encode(), partition=i % partitions, on_delivery=delivered)
    assert producer.flush(30) == 0 and not failed, failed
    return sent


class _RdkafkaShare:
    """confluent-kafka's ShareConsumer in a thread: explicit acknowledgements, ACCEPT (RELEASE once for
    the first record when ``release_first``), ``commit_sync`` after each poll."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, *, release_first: bool = False, polls: int | None = None
    ) -> None:
        from confluent_kafka import ShareConsumer

        self.consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "explicit",
            }
        )
        self.consumer.subscribe([topic])
        self.records: list[tuple[int, int, int]] = []  # (partition, offset, delivery count)
        self.errors: list[str] = []
        self._release_first = release_first
        #: stop polling after this many polls that returned records (None: go on)
        self._polls = polls
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import AcknowledgeType

        released = False
        while not self._stop.is_set() and (self._polls is None or self._polls > 0):
            try:
                messages = self.consumer.poll(0.2)
                if not len(messages):
                    continue
                for m in messages:
                    if m.error() is not None:
                        self.errors.append(str(m.error()))
                        continue
                    self.records.append((m.partition(), m.offset(), int(m.delivery_count() or -1)))
                    if self._release_first and not released:
                        released = True
                        self.consumer.acknowledge(m, AcknowledgeType.RELEASE)
                    else:
                        self.consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                self.consumer.commit_sync()
                if self._polls is not None:
                    self._polls -= 1
            except Exception as exc:  # kept: the test reports it
                self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.2)

    @property
    def polls_left(self) -> int | None:
        return self._polls

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def _wait(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.1)


def test_every_record_once_with_more_consumers_than_partitions(share_broker: ShareBroker, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(share_broker.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    share_broker.prepare_group(group)
    sent = _produce(share_broker.bootstrap_servers, topic, 2, 400)
    javas = [JavaShareConsumer(share_broker.bootstrap_servers, group, [topic]) for _ in range(2)]
    rdkafkas: list[_RdkafkaShare] = []
    try:
        for java in javas:
            java.start()
        rdkafkas = [_RdkafkaShare(share_broker.bootstrap_servers, group, topic) for _ in range(2)]

        def delivered() -> list[tuple[int, int, int]]:
            rows = [(r["partition"], r["offset"], r["delivery_count"]) for j in javas for r in j.records()]
            return rows + [row for c in rdkafkas for row in c.records]

        def all_acknowledged() -> bool:
            java_acked = sum(a["count"] for j in javas for a in j.acknowledgements())
            java_seen = sum(len(j.records()) for j in javas)
            return len(delivered()) >= len(sent) and java_acked == java_seen

        _wait(all_acknowledged, 90, f"{len(sent)} records delivered and acknowledged")
        time.sleep(1.0)  # nothing more is delivered (a duplicate would show here)
        rows = delivered()
        assert sorted((p, o) for p, o, _ in rows) == sorted(sent), share_broker.kind
        assert {c for _, _, c in rows} == {1}, share_broker.kind
        assert [e for j in javas for a in j.acknowledgements() for e in a["errors"]] == []
        assert [e for c in rdkafkas for e in c.errors] == []
    finally:
        for c in rdkafkas:
            c.close()
        for java in javas:
            java.close()


def test_a_released_record_comes_again_with_delivery_count_2(share_broker: ShareBroker, names: str) -> None:
    topic = f"{names}-t"
    with Raw(share_broker.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    # Java: releases offset 0 at its first delivery
    group = f"{names}-java"
    share_broker.prepare_group(group)
    sent = _produce(share_broker.bootstrap_servers, topic, 1, 5)
    with JavaShareConsumer(
        share_broker.bootstrap_servers, group, [topic], release=[(TopicPartition(topic, 0), 0)]
    ) as java:
        java.wait_records(6)
        rows = [(r["offset"], r["delivery_count"], r["ack"]) for r in java.records()]
    assert rows[0] == (0, 1, "RELEASE"), rows
    assert sorted(rows) == sorted(
        [(0, 1, "RELEASE"), (0, 2, "ACCEPT")] + [(o, 1, "ACCEPT") for _, o in sent if o]
    )
    # librdkafka: releases the first record it gets
    group = f"{names}-rdkafka"
    share_broker.prepare_group(group)
    consumer = _RdkafkaShare(share_broker.bootstrap_servers, group, topic, release_first=True)
    try:
        _wait(lambda: len(consumer.records) >= 6, 60, "six deliveries")
        time.sleep(1.0)
        first = consumer.records[0]
        assert first[2] == 1
        again = [r for r in consumer.records[1:] if r[1] == first[1]]
        assert [r[2] for r in again] == [2], consumer.records
        assert sorted((p, o) for p, o, _ in consumer.records[1:]) == sorted(sent), consumer.records
        assert consumer.errors == []
    finally:
        consumer.close()


@pytest.mark.parametrize("end", ["kill", "close"])
def test_records_of_a_killed_or_closed_consumer_go_to_another(
    share_broker: ShareBroker, names: str, end: str
) -> None:
    """A consumer holding records (acquired, not acknowledged) is killed (``kill -9`` of its JVM) or
    closed; another member gets them at delivery count 2, before their lock would have run out."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(share_broker.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    share_broker.prepare_group(group)
    sent = _produce(share_broker.bootstrap_servers, topic, 1, 10)
    holder = JavaShareConsumer(share_broker.bootstrap_servers, group, [topic], hold=True)
    other = JavaShareConsumer(share_broker.bootstrap_servers, group, [topic])
    try:
        holder.start()
        held = {(r["partition"], r["offset"]) for r in holder.wait_holding()}
        assert held and {r["delivery_count"] for r in holder.records()} == {1}
        other.start()
        mark = other.mark()
        if end == "kill":
            holder.kill()  # kill -9: nothing acknowledged, nothing released by the client
        else:
            holder.close()  # the client's close: its share session ends
        other.wait_records(len(held), since=mark, timeout_s=LOCK_MS / 1000 + 60)
        other.wait_records(len(sent), timeout_s=60)
        records = other.records()
    finally:
        holder.kill()
        other.close()
    rows = {(r["partition"], r["offset"]): r["delivery_count"] for r in records}
    assert sorted(rows) == sorted(sent)
    assert {o: c for o, c in rows.items() if o in held} == dict.fromkeys(held, 2), (share_broker.kind, rows)
    assert all(c == 1 for o, c in rows.items() if o not in held)
    # released when the killed consumer's connection closed (Kafka 4.4's disconnect listener) or its
    # session closed, not when their 15 s lock ran out
    # (the JVMs' wall clock: the holder got them at acquired_ms, their lock ran out at least a second
    # before acquired_ms + LOCK_MS would have)
    acquired_ms = min(r["ts"] for r in holder.records())
    redelivered_ms = min(r["ts"] for r in records if (r["partition"], r["offset"]) in held)
    assert redelivered_ms < acquired_ms + LOCK_MS - 1000, (share_broker.kind, redelivered_ms - acquired_ms)
