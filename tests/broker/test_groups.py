"""Consumer groups with real clients against kgroup's coordinator."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.broker.groupclients import (
    Owned,
    aiokafka_consumer,
    confluent_consumer,
    kafka_python_consumer,
    wait_until,
)

from kgroup.group import GroupState
from kgroup.testing import KafkaBroker

pytestmark = pytest.mark.filterwarnings(r"ignore:.* is deprecated. Use files\(\) instead:DeprecationWarning")

PARTITIONS = 6


def _stable_with(kafka: KafkaBroker, group: str, members: int) -> bool:
    view = kafka.group(group)
    return view is not None and view.state is GroupState.STABLE and len(view.members) == members


def _group_state(kafka: KafkaBroker, group: str) -> object:
    view = kafka.group(group)
    return None if view is None else (view.state.name, view.generation, view.member_ids, view.pending_members)


def _covers_once(owned: dict[str, frozenset[int]], partitions: int) -> bool:
    every = [p for parts in owned.values() for p in parts]
    return sorted(every) == list(range(partitions))


def test_range_group_of_three_client_libraries() -> None:
    with KafkaBroker(topics={"mixed": PARTITIONS}) as kafka:
        owned = Owned()
        runners = [
            confluent_consumer(kafka.bootstrap_servers, "mixed-group", "mixed", owned, "confluent"),
            kafka_python_consumer(kafka.bootstrap_servers, "mixed-group", "mixed", owned, "kafka-python"),
            aiokafka_consumer(kafka.bootstrap_servers, "mixed-group", "mixed", owned, "aiokafka"),
        ]
        for runner in runners:
            runner.start()
        try:
            wait_until(
                lambda: (
                    _stable_with(kafka, "mixed-group", 3)
                    and len(owned.snapshot()) == 3
                    and _covers_once(owned.snapshot(), PARTITIONS)
                    and all(len(p) == 2 for p in owned.snapshot().values())
                ),
                90,
                "three libraries to share six partitions two by two",
                # a timeout once under heavy load: what the group and the clients held then
                lambda: (_group_state(kafka, "mixed-group"), owned.snapshot()),
            )
            view = kafka.group("mixed-group")
            assert view.protocol == "range"
        finally:
            for runner in runners:
                runner.join_checked()


def test_cooperative_sticky_confluent_incremental_and_never_double_owned() -> None:
    from confluent_kafka import Consumer

    with KafkaBroker(topics={"coop": PARTITIONS}) as kafka:
        lock = threading.Lock()
        owner: dict[int, str] = {}
        violations: list[str] = []
        revocations: list[tuple[int, int]] = []  # (revoked, owned before)

        def make(name: str) -> tuple[threading.Thread, threading.Event]:
            stop = threading.Event()

            def on_assign(consumer: Any, partitions: list[Any]) -> None:
                with lock:
                    for tp in partitions:
                        if tp.partition in owner:
                            violations.append(
                                f"{name} got {tp.partition} still owned by {owner[tp.partition]}"
                            )
                        owner[tp.partition] = name
                consumer.incremental_assign(partitions)

            def on_revoke(consumer: Any, partitions: list[Any]) -> None:
                with lock:
                    revocations.append((len(partitions), sum(1 for o in owner.values() if o == name)))
                    for tp in partitions:
                        if owner.get(tp.partition) == name:
                            del owner[tp.partition]
                consumer.incremental_unassign(partitions)

            def body() -> None:
                consumer = Consumer(
                    {
                        "bootstrap.servers": kafka.bootstrap_servers,
                        "group.id": "coop-group",
                        "partition.assignment.strategy": "cooperative-sticky",
                        "session.timeout.ms": 10000,
                        "heartbeat.interval.ms": 500,
                    }
                )
                consumer.subscribe(["coop"], on_assign=on_assign, on_revoke=on_revoke)
                while not stop.is_set():
                    consumer.poll(0.2)
                consumer.close()

            thread = threading.Thread(target=body, name=name, daemon=True)
            return thread, stop

        started = []
        try:
            for name in ("a", "b", "c"):
                thread, stop = make(name)
                thread.start()
                started.append((thread, stop))
                members = len(started)
                wait_until(
                    lambda members=members: (  # type: ignore[misc]
                        _stable_with(kafka, "coop-group", members)
                        and len(owner) == PARTITIONS
                        and len(set(owner.values())) == members
                    ),
                    60,
                    f"{members} cooperative members to own every partition",
                )
            with lock:
                counts = sorted(list(owner.values()).count(n) for n in ("a", "b", "c"))
            assert counts == [2, 2, 2]
            assert violations == []
            # incremental: a member gives up only what moves (eager would revoke all it owns)
            assert revocations and all(0 < revoked < before for revoked, before in revocations)
        finally:
            for thread, stop in started:
                stop.set()
                thread.join(30)


def test_static_member_restart_within_session_timeout_keeps_its_partitions() -> None:
    from confluent_kafka import Consumer

    def consumer() -> Any:
        c = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap_servers,
                "group.id": "static-group",
                "group.instance.id": "instance-1",
                "session.timeout.ms": 15000,
                "heartbeat.interval.ms": 500,
            }
        )
        c.subscribe(["static"])
        return c

    def poll_until_assigned(c: Any) -> set[int]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            c.poll(0.2)
            if c.assignment():
                return {tp.partition for tp in c.assignment()}
        raise AssertionError("no assignment within 60 s")

    with KafkaBroker(topics={"static": 3}) as kafka:
        first = consumer()
        before = poll_until_assigned(first)
        generation = kafka.group("static-group").generation
        first.close()  # a static member does not leave the group on close
        view = kafka.group("static-group")
        assert view.state is GroupState.STABLE and len(view.members) == 1
        second = consumer()
        try:
            after = poll_until_assigned(second)
            view = kafka.group("static-group")
            assert after == before == {0, 1, 2}
            assert view.generation == generation  # no rebalance
            assert view.state is GroupState.STABLE
        finally:
            second.close()


CRASHING_CONSUMER = r"""
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "crash-group", "session.timeout.ms": 2000,
              "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"})
