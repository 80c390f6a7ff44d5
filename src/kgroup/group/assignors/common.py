"""What the server assignors share: their two builders' dispatch, Kafka's ``AssignorHelpers`` and the
Java maps their results live in."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Collection, Mapping

from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    ServerAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicId,
)
from kgroup.javacompat import JavaHashMap, JavaHashSet, java_integer_hash

__all__ = [
    "BuilderAssignor",
    "WorkingAssignment",
    "deep_copy",
    "desired_assignment_counts",
    "finish",
    "missing_topic",
    "topic_hash",
]

#: a member's assignment while an assignor works on it: the caller's (never changed) or Kafka's copy
WorkingAssignment = Mapping[TopicId, Collection[int]] | JavaHashMap[TopicId, JavaHashSet[int]]


class BuilderAssignor(ServerAssignor):
    """A server assignor as Kafka writes each of its own: an empty group gets nothing, else one builder
    per :class:`SubscriptionType` answers (:meth:`assign_reference`); :meth:`assign_fast`, where an
    assignor has a fast path over integer arrays (:mod:`kgroup.group.assignors.fast`), answers the same
    first, or ``None`` where it steps aside."""

    def assign(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        if not group.members:
            return {}
        result = self.assign_fast(group, topics)
        return self.assign_reference(group, topics) if result is None else result

    def assign_fast(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
        """The fast path's answer (exactly :meth:`assign_reference`'s), or ``None``: none here."""
        return None

    def assign_reference(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        """Kafka's builders step by step over Python objects: the readable spec of a fast path."""
        if not group.members:
            return {}
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            return self.build_homogeneous(group, topics)
        return self.build_heterogeneous(group, topics)

    @abstractmethod
    def build_homogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        """Every member subscribes to the same topics."""

    @abstractmethod
    def build_heterogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        """The members' subscriptions differ."""


def topic_hash(topic_id: TopicId) -> int:
    return topic_id.java_hash


def missing_topic(topic: object) -> PartitionAssignorError:
    """What the uniform and simple assignors throw for a subscribed topic the metadata lacks."""
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
    )


def deep_copy(assignment: Mapping[TopicId, Collection[int]]) -> JavaHashMap[TopicId, JavaHashSet[int]]:
    """``AssignorHelpers.deepCopyAssignment``: ``new HashMap<>(size)``, each set ``new HashSet<>(set)``."""
    copy: JavaHashMap[TopicId, JavaHashSet[int]] = JavaHashMap(topic_hash, len(assignment))
    for topic, partitions in assignment.items():
        copy.put(topic, JavaHashSet.copy_of(java_integer_hash, partitions))
    return copy


def finish(target: Mapping[str, WorkingAssignment]) -> GroupAssignment:
    """The result as plain dicts and tuples, each in the order Kafka's collections iterate."""
    result: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    for member_id, assignment in target.items():
        result[member_id] = {topic: tuple(partitions) for topic, partitions in assignment.items()}
    return result


def desired_assignment_counts(members: int, partitions: int) -> tuple[int, list[int]]:
    """``desiredSharing`` and each member's quota, as both builders compute them (Java doubles)."""
    sharing = 0 if partitions == 0 else (members + partitions - 1) // partitions
    precise = (sharing * partitions) / float(members)
    counts = [math.ceil(precise * float(i + 1)) - math.ceil(precise * float(i)) for i in range(members)]
    return sharing, counts
