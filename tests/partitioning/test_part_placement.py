"""Replica placement: every AdminUtils and StripedReplicaPlacer vector, Kafka's documented examples, the
seeds' rule, errors."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kgroup.javacompat import JavaRandom
from kgroup.model import KgroupError
from kgroup.partitioning import (
    Broker,
    InvalidReplicationFactor,
    StripedReplicaPlacer,
    UsableBroker,
    assign_replicas,
    assign_replicas_seed_rule,
    assign_replicas_striped,
    rack_alternated_brokers,
)
from kgroup.partitioning.striped import controller_broker_order

REPLICA_DIR = Path(__file__).parents[1] / "vectors" / "replicas"
FILES = sorted(REPLICA_DIR.glob("adminutils_*.json"))
STRIPED = sorted(REPLICA_DIR.glob("striped_*.json"))


def test_all_vectors_present() -> None:
    assert (len(FILES), len(STRIPED)) == (60, 60)
    assert len(list(REPLICA_DIR.glob("*.json"))) == 120


@pytest.mark.parametrize("path", STRIPED, ids=lambda p: p.stem)
def test_striped_vector(path: Path) -> None:
    """Kafka 4.4.0's ``StripedReplicaPlacer`` answers (tests/vectors/FORMAT.md), kgroup's placer."""
    vector: dict[str, Any] = json.loads(path.read_text())
    spec = vector["input"]
    brokers = [Broker(b["id"], b["rack"]) for b in spec["brokers"]]
    fenced = [b["id"] for b in spec["brokers"] if b["fenced"]]
    expected = vector["expected"]
    if "error" in expected:
        with pytest.raises(InvalidReplicationFactor) as refused:
            assign_replicas_striped(
                brokers, spec["partitions"], spec["replicationFactor"], fenced=fenced, seed=spec["seed"]
            )
        assert f"InvalidReplicationFactorException: {refused.value.message}" == expected["error"]
    else:
        got = assign_replicas_striped(
            brokers, spec["partitions"], spec["replicationFactor"], fenced=fenced, seed=spec["seed"]
        )
        assert got == {int(p): replicas for p, replicas in expected["assignment"].items()}


def test_striped_placer_stripes_racks_and_keeps_fenced_brokers_last() -> None:
    # the javadoc's cluster: racks A, B, C of three brokers; with Random(0) (the answer Kafka gives,
    # tests/vectors/replicas/striped_000.json) each partition has one replica per rack
    brokers = [Broker(i, "ABC"[i // 3]) for i in range(9)]
    got = assign_replicas_striped(brokers, 9, 3, seed=0)
    assert all(sorted(brokers[b].rack or "" for b in r) == ["A", "B", "C"] for r in got.values())
    fenced = assign_replicas_striped([1, 2, 3], 6, 3, fenced=[3], seed=1)
    assert all(r[-1] == 3 for r in fenced.values())  # a replica only where needed, never the leader
    assert all(3 not in r for r in assign_replicas_striped([1, 2, 3], 6, 2, fenced=[3], seed=1).values())


def test_one_placer_goes_on_from_topic_to_topic() -> None:
    """A controller keeps one Random: the second topic starts where the first left the generator."""
    usable = [UsableBroker(i) for i in range(4)]
    placer = StripedReplicaPlacer(JavaRandom(0))
    first, second = placer.place(usable, 6, 3), placer.place(usable, 6, 3)
    assert first == list(assign_replicas_striped(range(4), 6, 3, seed=0).values())
    random = JavaRandom(0)
    assert assign_replicas_striped(range(4), 6, 3, random=random) == dict(enumerate(first))
    assert assign_replicas_striped(range(4), 6, 3, random=random) == dict(enumerate(second))


def test_controller_lists_brokers_in_hashmap_order() -> None:
    """BrokerHeartbeatManager's HashMap<Integer>: ascending below its bucket count, then by bucket."""
    assert [b.id for b in controller_broker_order(UsableBroker(i) for i in (5, 1, 3))] == [1, 3, 5]
    # 16 buckets: 17 lands in bucket 1 after 1 (it registered later), 16 in bucket 0
    assert [b.id for b in controller_broker_order(UsableBroker(i) for i in (17, 1, 16, 2))] == [16, 17, 1, 2]