c.subscribe(["crashy"])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


def test_crashed_consumer_is_removed_after_session_timeout() -> None:
    # the session floor (group.min.session.timeout.ms) lowered so that the victim's 2 s session is
    # accepted: its real expiry is what removes it
    with KafkaBroker(topics={"crashy": 4}, group_min_session_timeout_ms=1000) as kafka:
        owned = Owned()
        survivor = confluent_consumer(
            kafka.bootstrap_servers,
            "crash-group",
            "crashy",
            owned,
            "survivor",
            **{"session.timeout.ms": 6000},
        )
        victim = subprocess.Popen(
            [sys.executable, "-c", CRASHING_CONSUMER, kafka.bootstrap_servers],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        survivor.start()
        try:
            wait_until(
                lambda: (
                    _stable_with(kafka, "crash-group", 2) and len(owned.snapshot().get("survivor", ())) == 2
                ),
                60,
                "two members sharing four partitions",
            )
            victim.kill()  # no LeaveGroup: only the session timeout can remove it
            victim.wait(30)
            killed_at = time.monotonic()
            wait_until(
                lambda: owned.snapshot().get("survivor") == frozenset(range(4)),
                60,
                "the survivor to own every partition",
            )
            waited = time.monotonic() - killed_at
            # not before the session could expire (2 s after its last heartbeat; heartbeats every
            # 0.5 s, half the session as the margin for a late one)
            assert waited >= 1.0
            assert len(kafka.group("crash-group").members) == 1
        finally:
            victim.kill()
            victim.wait(30)
            assert victim.stdout is not None
            victim.stdout.close()
            survivor.join_checked()


def _produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + n):
        producer.produce(topic, key=str(i).encode(), value=str(i).encode(), partition=i % 2)
    assert producer.flush(20) == 0


def _consume(bootstrap: str, topic: str, group: str, expect: int) -> list[int]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[int] = []
    deadline = time.monotonic() + 60
    while len(values) < expect and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(int(message.value()))
    # a little longer: nothing beyond what is expected may arrive
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            values.append(int(message.value()))
    consumer.commit(asynchronous=False)
    consumer.close()
    return values


def test_committed_offsets_survive_a_consumer_restart_and_a_broker_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with KafkaBroker(topics={"commits": 2}, data_dir=data) as kafka:
        _produce(kafka.bootstrap_servers, "commits", 10)
        assert sorted(_consume(kafka.bootstrap_servers, "commits", "committer", 10)) == list(range(10))
        _produce(kafka.bootstrap_servers, "commits", 5, start=10)
        # consumer restart: resumes at the committed offsets
        assert sorted(_consume(kafka.bootstrap_servers, "commits", "committer", 5)) == list(range(10, 15))
        committed = dict(kafka.group("committer").offsets)
    with KafkaBroker(data_dir=data) as kafka:
        assert dict(kafka.group("committer").offsets) == committed
        _produce(kafka.bootstrap_servers, "commits", 4, start=15)
        assert sorted(_consume(kafka.bootstrap_servers, "commits", "committer", 4)) == list(range(15, 19))
