"""A group's coordinator fails over on a three-node cluster, on kgroup's broker and on Apache Kafka:
the group keeps its committed offsets, the new coordinator gives every member a whole session (a
member that died before the failover is expired a session timeout after it), and the group
rebalances on the new coordinator. On the same cluster, new topics' replicas are placed as a KRaft
controller places them, a stopped node fenced."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apache_kafka.conftest import Cluster
from apache_kafka.groups import FAST, all_partitions, java_consumer, java_consumers, wait_settled
from apache_kafka.striped_clusters import possible_placements
from apache_kafka.wire import Raw, metadata
from kgroup.model import TopicPartition
from kgroup.partitioning import UsableBroker
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import close_all

pytestmark = pytest.mark.slow

#: a controlled shutdown, the offsets-topic leader's election and the group's load (~1 s measured
#: on Apache Kafka)
FAILOVER_ALLOWANCE_MS = 3000
#: a heartbeat interval, then JoinGroup and SyncGroup (see test_java_timing.JOIN_TOLERANCE_MS)
JOIN_ALLOWANCE_MS = FAST["heartbeat_interval_ms"] + 2000


@pytest.fixture(scope="module", params=["kgroup", "apache"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Three nodes for this module; each test starts again every node it stopped."""
    if request.param == "apache":
        require_apache_kafka()
    with Cluster(request.param, nodes=3) as started:
        yield started


def test_coordinator_failover_keeps_offsets_and_rebalances_on_the_new_coordinator(
    cluster: Cluster, tmp_path: Path
) -> None:
    topic, group = "failover", "failover-group"
    cluster.create_topic(topic, 6)
    everything = all_partitions({topic: 6})
    session_ms = FAST["session_timeout_ms"]
    consumers = java_consumers(cluster.bootstrap_servers, group, [topic], ["c0", "c1", "c2"], tmp_path)
    c0, c1, victim = consumers
    old = None
    try:
        wait_settled(consumers, everything)
        committed = {TopicPartition(topic, p): 10 + p for p in range(6)}
        for consumer in consumers:
            commit = consumer.commit({tp: committed[tp] for tp in consumer.assignment})
            assert commit.error is None, commit
        generation = c0.generation
        old = cluster.coordinator(group)
        marks = [c0.mark(), c1.mark()]

        victim.kill()
        time.sleep(3)
        stopped = time.time() * 1000
        cluster.stop_node(old)
        new = cluster.coordinator(group)
        assert new != old
        assert c0.committed(list(committed)) == committed

        # one rebalance, on the new coordinator, once the dead member's (new) session ran out
        first, second = (
            c.wait_assigned(since=m, timeout_s=60, where=lambda r: r.generation > generation)
            for c, m in zip((c0, c1), marks, strict=True)
        )
        assert (first.generation, second.generation) == (generation + 1, generation + 1)
        assert first.assignment | second.assignment == everything
        waited = min(first.ts_ms, second.ts_ms) - stopped
        assert session_ms <= waited <= session_ms + FAILOVER_ALLOWANCE_MS + JOIN_ALLOWANCE_MS, waited
        assert cluster.coordinator(group) == new

        moved = {TopicPartition(topic, p): 20 + p for p in range(6)}
        for consumer in (c0, c1):
            commit = consumer.commit({tp: moved[tp] for tp in consumer.assignment})
            assert commit.error is None, commit
        assert c1.committed(list(moved)) == moved
    finally:
        close_all(*consumers)
        if old is not None:
            cluster.start_node(old)


def _placed(raw: Raw, name: str, partitions: int, replication_factor: int) -> list[list[int]]:
    """CreateTopics (the controller places the replicas), then each partition's replicas as Metadata
    lists them once every partition has a leader (bounded: 30 s)."""
    topic = {"name": name, "num_partitions": partitions, "replication_factor": replication_factor}
    answer = raw.call(
        "CreateTopics",
        7,
        {"topics": [{**topic, "assignments": [], "configs": []}], "timeout": 30_000, "validate_only": False},
    )
    assert answer["topics"][0]["error_code"] == 0, answer
    deadline = time.monotonic() + 30
    while True:
        (found,) = metadata(raw, [name], auto_create=False)["topics"]
        if found["error_code"] == 0 and all(p["leader_id"] >= 0 for p in found["partitions"]):
            parts = sorted(found["partitions"], key=lambda p: p["partition_index"])
            assert [p["leader_id"] for p in parts] == [p["replica_nodes"][0] for p in parts]
            return [list(p["replica_nodes"]) for p in parts]
        assert time.monotonic() < deadline, f"{name} has no leaders after 30 s: {found}"
        time.sleep(0.1)


