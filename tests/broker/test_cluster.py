"""`--brokers 3`: one listener per broker, leaders and coordinators by placement, failover by replay."""

from __future__ import annotations

import threading
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.metadata.v12.request import MetadataRequest
from tests.broker.groupclients import wait_until
from tests.broker.rawclient import RawClient

from kgroup.group import GroupState
from kgroup.group.discovery import coordinator_partition
from kgroup.javacompat import JavaRandom
from kgroup.partitioning import StripedReplicaPlacer, UsableBroker
from kgroup.testing import KafkaBroker

GROUP = "failover-group"
TOPIC = "events"


def _coordinator(kafka: KafkaBroker, group: str) -> int:
    node: int = kafka.broker.cluster.coordinator_for(group)
    return node


def test_leaders_replicas_and_coordinators_follow_placement() -> None:
    """Kafka 4.4.0's placement (StripedReplicaPlacer, one java.util.Random(0) for the cluster): the
    topic made at start is placed first, the offsets topic at the first FindCoordinator, from the same
    generator; each partition is led by its first replica."""
    placer = StripedReplicaPlacer(JavaRandom(0))
    brokers = [UsableBroker(b) for b in range(3)]
    events, offsets = placer.place(brokers, 6, 3), placer.place(brokers, 50, 3)
    assert events != [[i % 3, (i + 1) % 3, (i + 2) % 3] for i in range(6)]  # not the seeds' rule
    with KafkaBroker(topics={TOPIC: 6}, brokers=3) as kafka:
        with RawClient(kafka.bootstrap_servers) as client:
            metadata = client.request(MetadataRequest(topics=None, include_topic_authorized_operations=False))
            assert sorted(b.node_id for b in metadata.brokers) == [0, 1, 2]
            (topic,) = metadata.topics
            assert [list(p.replica_nodes) for p in topic.partitions] == events
            assert [p.leader_id for p in topic.partitions] == [r[0] for r in events]
            first = client.request(FindCoordinatorRequest(key=GROUP, key_type=0))
            assert first.error_code == ErrorCode.coordinator_not_available  # it made the offsets topic
            found = client.request(FindCoordinatorRequest(key=GROUP, key_type=0))
        expected = offsets[coordinator_partition(GROUP, 50)][0]  # leader of the offsets-topic partition
        assert found.node_id == expected
        wrong = (expected + 1) % 3
        with RawClient(f"127.0.0.1:{kafka.port(wrong)}") as client:
            answer = client.request(
                HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m", group_instance_id=None)
            )
        assert answer.error_code == ErrorCode.not_coordinator


def test_group_keeps_consuming_while_its_coordinator_stops_and_restarts() -> None:
    from confluent_kafka import Consumer, Producer

    with KafkaBroker(topics={TOPIC: 6}, brokers=3) as kafka:
        stop = threading.Event()
        lock = threading.Lock()
        seen: dict[str, list[int]] = {"c1": [], "c2": []}
        owned: dict[str, set[int]] = {"c1": set(), "c2": set()}
        double_owned: list[str] = []
        errors: list[BaseException] = []

        def produce() -> None:
            producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
            i = 0
            while not stop.is_set():
                producer.produce(TOPIC, key=str(i).encode(), value=str(i).encode())
                producer.poll(0)
                i += 1
                time.sleep(0.005)
            producer.flush(30)

        def consume(name: str) -> None:
            try:
                consumer = Consumer(
                    {
                        "bootstrap.servers": kafka.bootstrap_servers,
                        "group.id": GROUP,
                        "auto.offset.reset": "earliest",
                        "session.timeout.ms": 10000,
                        "heartbeat.interval.ms": 500,
                        "auto.commit.interval.ms": 200,
                    }
                )

                # Ownership as the rebalance callbacks report it, when they run: a partition is
                # owned from on_assign until on_revoke/on_lost (sampling assignment() in the poll
                # loop would compare one consumer's fresh view with the other's stale one).
                def on_assign(_consumer: Any, partitions: list[Any]) -> None:
                    with lock:
                        got = {tp.partition for tp in partitions}
                        other = owned["c2" if name == "c1" else "c1"]
                        if got & other:
                            double_owned.append(f"{name}: {sorted(got & other)}")
                        owned[name] |= got

                def on_release(_consumer: Any, partitions: list[Any]) -> None:
                    with lock:
                        owned[name] -= {tp.partition for tp in partitions}

                consumer.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_release, on_lost=on_release)
                while not stop.is_set():
                    message = consumer.poll(0.2)
                    with lock:
                        if message is not None and message.error() is None:
                            seen[name].append(int(message.value()))
                consumer.close()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=produce, daemon=True)] + [
            threading.Thread(target=consume, args=(n,), daemon=True) for n in ("c1", "c2")
        ]
        for thread in threads:
            thread.start()
        try:

            def progress() -> int:
                with lock:
                    return len(seen["c1"]) + len(seen["c2"])

            wait_until(lambda: _stable(kafka) and progress() > 200, 60, "the group to consume")
            coordinator = _coordinator(kafka, GROUP)
            committed_before = dict(kafka.group(GROUP).offsets)
            kafka.stop_broker(coordinator)
            moved_to = _coordinator(kafka, GROUP)
            assert moved_to != coordinator
            # the new coordinator rebuilt the group by replaying its records: offsets are all there
            view = kafka.group(GROUP)
            for tp, offset in committed_before.items():
                assert dict(view.offsets)[tp].offset >= offset.offset
            mark = progress()
            wait_until(
                lambda: progress() > mark + 200, 60, "consumption to go on without the old coordinator"
            )
            kafka.start_broker(coordinator)
            # as on Kafka, the group stays where it failed over to until the preferred-leader
            # election (every leader.imbalance.check.interval.seconds, 300 s here)
            assert _coordinator(kafka, GROUP) == moved_to
            mark = progress()
            wait_until(lambda: progress() > mark + 200, 60, "consumption to go on after the restart")
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        assert errors == []
        assert double_owned == []


def _stable(kafka: KafkaBroker) -> bool:
    view: Any = kafka.group(GROUP)
    return view is not None and view.state is GroupState.STABLE and len(view.members) == 2
