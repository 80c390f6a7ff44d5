"""Kafka's ``UniformAssignor`` (``uniform``, the default server assignor) and its homogeneous builder.

Every member subscribed to the same topics (``SubscriptionType.HOMOGENEOUS``) takes
``UniformHomogeneousAssignmentBuilder``'s path: each member keeps up to its quota of what it had, the
rest is pooled and handed out in order; otherwise ``UniformHeterogeneousAssignmentBuilder``
(:mod:`kgroup.group.assignors.uniform_heterogeneous`) balances topic by topic.
"""

from __future__ import annotations

from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicId,
)
from kgroup.group.assignors.common import (
    BuilderAssignor,
    WorkingAssignment,
    deep_copy,
    finish,
    missing_topic,
    topic_hash,
)
from kgroup.group.assignors.fast import kernels_ready
from kgroup.group.assignors.fast.reuse import SeenMaps
from kgroup.group.assignors.uniform_heterogeneous import assign_heterogeneous
from kgroup.javacompat import JavaHashMap, JavaHashSet, java_integer_hash

__all__ = ["UniformAssignor", "assign_homogeneous"]


class UniformAssignor(BuilderAssignor):
    """``org.apache.kafka.coordinator.group.assignor.UniformAssignor``."""

    name = "uniform"

    def __init__(self) -> None:
        #: the current maps of this instance's last calls, as arrays (the homogeneous fast path reads
        #: only the maps it has not seen: :mod:`kgroup.group.assignors.fast.reuse`)
        self.seen_maps = SeenMaps()

    def assign_fast(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
        """Both builders over integer arrays (:mod:`kgroup.group.assignors.fast`)."""
        if not kernels_ready():  # a server still warming them: the same answer, step by step
            return None
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            from kgroup.group.assignors.fast.uniform_fast import assign_uniform_homogeneous  # numba: lazily

            return assign_uniform_homogeneous(group, topics, self.seen_maps)
        from kgroup.group.assignors.fast.uniform_heterogeneous_fast import assign_uniform_heterogeneous

        return assign_uniform_heterogeneous(group, topics)

    def build_homogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        return assign_homogeneous(group, topics)

    def build_heterogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        return assign_heterogeneous(group, topics)


def _new_int_set() -> JavaHashSet[int]:
    return JavaHashSet(java_integer_hash)


def assign_homogeneous(group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
    """``UniformHomogeneousAssignmentBuilder.build``."""
    member_ids = list(group.members)
    # the first member's subscription, copied into a HashSet: the order partitions are pooled in
    subscribed_order = list(
        JavaHashSet.copy_of(topic_hash, group.members[member_ids[0]].subscribed_topic_ids)
    )
    if not subscribed_order:
        return {}
    subscribed = set(subscribed_order)
    assigned = group.assigned_partitions()

    unassigned: list[tuple[TopicId, int]] = []
    total = 0
    for topic in subscribed_order:
        count = topics.num_partitions(topic)
        if count == -1:
            raise missing_topic(topic)
        taken = assigned.get(topic)
        if taken:
            unassigned.extend((topic, p) for p in range(count) if p not in taken)
        else:
            unassigned.extend((topic, p) for p in range(count))
        total += count

    member_count = len(member_ids)
    minimum_quota = total // member_count
    extra_left = total % member_count  # members still to get one partition more than the minimum

    # maybeRevokePartitions: each member keeps up to its quota of its current partitions
    target: dict[str, WorkingAssignment] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member_id in enumerate(member_ids):
        old = group.members[member_id].assignment
        new: JavaHashMap[TopicId, JavaHashSet[int]] | None = None
        quota = minimum_quota
        has_extra = False
        if extra_left > 0:
            quota += 1
            has_extra = True
        for topic, partitions in old.items():
            if topic in subscribed:
                if len(partitions) <= quota:
                    quota -= len(partitions)
                    continue
                for partition in partitions:
                    if quota > 0:
                        quota -= 1
                        continue
                    if new is None:
                        new = deep_copy(old)
                    kept = new[topic]
                    kept.remove(partition)
                    if len(kept) == 0:
                        new.remove(topic)
                    unassigned.append((topic, partition))
                continue
            if new is None:
                new = deep_copy(old)
            new.remove(topic)
        # a member that kept less than the minimum leaves the extra partition to those still to come
        # when enough of them remain to take every extra one
        if quota > 0 and has_extra and member_count - index > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((member_id, quota))
        if has_extra:
            extra_left -= 1
        target[member_id] = old if new is None else new

    # assignRemainingPartitions: the pool, in order, to the members with room, in member order
    next_index = 0
    pool_size = len(unassigned)
    for member_id, remaining in unfilled:
        assignment = target[member_id]
        if not isinstance(assignment, JavaHashMap):
            assignment = deep_copy(assignment)
            target[member_id] = assignment
        stop = min(next_index + remaining, pool_size)
        for topic, partition in unassigned[next_index:stop]:
            assignment.compute_if_absent(topic, _new_int_set).add(partition)
        next_index = stop
    if next_index < pool_size:
        raise PartitionAssignorError("Partitions were left unassigned")
    return finish(target)
