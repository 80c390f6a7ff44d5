"""Reading the ``server-*`` vectors (tests/vectors/FORMAT.md) into kgroup's server-assignor inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.group.assignors import (
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    assignment_from_record,
    group_spec,
    subscription_type,
    topic_id_set,
)
from kgroup.javacompat import java_string_key

VECTORS = Path(__file__).parent.parent.parent / "vectors"

#: server-uniform vectors (recorded at trunk 1eb7644) whose answer Kafka 4.x changed: KAFKA-18688
#: ("Fix uniform homogeneous assignor stability", apache/kafka#19677, 2025) — in a homogeneous group a
#: member whose current assignment leaves it below the quota no longer uses up one of the "extra
#: partition" slots, so a different member gets the remainder partition. Same per-member counts.
#: tests/apache_kafka/test_oracle_vectors.py checks against 4.4.0 that exactly these changed.
SERVER_UNIFORM_CHANGED_BY_KAFKA_4 = frozenset(
    {
        "chain_003_round_0",
        "chain_004_round_0",
        "chain_004_round_1",
        "chain_008_round_0",
        "chain_014_round_0",
        "chain_015_round_1",
        "chain_015_round_2",
        "chain_018_round_0",
        "chain_024_round_0",
        "chain_026_round_0",
    }
)


@dataclass(frozen=True)
class ServerVector:
    path: Path
    assignor: str  # "uniform" or "range"
    spec: GroupSpec
    topics: TopicDescriber
    names: dict[TopicId, str]
    expected: dict[str, list[str]]
    expected_type: str
    expected_order: list[str]


def split_partition(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition("-")
    return topic, int(partition)


def assignment_strings(assignment: dict[TopicId, tuple[int, ...]], names: dict[TopicId, str]) -> list[str]:
    """``topic-partition`` strings sorted as the vectors sort them (String.compareTo, then partition)."""
    pairs = sorted(
        ((names[t], p) for t, ps in assignment.items() for p in ps),
        key=lambda x: (java_string_key(x[0]), x[1]),
    )
    return [f"{t}-{p}" for t, p in pairs]


def load(path: Path) -> ServerVector:
    raw: dict[str, Any] = json.loads(path.read_text())
    ids = {name: TopicId.from_string(text) for name, text in raw["expected"]["topicIds"].items()}
    for topic in raw["input"]["topics"]:
        if "topicId" in topic:
            ids[topic["name"]] = TopicId.from_string(topic["topicId"])
    counts = {ids[t["name"]]: t["partitions"] for t in raw["input"]["topics"]}
    members: list[tuple[str, MemberSpec]] = []
    for member in raw["input"]["members"]:
        by_topic: dict[TopicId, list[int]] = {}
        for text in member.get("assignment", []):
            name, partition = split_partition(text)
            by_topic.setdefault(ids[name], []).append(partition)
        members.append(
            (
                member["memberId"],
                MemberSpec(
                    topic_id_set(ids[name] for name in member["topics"] if name in ids),
                    assignment_from_record(by_topic.items()),
                    member.get("instanceId"),
                    member.get("rackId"),
                ),
            )
        )
    kind = subscription_type(set(m["topics"]) for m in raw["input"]["members"])
    spec = group_spec(members, kind)
    return ServerVector(
        path=path,
        assignor=raw["assignor"].removeprefix("server-"),
        spec=spec,
        topics=TopicDescriber(counts),
        names={v: k for k, v in ids.items()},
        expected=raw["expected"]["assignment"],
        expected_type=raw["expected"]["subscriptionType"],
        expected_order=raw["expected"]["memberIterationOrder"],
    )


def all_paths() -> list[Path]:
    return sorted((VECTORS / "server-uniform").glob("*.json")) + sorted(
        (VECTORS / "server-range").glob("*.json")
    )


__all__ = ["ServerVector", "SubscriptionType", "all_paths", "assignment_strings", "load", "split_partition"]
