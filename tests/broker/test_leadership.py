"""Partition leadership across broker stops and starts, as KRaft's controller moves it: away at a
controlled shutdown, only leaderless partitions to a broker that comes back, and back to the
preferred replica at the periodic preferred-leader election."""

from __future__ import annotations

from pathlib import Path

from kgroup.broker.broker import open_logs
from kgroup.broker.cluster import Cluster
from kgroup.broker.config import BrokerConfig


def _cluster(tmp_path: Path) -> Cluster:
    cluster = Cluster(BrokerConfig(brokers=3), open_logs(tmp_path, "never"))
    cluster.create_topic("t", 3, 3, {})
    # Kafka 4.4.0's StripedReplicaPlacer with Random(0) (the cluster's seed): partition i on brokers
    # i, i+1, i+2 (mod 3)
    assert cluster.topics["t"].replicas == ((0, 1, 2), (1, 2, 0), (2, 0, 1))
    return cluster


def test_a_restarted_broker_gets_its_leaderships_back_only_at_the_election(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        assert [cluster.partition_leader("t", p) for p in range(3)] == [0, 1, 2]
        cluster.broker_stopped(0)
        assert [cluster.partition_leader("t", p) for p in range(3)] == [1, 1, 2]
        cluster.broker_started(0)
        assert [cluster.partition_leader("t", p) for p in range(3)] == [1, 1, 2]  # stays where it moved
        cluster.elect_preferred_leaders()
        assert [cluster.partition_leader("t", p) for p in range(3)] == [0, 1, 2]
        assert cluster.elect_preferred_leaders() is False  # nothing left to move
    finally:
        cluster.logs.close()


def test_leaderless_partitions_go_to_the_first_broker_back(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        for broker in (1, 2, 0):
            cluster.broker_stopped(broker)
        assert [cluster.partition_leader("t", p) for p in range(3)] == [-1, -1, -1]
        cluster.broker_started(2)
        assert [cluster.partition_leader("t", p) for p in range(3)] == [2, 2, 2]
        cluster.elect_preferred_leaders()  # partition 2's preferred replica is 2: the others stay
        assert [cluster.partition_leader("t", p) for p in range(3)] == [2, 2, 2]
        cluster.broker_started(0)
        assert [cluster.partition_leader("t", p) for p in range(3)] == [2, 2, 2]
        cluster.elect_preferred_leaders()
        assert [cluster.partition_leader("t", p) for p in range(3)] == [0, 2, 2]
    finally:
        cluster.logs.close()


def test_the_election_reports_moved_coordinators(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    try:
        group = next(g for g in (f"g{n}" for n in range(100)) if cluster.coordinator_for(g) == 1)
        cluster.broker_stopped(1)
        moved_to = cluster.coordinator_for(group)
        assert moved_to == 2  # the offsets partition's replicas are 1, 2, 0
        cluster.broker_started(1)
        assert cluster.coordinator_for(group) == 2
        assert cluster.elect_preferred_leaders() is True
        assert cluster.coordinator_for(group) == 1
    finally:
        cluster.logs.close()


def test_a_broker_down_when_a_topic_is_made_gets_its_last_replicas_and_no_leader(tmp_path: Path) -> None:
    """Kafka 4.4.0's placer takes a stopped (fenced) broker only where the live ones do not suffice,
    last, never as the leader: the leaders stay when it comes back, at the election too."""
    cluster = _cluster(tmp_path)
    try:
        cluster.broker_stopped(0)
        cluster.create_topic("late", 4, 3, {})
        replicas = cluster.topics["late"].replicas
        assert all(r[-1] == 0 for r in replicas)
        leaders = [cluster.partition_leader("late", p) for p in range(4)]
        assert leaders == [r[0] for r in replicas] and 0 not in leaders
        cluster.create_topic("pairs", 4, 2, {})  # two live brokers suffice for two replicas
        assert all(0 not in r for r in cluster.topics["pairs"].replicas)
        cluster.broker_started(0)
        cluster.elect_preferred_leaders()
        assert [cluster.partition_leader("late", p) for p in range(4)] == leaders
    finally:
        cluster.logs.close()


def test_leadership_is_kept_per_partition(tmp_path: Path) -> None:
    """A partition that failed over does not drag another partition with the same replicas along: a new
    topic's partition is led by its first live replica (Kafka's controller leads it by its first ISR
    member), and a topic made again after a deletion starts afresh."""
    cluster = _cluster(tmp_path)
    try:
        cluster.broker_stopped(0)
        cluster.broker_started(0)
        assert cluster.partition_leader("t", 0) == 1  # replicas (0, 1, 2): still where it failed over
        placement = cluster.place_manually([(0, [0, 1, 2])])
        cluster.logs.create_topic("same", 1, {}, placement.log_metadata())
        cluster.register_topic("same", placement, {})
        assert cluster.partition_leader("same", 0) == 0
        cluster.delete_topic("t")
        again = cluster.place_manually([(0, [0, 1, 2])])
        cluster.logs.create_topic("t", 1, {}, again.log_metadata())
        cluster.register_topic("t", again, {})
        assert cluster.partition_leader("t", 0) == 0
    finally:
        cluster.logs.close()
