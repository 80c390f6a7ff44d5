"""The Java client handles themselves: a JVM that cannot run, or a wait that runs out, is one line;
a consumer's acknowledged rebalance listener holds Kafka's callback until the test has run it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import (
    JavaClientDied,
    JavaClientTimeout,
    JavaConsumer,
    JavaProducer,
    Rebalance,
)


def test_a_client_kafka_refuses_to_construct_is_reported_in_one_line(tmp_path: Path) -> None:
    require_apache_kafka()
    consumer = JavaConsumer("127.0.0.1:1", "g", ["t"], session_timeout_ms="soon", log_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(JavaClientDied) as info:
        consumer.start()
    message = str(info.value)
    assert (
        message.startswith(f"{consumer.name} (JVM pid ") and "exited with code 1: ConfigException:" in message
    )
    assert "session.timeout.ms" in message and "\n" not in message
    assert consumer.pid is None


def test_a_wait_that_runs_out_says_what_it_waited_for(tmp_path: Path) -> None:
    require_apache_kafka()
    # nothing listens on port 1: the producer is constructed, but no record can be sent
    with JavaProducer(
        "127.0.0.1:1", config={"max.block.ms": 60000}, name="lonely", log_dir=tmp_path
    ) as producer:
        with pytest.raises(
            JavaClientTimeout, match=r"^lonely: waited 1 s for the records to be sent \(last event: "
        ):
            producer.send_records("t", [("k", "v")], timeout_s=1)
        producer.kill()
    assert producer.pid is None


def test_on_rebalance_runs_before_the_java_callback_returns() -> None:
    require_apache_kafka()
    seen: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_rebalance(change: Rebalance) -> None:
        seen.append((change.kind, change.partitions))
        if change.kind == "assigned":
            raise ValueError("the test's listener failed")
        time.sleep(1.0)  # revoked: close() must wait for it

    with KafkaBroker() as broker:
        broker.create_topic("t", 2)
        with JavaConsumer(broker.bootstrap_servers, "g", ["t"], on_rebalance=on_rebalance) as consumer:
            consumer.wait_assigned()
    both = frozenset({TopicPartition("t", 0), TopicPartition("t", 1)})
    assert seen == [("assigned", both), ("revoked", both)]
    # the listener's exception is an event, and the consumer went on (it was acknowledged all the same)
    [error] = consumer.errors()
    assert (error["where"], error["type"], error["message"]) == (
        "on_rebalance",
        "ValueError",
        "the test's listener failed",
    )
    revoked = next(e for e in consumer.events if e["event"] == "revoked")
    closed = next(e for e in consumer.events if e["event"] == "closed")
    assert closed["ts"] - revoked["ts"] >= 1000  # close() waited for the slow listener
