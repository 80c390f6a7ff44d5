"""What the server assignors share: Kafka's ``AssignorHelpers`` and the Java maps their results live in."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kgroup.group.assignors.api import GroupAssignment, TopicId
from kgroup.javacompat import JavaHashMap, JavaHashSet, java_integer_hash

__all__ = ["WorkingAssignment", "deep_copy", "finish", "topic_hash"]

#: a member's assignment while an assignor works on it: the caller's (never changed) or Kafka's copy
WorkingAssignment = Mapping[TopicId, Collection[int]] | JavaHashMap[TopicId, JavaHashSet[int]]


def topic_hash(topic_id: TopicId) -> int:
    return topic_id.java_hash


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
        if isinstance(assignment, JavaHashMap):
            result[member_id] = {topic: tuple(partitions) for topic, partitions in assignment.items()}
        else:
            result[member_id] = {topic: tuple(partitions) for topic, partitions in assignment.items()}
    return result
