"""Replica placement: every AdminUtils vector, Kafka's documented examples, the seeds' rule, errors."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kgroup.model import KgroupError
from kgroup.partitioning import Broker, assign_replicas, assign_replicas_seed_rule, rack_alternated_brokers

REPLICA_DIR = Path(__file__).parents[1] / "vectors" / "replicas"
FILES = sorted(REPLICA_DIR.glob("*.json"))


def test_all_vectors_present() -> None:
    assert len(FILES) == 60


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
