"""Kafka's server-side ``RangeAssignor`` (``range``): contiguous ranges of each topic, members in order.

Members are ordered by instance id (static members first), then member id (``String.compareTo``); each
topic's partitions are split into consecutive ranges, the first ``partitions % subscribers`` members
getting one more. It does not look at the current assignment.
"""

from __future__ import annotations

from collections.abc import Collection

from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    TopicId,
)
from kgroup.group.assignors.common import BuilderAssignor, topic_hash
from kgroup.group.assignors.fast import kernels_ready
from kgroup.javacompat import JavaHashMap, capacity_over_load_factor, java_string_key

__all__ = ["RangeAssignor"]


class _Topic:
    """``RangeAssignor.TopicMetadata``: the topic's quota and where the next range starts."""

    __slots__ = ("extra", "members", "min_quota", "next_start", "partitions", "topic_id")

    def __init__(self, topic_id: TopicId, partitions: int, members: int) -> None:
        self.topic_id = topic_id
        self.partitions = partitions
        self.members = members
        self.min_quota = -1
        self.extra = -1
        self.next_start = 0

    def next_range(self) -> range:
        if self.min_quota == -1:
            self.min_quota, self.extra = divmod(self.partitions, self.members)
        quota = self.min_quota
        if self.extra > 0:
            quota += 1
            self.extra -= 1
        start = self.next_start
        end = min(start + quota, self.partitions)
        self.next_start = end
        return range(start, end)


def _sorted_members(group: GroupSpec) -> list[str]:
    def key(member_id: str) -> tuple[int, bytes]:
        instance_id = group.members[member_id].instance_id
        if instance_id is not None:
            return (0, java_string_key(instance_id))
        return (1, java_string_key(member_id))

    return sorted(group.members, key=key)  # stable, as List.sort is


def _partition_count(topics: SubscribedTopicDescriber, topic: TopicId) -> int:
    count = topics.num_partitions(topic)
    if count == -1:
        raise PartitionAssignorError("Member is subscribed to a non-existent topic")
    return count


def _member_assignment(ranges: list[tuple[TopicId, range]], capacity: int) -> dict[TopicId, tuple[int, ...]]:
    # a HashMap sized by Kafka's formula; RangeSet iterates its partitions in ascending order
    if len(ranges) == 1:  # one key: its order needs no map
        return {topic: tuple(partitions) for topic, partitions in ranges if len(partitions)}
    by_topic: JavaHashMap[TopicId, range] = JavaHashMap(topic_hash, capacity)
    for topic, partitions in ranges:
        if len(partitions):
            by_topic.put(topic, partitions)
    return {topic: tuple(partitions) for topic, partitions in by_topic.items()}


class RangeAssignor(BuilderAssignor):
    """``org.apache.kafka.coordinator.group.assignor.RangeAssignor``."""

    name = "range"

    def assign_fast(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
        """The closed form over integer arrays (:mod:`kgroup.group.assignors.fast.range_fast`)."""
        if not kernels_ready():  # a server still warming them: the same answer, step by step
            return None
        from kgroup.group.assignors.fast.range_fast import assign_range  # numba: imported when used

        return assign_range(group, topics)

    def build_homogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        member_ids = _sorted_members(group)
        subscription: Collection[TopicId] = group.members[member_ids[0]].subscribed_topic_ids
        counts = [(t, _partition_count(topics, t)) for t in subscription]
        # Kafka walks members × topics; only the first min(members, partitions) members of a topic get
        # a non-empty range, so walk topics × those members (each member's topics stay in topic order)
        member_count = len(member_ids)
        ranges: dict[str, list[tuple[TopicId, range]]] = {}
        for topic, count in counts:
            quota, extra = divmod(count, member_count)
            start = 0
            for rank in range(member_count if quota else extra):
                end = start + quota + (1 if rank < extra else 0)
                ranges.setdefault(member_ids[rank], []).append((topic, range(start, end)))
                start = end
        capacity = capacity_over_load_factor(len(counts))
        return {m: _member_assignment(ranges[m], capacity) if m in ranges else {} for m in member_ids}

    def build_heterogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        member_ids = _sorted_members(group)
        metadata: dict[TopicId, _Topic] = {}
        for member_id in member_ids:
            for topic in group.members[member_id].subscribed_topic_ids:
                found = metadata.get(topic)
                if found is None:
                    found = metadata[topic] = _Topic(topic, _partition_count(topics, topic), 0)
                found.members += 1
        result: dict[str, dict[TopicId, tuple[int, ...]]] = {}
        for member_id in member_ids:
            subscription = group.members[member_id].subscribed_topic_ids
            ranges = [(t, metadata[t].next_range()) for t in subscription]
            result[member_id] = _member_assignment(ranges, capacity_over_load_factor(len(subscription)))
        return result
