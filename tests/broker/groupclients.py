"""Consumers of three libraries run side by side in threads, each recording what it owns."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any


class Runner(threading.Thread):
    """Runs ``body(stop_event)`` in a thread; ``join_checked`` re-raises what the body raised."""

    def __init__(self, name: str, body: Callable[[threading.Event], None]) -> None:
        super().__init__(name=name, daemon=True)
        self.body = body
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.body(self.stop_event)
        except BaseException as exc:
            self.error = exc

    def join_checked(self, timeout: float = 30) -> None:
        self.stop_event.set()
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not stop"
        if self.error is not None:
            raise self.error


class Owned:
    """What each consumer currently owns (set by the consumers' threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_consumer: dict[str, frozenset[int]] = {}

    def set(self, consumer: str, partitions: set[int]) -> None:
        with self.lock:
            self.by_consumer[consumer] = frozenset(partitions)

    def snapshot(self) -> dict[str, frozenset[int]]:
        with self.lock:
            return dict(self.by_consumer)


def confluent_consumer(
    bootstrap: str, group: str, topic: str, owned: Owned, name: str, **extra: Any
) -> Runner:
    def body(stop: threading.Event) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                **extra,
            }
        )
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                consumer.poll(0.2)
                owned.set(name, {tp.partition for tp in consumer.assignment()})
        finally:
            consumer.close()

    return Runner(name, body)


def kafka_python_consumer(bootstrap: str, group: str, topic: str, owned: Owned, name: str) -> Runner:
    def body(stop: threading.Event) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            partition_assignment_strategy=[RangePartitionAssignor],
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
        )
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=200)
                owned.set(name, {tp.partition for tp in consumer.assignment()})
        finally:
            consumer.close()

    return Runner(name, body)


def aiokafka_consumer(bootstrap: str, group: str, topic: str, owned: Owned, name: str) -> Runner:
    def body(stop: threading.Event) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor

        async def run() -> None:
            consumer = AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                partition_assignment_strategy=(RangePartitionAssignor,),
                session_timeout_ms=10000,
                heartbeat_interval_ms=500,
            )
            await consumer.start()
            try:
                while not stop.is_set():
                    await consumer.getmany(timeout_ms=200)
                    owned.set(name, {tp.partition for tp in consumer.assignment()})
            finally:
                await consumer.stop()

        asyncio.run(run())

    return Runner(name, body)


def wait_until(
    check: Callable[[], bool], timeout_s: float, what: str, state: Callable[[], object] | None = None
) -> None:
    """Wait (bounded) until ``check()``; on a timeout, the error says what ``state()`` saw last."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    seen = "" if state is None else f"; last seen: {state()!r}"
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}{seen}")