def test_striped_placement_errors() -> None:
    with pytest.raises(
        InvalidReplicationFactor, match=r"^The target replication factor of 3 cannot be reached"
    ):
        assign_replicas_striped([1, 2], 3, 3)
    with pytest.raises(InvalidReplicationFactor, match=r"^All brokers are currently fenced"):
        assign_replicas_striped([1, 2], 3, 1, fenced=[1, 2])
    with pytest.raises(InvalidReplicationFactor, match=r"^Invalid replication factor 0"):
        assign_replicas_striped([1, 2], 3, 0)
    with pytest.raises(KgroupError, match=r"^fenced: broker 9 is not one of the brokers"):
        assign_replicas_striped([1, 2], 3, 1, fenced=[9])
    with pytest.raises(KgroupError, match=r"^partitions: 0"):
        assign_replicas_striped([1, 2], 0, 1)
    with pytest.raises(KgroupError, match=r"^brokers: none given"):
        assign_replicas_striped([], 1, 1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_adminutils_vector(path: Path) -> None:
    vector: dict[str, Any] = json.loads(path.read_text())
    spec = vector["input"]
    brokers = [Broker(b["id"], b["rack"]) for b in spec["brokers"]]
    got = assign_replicas(
        brokers,
        spec["partitions"],
        spec["replicationFactor"],
        fixed_start_index=spec["fixedStartIndex"],
        start_partition_id=spec["startPartitionId"],
    )
    expected = {int(p): replicas for p, replicas in vector["expected"]["assignment"].items()}
    assert got == expected


def test_rack_alternated_list_from_kafka_javadoc() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    brokers = [Broker(b, r) for b, r in racks.items()]
    got = assign_replicas(brokers, 7, 3, fixed_start_index=0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # the follower shift moves once the leaders wrap around
    }


def test_rack_unaware_example_from_kafka_javadoc() -> None:
    got = assign_replicas(range(5), 10, 3, fixed_start_index=0)
    assert [got[p][0] for p in range(10)] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    assert got[0] == [0, 1, 2] and got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3] and got[9] == [4, 1, 2]


def test_brokers_kept_in_given_order_and_start_partition_id() -> None:
    got = assign_replicas([5, 1, 3], 2, 2, fixed_start_index=0, start_partition_id=3)
    # partition 3 wraps the 3-broker list, so the shift is already 1
    assert got == {3: [5, 3], 4: [1, 5]}


def test_random_start_comes_from_the_injected_rng() -> None:
    a = assign_replicas(range(6), 12, 3, rng=random.Random(7))
    b = assign_replicas(range(6), 12, 3, rng=random.Random(7))
    assert a == b
    starts = {assign_replicas(range(6), 1, 1, rng=random.Random(s))[0][0] for s in range(40)}
    assert len(starts) > 1 and starts <= set(range(6))
    with pytest.raises(KgroupError, match="rng"):
        assign_replicas(range(3), 3, 2)


def test_every_partition_has_distinct_replicas_and_racks_spread() -> None:
    brokers = [Broker(i, "abc"[i % 3]) for i in range(9)]
    got = assign_replicas(brokers, 30, 3, fixed_start_index=2)
    for replicas in got.values():
        assert len(set(replicas)) == 3
        assert len({brokers[b].rack for b in replicas}) == 3


def test_seed_rule() -> None:
    assert assign_replicas_seed_rule([3, 1, 2], 4, 2) == {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]}
    assert assign_replicas_seed_rule([Broker(10, "x"), Broker(20)], 2, 1) == {0: [10], 1: [20]}


@pytest.mark.parametrize(
    ("brokers", "partitions", "rf", "message"),
    [
        ([1, 2, 3], 0, 1, r"^partitions: 0; the number of partitions must be larger than 0"),
        ([1, 2, 3], 3, 0, r"^replication_factor: 0; the replication factor must be larger than 0"),
        ([1, 2], 3, 3, r"^replication_factor: 3 larger than available brokers: 2; lower"),
        ([1, 2, 1], 3, 1, r"^brokers: broker id 1 listed more than once"),
        ([], 3, 1, r"^brokers: none given"),
        (
            [Broker(1, "a"), Broker(2), Broker(3, "b")],
            3,
            2,
            r"not all brokers have rack information \(no rack: 2\)",
        ),
    ],
)
def test_placement_errors(brokers: list[Any], partitions: int, rf: int, message: str) -> None:
    with pytest.raises(KgroupError, match=message):
        assign_replicas(brokers, partitions, rf, fixed_start_index=0)
    if "rack" not in message:
        with pytest.raises(KgroupError, match=message):
            assign_replicas_seed_rule(brokers, partitions, rf)
