"""A topic's id and replicas as a Kafka 4.4.0 controller decides them (``kgroup.broker.cluster``): placed
by ``StripedReplicaPlacer`` with the cluster's one Random, a fresh random id per creation (a re-created
topic is a new topic), both kept with the topic across a restart, a request's own assignment checked
with Kafka's messages."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from kgroup.broker.broker import open_logs
from kgroup.broker.cluster import (
    Cluster,
    PartitionCountError,
    ReplicaAssignmentError,
    legacy_topic_id,
    random_topic_id,
)
from kgroup.broker.config import BrokerConfig
from kgroup.javacompat import JavaRandom
from kgroup.model import KgroupError
from kgroup.partitioning import InvalidReplicationFactor, StripedReplicaPlacer, UsableBroker


def _open(path: Path, brokers: int = 3, seed: int = 0) -> Cluster:
    return Cluster(BrokerConfig(brokers=brokers, replica_placement_seed=seed), open_logs(path, "never"))


def test_topics_are_placed_in_turn_by_one_striped_placer(tmp_path: Path) -> None:
    placer = StripedReplicaPlacer(JavaRandom(7))
    brokers = [UsableBroker(b) for b in range(4)]
    cluster = _open(tmp_path, brokers=4, seed=7)
    try:
        for name, partitions in (("a", 5), ("b", 9), ("c", 2)):
            cluster.create_topic(name, partitions, 3, {})
            assert [list(r) for r in cluster.topics[name].replicas] == placer.place(brokers, partitions, 3)
        with pytest.raises(InvalidReplicationFactor, match="only 4 broker"):
            cluster.place(3, 5)
        with pytest.raises(InvalidReplicationFactor):
            placer.place(brokers, 3, 5)
        # a refused placement drew from the Random as Kafka's does: both go on in step
        cluster.create_topic("d", 6, 2, {})
        assert [list(r) for r in cluster.topics["d"].replicas] == placer.place(brokers, 6, 2)
    finally:
        cluster.logs.close()


def test_a_recreated_topic_is_a_new_topic_and_ids_and_replicas_survive_a_restart(tmp_path: Path) -> None:
    cluster = _open(tmp_path)
    try:
        first = cluster.create_topic("orders", 4, 2, {}).topic_id
        cluster.delete_topic("orders")
        second = cluster.create_topic("orders", 4, 2, {})
        assert second.topic_id != first  # Kafka: a deleted and re-created topic has a new id
        assert cluster.topic_by_id(first) is None and cluster.topic_by_id(second.topic_id) is second
        assert second.topic_id != legacy_topic_id("orders")
    finally:
        cluster.logs.close()
    again = _open(tmp_path, seed=99)  # another seed: the kept replicas, not a new placement
    try:
        assert again.topics["orders"].topic_id == second.topic_id
        assert again.topics["orders"].replicas == second.replicas
    finally:
        again.logs.close()


def test_a_topic_made_before_ids_were_kept_keeps_its_old_id_and_placement(tmp_path: Path) -> None:
    logs = open_logs(tmp_path, "never")
    logs.create_topic("old", 3)  # as kgroup made topics before: no id, no replicas kept
    logs.close()
    cluster = _open(tmp_path)
    try:
        info = cluster.topics["old"]
        assert info.topic_id == legacy_topic_id("old")
        assert info.replicas == ((0, 1, 2), (1, 2, 0), (2, 0, 1))  # the seeds' rule it was placed by
    finally:
        cluster.logs.close()


def test_kept_replicas_naming_brokers_the_cluster_lacks_are_placed_again(tmp_path: Path) -> None:
    cluster = _open(tmp_path, brokers=3)
    cluster.create_topic("wide", 3, 3, {})
    kept = cluster.topics["wide"].topic_id
    cluster.logs.close()
    smaller = _open(tmp_path, brokers=2)
    try:
        replicas = smaller.topics["wide"].replicas
        assert len(replicas) == 3 and all(set(r) <= {0, 1} and len(r) == 2 for r in replicas)
        assert smaller.topics["wide"].topic_id == kept
    finally:
        smaller.logs.close()


def test_the_metadata_is_kept_in_the_topics_json(tmp_path: Path) -> None:
    cluster = _open(tmp_path)
    try:
        info = cluster.create_topic("t", 2, 3, {"retention.ms": "1000"})
        meta = json.loads((tmp_path / "meta" / "topics" / "t.json").read_text())
        assert meta["metadata"] == {
            "topicId": str(info.topic_id),
            "replicas": [list(r) for r in info.replicas],
        }
        assert meta["configs"] == {"retention.ms": "1000"}
    finally:
        cluster.logs.close()


def test_random_topic_ids_are_kafkas_kind() -> None:
    """``Uuid.randomUuid``: version 4, never zero or the metadata topic's id 1, and never a base64 form
    starting with '-' (Kafka's own command-line tools would read it as an option)."""
    for _ in range(2000):
        drawn = random_topic_id()
        assert drawn.version == 4 and drawn.int not in (0, 1)
        assert not base64.urlsafe_b64encode(drawn.bytes).decode().startswith("-")
    assert uuid.UUID(int=62 << 122).int >> 122 == 62  # the rule looks at the first 6 bits


def test_a_requests_own_assignment_is_checked_with_kafkas_messages(tmp_path: Path) -> None:
    cluster = _open(tmp_path)
    try:
        placed = cluster.place_manually([(1, [2, 0]), (0, [1, 2])])
        assert placed.replicas == ((1, 2), (2, 0))
        cases = [
            ([(0, [0, 1]), (0, [1, 2])], "Found multiple manual partition assignments for partition 0"),
            ([(0, [])], "The manual partition assignment includes an empty replica list."),
            (
                [(0, [0, 7])],
                "The manual partition assignment includes broker 7, but no such broker is registered.",
            ),
            ([(0, [1, 1])], "The manual partition assignment includes the broker 1 more than once."),
            (
                [(0, [0, 1]), (1, [2])],
                "The manual partition assignment includes a partition with 1 replica(s), but this is not "
                "consistent with previous partitions, which have 2 replica(s).",
            ),
            ([(0, [0]), (2, [1])], "partitions should be a consecutive 0-based integer sequence"),
        ]
        for assignments, message in cases:
            with pytest.raises(ReplicaAssignmentError) as refused:
                cluster.place_manually(assignments)
            assert refused.value.message == message
        cluster.broker_stopped(2)
        with pytest.raises(
            ReplicaAssignmentError, match="for partition 0 are fenced or in controlled shutdown"
        ):
            cluster.place_manually([(0, [2])])
    finally:
        cluster.logs.close()


def test_a_replication_factor_above_the_brokers_is_refused_at_start() -> None:
    with pytest.raises(KgroupError, match=r"^default_replication_factor: 4 is more than the 3 broker\(s\)"):
        BrokerConfig(brokers=3, default_replication_factor=4)


def test_added_partitions_are_placed_by_the_same_placer_with_the_topics_replication_factor(
    tmp_path: Path,
) -> None:
    """CreatePartitions: the controller's placer, its Random in step with a new topic's placement,
    the topic's replication factor; a request's own assignment checked with Kafka's messages; the
    grown placement kept with the topic across a restart."""
    placer = StripedReplicaPlacer(JavaRandom(3))
    brokers = [UsableBroker(b) for b in range(3)]
    cluster = _open(tmp_path, seed=3)
    try:
        info = cluster.create_topic("t", 2, 2, {})
        assert [list(r) for r in info.replicas] == placer.place(brokers, 2, 2)
        grown = cluster.place_added(info, 5, None)
        assert grown.topic_id == info.topic_id and grown.replicas[:2] == info.replicas
        assert [list(r) for r in grown.replicas[2:]] == placer.place(brokers, 3, 2)
        creation = cluster.logs.begin_partitions("t", 5, grown.log_metadata())
        creation.step(2)
        assert not creation.step(0) and creation.step(5)
        creation.finish()
        cluster.register_partitions("t", grown)
        assert cluster.topics["t"].replicas == grown.replicas and cluster.partition_log("t", 4) is not None
        cases = [
            (5, None, PartitionCountError, "Topic already has 5 partition(s)."),
            (
                4,
                None,
                PartitionCountError,
                "The topic t currently has 5 partition(s); 4 would not be an increase.",
            ),
            (
                7,
                [[0, 1]],
                ReplicaAssignmentError,
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
            ),
            (
                6,
                [[0]],
                ReplicaAssignmentError,
                "The manual partition assignment includes a partition with 1 replica(s), but this is not "
                "consistent with previous partitions, which have 2 replica(s).",
            ),
        ]
        current = cluster.topics["t"]
        for count, assigned, kind, message in cases:
            with pytest.raises(kind) as refused:
                cluster.place_added(current, count, assigned)
            assert refused.value.message == message
        cluster.broker_stopped(1)
        cluster.broker_stopped(2)
        with pytest.raises(
            ReplicaAssignmentError, match="for partition 5 are fenced or in controlled shutdown"
        ):
            cluster.place_added(current, 6, [[1, 2]])
        assert cluster.place_added(current, 6, [[2, 0]]).replicas[5] == (2, 0)
    finally:
        cluster.logs.close()
    again = _open(tmp_path, seed=99)
    try:
        assert again.topics["t"].replicas == grown.replicas
    finally:
        again.logs.close()
