"""Kafka's ``UniformHeterogeneousAssignmentBuilder``: the uniform assignor when subscriptions differ.

Members keep what they own of the topics they still subscribe to; unowned partitions go, topic by
topic (most partitions per subscriber first), to the least loaded subscriber; then up to 16 rounds move
partitions from the most to the least loaded subscribers of each shared topic until every topic's
subscribers are within one partition of each other or nothing moves. Members are small integers (their
position in ``memberIds()``), which is also the last tie-break, as in Kafka.
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
from kgroup.group.assignors.common import WorkingAssignment, deep_copy, finish, missing_topic
from kgroup.javacompat import JavaHashMap, JavaHashSet, capacity_over_load_factor, java_integer_hash

__all__ = ["assign_heterogeneous"]

_MAX_ITERATION_COUNT = 16


class _Balancer:
    """``MemberAssignmentBalancer``: walks a topic's subscribers from least / most loaded inwards."""

    __slots__ = (
        "least_count",
        "least_end",
        "most_count",
        "most_end",
        "most_start",
        "next_least",
        "next_most",
        "sizes",
        "sorted",
    )

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        """Sort the subscribers by load (then index); returns the spread between the extremes."""
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda m: (sizes[m], m))
        first, last = sizes[self.sorted[0]], sizes[self.sorted[-1]]
        self.least_end = 0
        self.least_count = first - 1
        self.next_least = 0
        self.most_start = len(self.sorted)
        self.most_end = len(self.sorted)
        self.most_count = last + 1
        self.next_most = len(self.sorted) - 1
        return last - first

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            sizes, ordered = self.sizes, self.sorted
            while self.least_end < len(ordered) and sizes[ordered[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        sizes, ordered = self.sizes, self.sorted
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[ordered[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[ordered[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = ordered[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        ordered = self.sorted
        member = ordered[self.next_most + 1]
        ordered[self.next_most + 1] = ordered[self.most_end - 1]
        ordered[self.most_end - 1] = member
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    def __init__(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> None:
        self.group = group
        self.topics = topics
        self.member_ids = list(group.members)
        self.subscribed: set[TopicId] = set()
        self.subscribers: dict[TopicId, list[int]] = {}
        self.sizes = [0] * len(self.member_ids)
        self.partition_counts: dict[TopicId, int] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic in group.members[member_id].subscribed_topic_ids:
                count = topics.num_partitions(topic)
                if count == -1:
                    raise missing_topic(topic)
                self.partition_counts[topic] = count
                self.subscribed.add(topic)
                self.subscribers.setdefault(topic, []).append(index)
        self.owners: dict[TopicId, list[int]] = {t: [-1] * self.partition_counts[t] for t in self.subscribed}
        self.target: dict[str, WorkingAssignment] = {}

    def topic_order_key(self, topic: TopicId) -> tuple[float, int, TopicId]:
        # most partitions per subscriber first, then fewer subscribers, then Uuid.compareTo
        subscribers = len(self.subscribers[topic])
        return (-(self.partition_counts[topic] / subscribers), subscribers, topic)

    def sort_topics(self, topic_ids: Collection[TopicId]) -> list[TopicId]:
        return sorted(topic_ids, key=self.topic_order_key)

    def build(self) -> GroupAssignment:
        if not self.subscribed:
            return {}
        self.maybe_revoke_partitions()
        self.assign_remaining_partitions()
        self.balance()
        return finish(self.target)

    def maybe_revoke_partitions(self) -> None:
        for index, member_id in enumerate(self.member_ids):
            member = self.group.members[member_id]
            old = member.assignment
            new: JavaHashMap[TopicId, JavaHashSet[int]] | None = None
            subscribed = member.subscribed_topic_ids
            for topic, partitions in old.items():
                if topic in subscribed:
                    self.sizes[index] += len(partitions)
                    owners = self.owners[topic]
                    for partition in partitions:
                        if not 0 <= partition < len(owners):
                            # Kafka's array store throws (ArrayIndexOutOfBoundsException): a current
                            # assignment naming a partition the topic no longer has fails the assignment
                            raise PartitionAssignorError(
                                f"member {member_id} is assigned partition {partition} of topic {topic}, "
                                f"which has {len(owners)} partitions"
                            )
                        owners[partition] = index
                    continue
                if new is None:
                    new = deep_copy(old)
                new.remove(topic)
            self.target[member_id] = old if new is None else new

    def assign_remaining_partitions(self) -> None:
        unassigned: dict[TopicId, list[int]] = {}
        for topic in self.subscribed:
            owners = self.owners[topic]
            free = [p for p, owner in enumerate(owners) if owner == -1]
            if free:
                unassigned[topic] = free
        balancer = _Balancer(self.sizes)
        for topic in self.sort_topics(unassigned.keys()):
            balancer.initialize(self.subscribers[topic])
            for partition in unassigned[topic]:
                self.assign_partition(topic, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        shared = [t for t in self.subscribed if len(self.subscribers[t]) >= 2]
        if not shared:
            return
        ordered = self.sort_topics(shared)
        last_rebalanced = -1
        balancer = _Balancer(self.sizes)
        for _ in range(_MAX_ITERATION_COUNT):
            for topic_index, topic in enumerate(ordered):
                if topic_index == last_rebalanced:
                    return  # a full round without a move
                moved = self.balance_topic(topic, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = topic_index

    def balance_topic(self, topic: TopicId, balancer: _Balancer) -> int:
        moved = 0
        owners = self.owners[topic]
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return moved
        # the topic's partitions grouped by owner: each owner's run is [start, end)
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, partition in enumerate(partitions):
            owner = owners[partition]
            start.setdefault(owner, i)
            end[owner] = i + 1
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1 or (most in end and end[most] - start[most] > 0):
                    break
                balancer.exclude_most_loaded()
            if most == -1:
                break
            partition = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.assign_partition(topic, partition, least)
            moved += 1
        return moved

    def assign_partition(self, topic: TopicId, partition: int, member_index: int) -> None:
        old_owner = self.owners[topic][partition]
        if old_owner != -1:
            self.remove_partition(topic, partition, old_owner)
        self.add_partition(topic, partition, member_index)

    def _mutable(self, member_index: int) -> JavaHashMap[TopicId, JavaHashSet[int]]:
        member_id = self.member_ids[member_index]
        assignment = self.target[member_id]
        if not isinstance(assignment, JavaHashMap):
            assignment = deep_copy(assignment)
            self.target[member_id] = assignment
        return assignment

    def add_partition(self, topic: TopicId, partition: int, member_index: int) -> None:
        assignment = self._mutable(member_index)
        subscribers = len(self.subscribers[topic])
        per_subscriber = (self.partition_counts[topic] + subscribers - 1) // subscribers

        def new_set() -> JavaHashSet[int]:
            return JavaHashSet(java_integer_hash, capacity_over_load_factor(per_subscriber))

        assignment.compute_if_absent(topic, new_set).add(partition)
        self.owners[topic][partition] = member_index
        self.sizes[member_index] += 1

    def remove_partition(self, topic: TopicId, partition: int, member_index: int) -> None:
        assignment = self._mutable(member_index)
        partitions = assignment.get(topic)
        if partitions is not None:
            partitions.remove(partition)
            if len(partitions) == 0:
                assignment.remove(topic)
        self.owners[topic][partition] = -1
        self.sizes[member_index] -= 1


def assign_heterogeneous(group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
    """``UniformHeterogeneousAssignmentBuilder.build``."""
    return _Builder(group, topics).build()