def test_new_topics_are_placed_as_a_kraft_controller_places_them(cluster: Cluster) -> None:
    """Kafka 4.4.0's StripedReplicaPlacer on three nodes. Kafka's controller draws from an unseeded
    Random, so its answer is held against every placement kgroup's placer gives over all the values its
    draws can take (``possible_placements``: each partition a rotation of the brokers, the start drawn);
    kgroup's broker (seed 0) must give one of the same. A stopped node (fenced once its controlled
    shutdown ends) gets a replica only when the live ones do not suffice, last, and leads nothing."""
    nodes = cluster.node_ids
    live, down = nodes[:-1], nodes[-1]
    with Raw(cluster.bootstrap_servers.split(",")[0]) as raw:
        placed = _placed(raw, "placed-all-up", 3, 3)
        assert placed in possible_placements([UsableBroker(n) for n in nodes], 3, 3), placed
        cluster.stop_node(down)
        try:
            fenced = [UsableBroker(n, None, n == down) for n in nodes]
            three = _placed(raw, "placed-one-down-3", 2, 3)
            assert three in possible_placements(fenced, 2, 3), three
            assert [r[-1] for r in three] == [down, down]
            two = _placed(raw, "placed-one-down-2", 2, 2)
            assert two in possible_placements(fenced, 2, 2), two
            assert all(sorted(r) == live for r in two)
        finally:
            cluster.start_node(down)


def test_a_restarted_node_does_not_take_its_groups_back(cluster: Cluster, tmp_path: Path) -> None:
    topic, group = "comeback", "comeback-group"
    cluster.create_topic(topic, 2)
    with java_consumer(cluster.bootstrap_servers, group, [topic], "c0", tmp_path) as consumer:
        wait_settled([consumer], all_partitions({topic: 2}))
        committed = {TopicPartition(topic, p): 7 for p in range(2)}
        assert consumer.commit(committed).error is None
        old = cluster.coordinator(group)
        cluster.stop_node(old)
        new = cluster.coordinator(group)
        cluster.start_node(old)
        time.sleep(1)
        # the group works wherever it is …
        assert consumer.committed(list(committed)) == committed
        assert consumer.commit(committed).error is None
        # … and it is still where it failed over to (until the preferred-leader election, 300 s)
        assert cluster.coordinator(group) == new


@pytest.mark.parametrize("kind", ["kgroup", "apache"])
def test_the_preferred_leader_election_gives_the_groups_back(kind: str, tmp_path: Path) -> None:
    """With leader.imbalance.check.interval.seconds = 10, the restarted node takes its
    __consumer_offsets partitions, and the group, back at the next election; the member's commits
    and offset fetches work throughout."""
    if kind == "apache":
        require_apache_kafka()
    interval_s = 10
    topic, group = "election", "election-group"
    with Cluster(kind, nodes=3, leader_imbalance_check_interval_s=interval_s) as cluster:
        cluster.create_topic(topic, 2)
        with java_consumer(cluster.bootstrap_servers, group, [topic], "c0", tmp_path) as consumer:
            wait_settled([consumer], all_partitions({topic: 2}))
            committed = {TopicPartition(topic, p): 3 for p in range(2)}
            assert consumer.commit(committed).error is None
            old = cluster.coordinator(group)
            cluster.stop_node(old)
            new = cluster.coordinator(group)
            assert new != old
            cluster.start_node(old)
            started = time.monotonic()
            # an election comes within one interval (Apache Kafka's restarted node must first be
            # back in the partition's ISR): bounded wait, polling FindCoordinator
            deadline = started + 2 * interval_s + 30
            while cluster.coordinator(group) != old and time.monotonic() < deadline:
                time.sleep(0.5)
            assert cluster.coordinator(group) == old, f"still at {cluster.coordinator(group)}"
            later = {TopicPartition(topic, p): 5 for p in range(2)}
            mark = consumer.mark()
            commit = consumer.commit(later)
            if commit.error == "RebalanceInProgressException":
                # Once in CI, under heavy load, the member was rebalancing when it committed (twelve runs
                # at load 8 did not show it again; its cause was not caught). Kafka's contract for that
                # answer: finish the rebalance in poll() (the driver polls throughout), commit again.
                consumer.wait_assigned(since=mark, timeout_s=60)
                commit = consumer.commit(later)
            assert commit.error is None, commit
            assert consumer.committed(list(later)) == later
