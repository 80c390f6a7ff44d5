"""A group's coordinator fails over on a three-node cluster, on kgroup's broker and on Apache Kafka:
the group keeps its committed offsets and rebalances on the new coordinator."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apache_kafka.conftest import Cluster
from apache_kafka.groups import FAST, all_partitions, java_consumer, wait_settled
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.java_client import JavaConsumer, JavaProducer

pytestmark = pytest.mark.slow

#: a controlled shutdown, the offsets-topic leader's election and the group's load (Apache Kafka)
FAILOVER_ALLOWANCE_MS = 3000
#: a heartbeat interval, then JoinGroup and SyncGroup (see test_java_timing.JOIN_TOLERANCE_MS)
JOIN_ALLOWANCE_MS = FAST["heartbeat_interval_ms"] + 2000


def _ends(sent: list, topic: str, partitions: int) -> dict[TopicPartition, int]:
    ends = {TopicPartition(topic, p): 0 for p in range(partitions)}
    for record in sent:
        tp = TopicPartition(topic, record.partition)
        ends[tp] = max(ends[tp], record.offset + 1)
    return ends


def test_coordinator_failover_keeps_offsets_and_rebalances_on_the_new_coordinator(
    kind: str, tmp_path: Path
) -> None:
    topic, group = "failover", "failover-group"
    with Cluster(kind, nodes=3) as cluster:
        cluster.create_topic(topic, 6)
        everything = all_partitions({topic: 6})
        bootstrap = cluster.bootstrap_servers
        consumers: list[JavaConsumer] = []
        with JavaProducer(bootstrap, name="producer", log_dir=tmp_path) as producer:
            sent = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(60)])
            ends = _ends(sent, topic, 6)
            try:
                for name in ("c0", "c1"):
                    consumers.append(java_consumer(bootstrap, group, [topic], name, tmp_path))
                wait_settled(consumers, everything)
                c0 = consumers[0]
                for consumer in consumers:
                    commit = consumer.commit({tp: ends[tp] for tp in consumer.assignment})
                    assert commit.error is None, commit
                generation = c0.generation
                rebalances = [len(c.rebalances()) for c in consumers]

                old = cluster.coordinator(group)
                cluster.stop_node(old)
                new = cluster.coordinator(group)
                assert new != old
                assert c0.committed(list(ends)) == ends

                marks = [c.mark() for c in consumers]
                more = producer.send_records(topic, [(f"k{i}", f"v{i}") for i in range(60, 90)])
                # the partitions' leaders moved too: every new record reaches its consumer
                wanted = {s.key for s in more}
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    got = {r["key"] for c, m in zip(consumers, marks, strict=True) for r in c.records(m)}
                    if wanted <= got:
                        break
                    time.sleep(0.1)
                assert wanted <= got
                ends = _ends(sent + more, topic, 6)
                for consumer in consumers:
                    commit = consumer.commit({tp: ends[tp] for tp in consumer.assignment})
                    assert commit.error is None, commit
                # the new coordinator loaded the group from the offsets topic: no rebalance on either
                assert [c.generation for c in consumers] == [generation, generation]
                assert [len(c.rebalances()) for c in consumers] == rebalances

                consumers.append(java_consumer(bootstrap, group, [topic], "c2", tmp_path))
                wait_settled(consumers, everything)
                assert consumers[2].generation == generation + 1
                assert cluster.coordinator(group) == new
                assert c0.committed(list(ends)) == ends
            finally:
                for consumer in consumers:
                    consumer.close()


_MOVES_BACK = (
    "kgroup's cluster makes a partition's first live replica its leader, so a restarted broker takes "
    "back its __consumer_offsets partitions, and the groups they coordinate, at once; Apache Kafka "
    "leaves leadership where it failed over until a preferred-leader election "
    "(auto.leader.rebalance.enable, every leader.imbalance.check.interval.seconds = 300 s)"
)


@pytest.mark.parametrize(
    "kind",
    [pytest.param("kgroup", marks=pytest.mark.xfail(strict=True, reason=_MOVES_BACK)), "apache"],
    indirect=True,
)
def test_a_restarted_node_does_not_take_its_groups_back(kind: str, tmp_path: Path) -> None:
    topic, group = "comeback", "comeback-group"
    with Cluster(kind, nodes=3) as cluster:
        cluster.create_topic(topic, 2)
        with java_consumer(cluster.bootstrap_servers, group, [topic], "c0", tmp_path) as consumer:
            wait_settled([consumer], all_partitions({topic: 2}))
            committed = {TopicPartition(topic, p): 7 for p in range(2)}
            assert consumer.commit(committed).error is None
            old = cluster.coordinator(group)
            cluster.stop_node(old)
            new = cluster.coordinator(group)
            cluster.start_node(old)
            time.sleep(5)
            # the group works wherever it is …
            assert consumer.committed(list(committed)) == committed
            assert consumer.commit(committed).error is None
            # … and on Apache Kafka it is still where it failed over to
            assert (old, cluster.coordinator(group)) == (old, new)


def test_a_member_dead_before_a_failover_gets_a_whole_session_on_the_new_coordinator(
    kind: str, tmp_path: Path
) -> None:
    """A coordinator that loads a group restarts every member's session (Kafka's
    ``rescheduleClassicGroupMemberHeartbeat`` on load): a member killed 3 s before the failover is
    expired a session timeout after the new coordinator took the group, not after its last heartbeat."""
    topic, group = "dead-member", "dead-member-group"
    session_ms = FAST["session_timeout_ms"]
    with Cluster(kind, nodes=3) as cluster:
        cluster.create_topic(topic, 4)
        everything = all_partitions({topic: 4})
        bootstrap = cluster.bootstrap_servers
        survivor = java_consumer(bootstrap, group, [topic], "c0", tmp_path)
        victim = java_consumer(bootstrap, group, [topic], "c1", tmp_path)
        try:
            wait_settled([survivor, victim], everything)
            coordinator = cluster.coordinator(group)
            mark = survivor.mark()
            victim.kill()
            time.sleep(3)
            stopped = time.time() * 1000
            cluster.stop_node(coordinator)
            assigned = survivor.wait_assigned(
                since=mark, timeout_s=60, where=lambda r: r.assignment == everything
            )
            waited = assigned.ts_ms - stopped
            # at least a whole session after the failover; at most that plus the failover itself (a
            # controlled shutdown, a leader election and the load: ~1 s on Apache Kafka), a heartbeat
            # interval and the rejoin
            assert session_ms <= waited <= session_ms + FAILOVER_ALLOWANCE_MS + JOIN_ALLOWANCE_MS, waited
        finally:
            survivor.close()
