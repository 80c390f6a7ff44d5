"""The differential suite, the target assignment join by join: members join a KIP-848 group one after
another (raw ConsumerGroupHeartbeat v1, fixed member ids), on kgroup's broker and on Apache Kafka 4.4.0,
both computing a target assignment at every group epoch (``group.consumer.assignment.interval.ms=0``);
after every join and leave both groups are described and must agree: group and assignment epochs,
every member's epoch and target.

Which members keep the extra partitions of an uneven split follows the order the coordinator fills
the assignor's ``GroupSpec`` in — its ``HashMap`` of member ids, filled by iterating the group's
``TimelineHashMap`` of members — so members whose ids share a bucket must come in Kafka's order
(the ids below do: with a join order of their own, kgroup gave the 7th join's extra partition to
another member than Kafka). A second topic that only some members subscribe to takes the
heterogeneous assignor's path; the leaves and a rejoin change the member table after it grew. A
second group's ids tell whether that table doubles on every put, a member's update too, as Kafka's
``BaseHashTable`` does (grown only for new members, it would have 4 slots instead of 8 at the 6th
join, and another two members would keep the extra partitions of 32).
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator

from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka

pytestmark = pytest.mark.slow

_NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def _member_ids(count: int, seed: int) -> list[str]:
    """Client-made member ids, as Kafka's consumer makes them (a random UUID, base64url)."""
    rng = random.Random(seed)
    return [
        base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")
        for _ in range(count)
    ]


@dataclass(frozen=True)
class Scenario:
    group: str
    partitions: dict[str, int]  # topic -> partitions
    members: list[str]
    #: (member index, topics it joins with — None: it leaves)
    steps: tuple[tuple[int, tuple[str, ...] | None], ...]


ONE, TWO = "target-order-a", "target-order-b"
#: the first nine subscribe to one topic, the last three to both; two leave; one of them comes back
#: (as a new member: it goes after the others in the member table)
JOINS = Scenario(
    "target-order",
    {ONE: 30, TWO: 7},
    _member_ids(12, 1),
    (
        *((i, (ONE,)) for i in range(9)),
        *((i, (ONE, TWO)) for i in range(9, 12)),
        (2, None),
        (6, None),
        (2, (ONE,)),
    ),
)
TABLE = Scenario(
    "target-order-table",
    {"target-order-c": 32},
    _member_ids(6, 45),
    tuple((i, ("target-order-c",)) for i in range(6)),
)


def _heartbeat(raw: Raw, group: str, member_id: str, epoch: int, topics: Sequence[str] | None) -> Any:
    body = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 300_000 if epoch == 0 else -1,
        "subscribed_topic_names": list(topics) if topics is not None else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    deadline = time.monotonic() + 30
    while True:
        answer = raw.call("ConsumerGroupHeartbeat", 1, body)
        if answer["error_code"] not in _NOT_READY or time.monotonic() > deadline:
            assert answer["error_code"] == 0, answer
            return answer
        time.sleep(0.2)


def _described(raw: Raw, group_id: str) -> dict[str, Any]:
    answer = raw.call(
        "ConsumerGroupDescribe", 1, {"group_ids": [group_id], "include_authorized_operations": False}
    )
    (group,) = answer["groups"]
    assert group["error_code"] == 0, group

    def target(member: Any) -> dict[str, list[int]]:
        return {
            tp["topic_name"]: sorted(tp["partitions"])
            for tp in member["target_assignment"]["topic_partitions"]
            if tp["partitions"]
        }

    return {
        "group epoch": group["group_epoch"],
        "assignment epoch": group["assignment_epoch"],
        "members": {m["member_id"]: (m["member_epoch"], target(m)) for m in group["members"]},
    }


def _play(bootstrap_servers: str, scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's steps on one broker; the group as described after each."""
    with Raw(bootstrap_servers) as raw:
        for name, partitions in scenario.partitions.items():
            create_topic(raw, name, partitions)
    seen = []
    with Raw(find_coordinator(bootstrap_servers, scenario.group)) as raw:
        for index, topics in scenario.steps:
            member_id = scenario.members[index]
            _heartbeat(raw, scenario.group, member_id, 0 if topics else -1, topics)
            seen.append(_described(raw, scenario.group))
    return seen


def test_every_target_matches_kafkas_join_by_join() -> None:
    require_apache_kafka()
    scenarios = (JOINS, TABLE)
    with ApacheKafka(configs={"group.consumer.assignment.interval.ms": 0}) as kafka:
        expected = [_play(kafka.bootstrap_servers, scenario) for scenario in scenarios]
    with KafkaBroker(group_consumer_assignment_interval_ms=0) as broker:
        observed = [_play(broker.bootstrap_servers, scenario) for scenario in scenarios]
    for scenario, ours, kafkas in zip(scenarios, observed, expected, strict=True):
        assert len(ours) == len(kafkas) == len(scenario.steps)
        for step, (index, topics) in enumerate(scenario.steps):
            what = f"{scenario.group}, step {step + 1}: {scenario.members[index]} {topics or 'leaves'}"
            assert ours[step] == kafkas[step], what
    # the scenarios do what they say: the splits are uneven (two members keep 5 of 30, two 6 of 32),
    # every member ends in but the one that left for good
    joins, table = expected
    assert sorted(len(target[ONE]) for _, target in joins[6]["members"].values()) == [4] * 5 + [5] * 2
    assert set(joins[-1]["members"]) == set(JOINS.members) - {JOINS.members[6]}
    assert sorted(len(t["target-order-c"]) for _, t in table[-1]["members"].values()) == [5] * 4 + [6] * 2
