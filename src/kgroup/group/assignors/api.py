"""The KIP-848 server-side assignor interface, as Kafka's ``ConsumerGroupPartitionAssignor`` has it.

In the consumer rebalance protocol the group coordinator computes the target assignment itself. Its
assignor is given a :class:`GroupSpec` (every member's subscribed topic ids, current target
assignment, instance id and rack, and the subscription type) and a :class:`SubscribedTopicDescriber`
(partitions per topic id), and returns member id -> topic id -> partitions.

Kafka's answers depend on the iteration order of the Java collections it is handed and builds (member
ids in a ``HashMap``, topic ``Uuid``s and partition ``Integer``s in ``HashSet``s). Here every
collection passed in is iterated in the order the Java one would be — :func:`group_spec` and
:func:`assignment_from_record` build them as Kafka's coordinator does — and every collection returned
is in the order Kafka's would be, so a result fed back as the next current assignment stays exact.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import repeat
from typing import Protocol

from kgroup.javacompat import (
    JavaHashMap,
    JavaHashSet,
    hashmap_put_order,
    java_integer_hash,
    java_string_hash,
)
from kgroup.model import TopicId

__all__ = [
    "GroupAssignment",
    "GroupSpec",
    "InvertedTarget",
    "MemberAssignment",
    "MemberSpec",
    "PartitionAssignorError",
    "ServerAssignor",
    "SubscribedTopicDescriber",
    "SubscriptionType",
    "TopicDescriber",
    "TopicId",
    "assignment_from_record",
    "group_spec",
    "subscription_type",
    "topic_id_set",
]


def _topic_hash(topic_id: TopicId) -> int:
    return topic_id.java_hash


class SubscriptionType(Enum):
    """Kafka's ``SubscriptionType``: does every member subscribe to the same topics?"""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


#: topic id -> partitions, iterated in the order Kafka's ``Map<Uuid, Set<Integer>>`` would be
MemberAssignment = Mapping[TopicId, Collection[int]]
#: member id -> its assignment; a member absent from it gets nothing (as ``TargetAssignmentBuilder`` reads
#: it). A plain dict, or a read-only mapping that builds a member's dict when it is first read
#: (:class:`kgroup.group.assignors.fast.answer.ArrayAssignment`): callers use the ``Mapping`` API only.
GroupAssignment = Mapping[str, dict[TopicId, tuple[int, ...]]]

_EMPTY: Mapping[TopicId, Collection[int]] = {}


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka's ``MemberSubscription`` + ``MemberAssignment``).

    ``subscribed_topic_ids`` is a set iterated in Java's order (see :func:`topic_id_set`);
    ``assignment`` is the member's current target assignment (see :func:`assignment_from_record`).
    """

    subscribed_topic_ids: Collection[TopicId]
    assignment: MemberAssignment = field(default_factory=lambda: _EMPTY)
    instance_id: str | None = None
    rack_id: str | None = None


class InvertedTarget(Mapping[TopicId, Mapping[int, str]]):
    """Kafka's ``invertedTargetAssignment`` (topic -> partition -> the member whose target holds it),
    kept by the coordinator record by record (:meth:`move`), with beside each topic a ``bytearray`` of
    which partitions are assigned — what ``isPartitionAssigned`` asks — so an assignor reads a group's
    100,000 assigned partitions as a thousand byte strings, not as 100,000 dict keys."""

    __slots__ = ("_flags", "_owners")

    def __init__(self) -> None:
        self._owners: dict[TopicId, dict[int, str]] = {}
        self._flags: dict[TopicId, bytearray] = {}

    def __getitem__(self, topic: TopicId) -> Mapping[int, str]:
        return self._owners[topic]

    def __iter__(self) -> Iterator[TopicId]:
        return iter(self._owners)

    def __len__(self) -> int:
        return len(self._owners)

    def __repr__(self) -> str:
        return f"InvertedTarget({self._owners!r})"

    @property
    def flags(self) -> Mapping[TopicId, bytearray]:
        """Topic -> one byte per partition, 1 where the partition is assigned (a partition past the
        end: not); the same topics, in the same order, as the mapping itself."""
        return self._flags

    def move(
        self, member_id: str, old: Mapping[TopicId, Collection[int]], new: Mapping[TopicId, Collection[int]]
    ) -> None:
        """``member_id``'s target went from ``old`` to ``new`` (Kafka's
        ``updateInvertedTargetAssignment``: a partition it loses stays with whoever took it since)."""
        for topic in set(old) | set(new):
            old_partitions = set(old.get(topic, ()))
            new_partitions = set(new.get(topic, ()))
            owners = self._owners.setdefault(topic, {})
            flags = self._flags.setdefault(topic, bytearray())
            # (a negative partition is kept in the map, as Kafka keeps it, and has no byte: a
            # bytearray's negative index would flag a partition from the end)
            for partition in old_partitions - new_partitions:
                if owners.get(partition) == member_id:
                    del owners[partition]
                    if partition >= 0:
                        flags[partition] = 0
            for partition in new_partitions - old_partitions:
                owners[partition] = member_id
                if partition < 0:
                    continue
                if partition >= len(flags):
                    flags.extend(bytes(partition + 1 - len(flags)))
                flags[partition] = 1
            if not owners:
                del self._owners[topic]
                del self._flags[topic]


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Kafka's ``GroupSpec``: the members in ``memberIds()`` order, and the subscription type.

    ``assigned`` is Kafka's inverted target assignment (topic -> partition -> owner), consulted by
    ``isPartitionAssigned``; ``None`` derives it from the members' current assignments, which is what
    the coordinator holds whenever no departed member's assignment is still pending.

    ``assignable`` is Kafka's ``topicPartitionAllowedMap`` (a share group's initialised partitions:
    topic -> the partitions ``isPartitionAssignable`` answers true for); ``None``, a consumer group's
    spec, allows every partition.
    """

    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType
    assigned: Mapping[TopicId, Mapping[int, str]] | None = None
    assignable: Mapping[TopicId, Collection[int]] | None = None

    def is_partition_assignable(self, topic_id: TopicId, partition: int) -> bool:
        """``GroupSpecImpl.isPartitionAssignable``: in the allowed map, or any partition without one."""
        if self.assignable is None:
            return True
        allowed = self.assignable.get(topic_id)
        return allowed is not None and partition in allowed

    def assigned_partitions(self) -> dict[TopicId, Collection[int]]:
        """Topic -> the partitions ``isPartitionAssigned`` answers true for."""
        if self.assigned is not None:
            return {topic: owners.keys() for topic, owners in self.assigned.items()}
        found: dict[TopicId, set[int]] = {}
        for member in self.members.values():
            for topic, partitions in member.assignment.items():
                found.setdefault(topic, set()).update(partitions)
        return dict(found)


class SubscribedTopicDescriber(Protocol):
    """Kafka's ``SubscribedTopicDescriber``."""

    def num_partitions(self, topic_id: TopicId) -> int:
        """The topic's partition count, or -1 if the topic is not in the metadata."""
        ...

    def racks_for_partition(self, topic_id: TopicId, partition: int) -> frozenset[str]:
        """The racks of the partition's replicas (the assignors of this release do not use them)."""
        ...


@dataclass(frozen=True, slots=True)
class TopicDescriber:
    """A :class:`SubscribedTopicDescriber` over a plain mapping (``SubscribedTopicDescriberImpl``'s role)."""

    partitions: Mapping[TopicId, int]
    racks: Mapping[TopicId, Sequence[Collection[str]]] = field(default_factory=dict)

    def num_partitions(self, topic_id: TopicId) -> int:
        return self.partitions.get(topic_id, -1)

    def partition_counts(self, topic_ids: Iterable[TopicId]) -> list[int]:
        """:meth:`num_partitions` of each topic, in one pass (kgroup's; the assignors' inputs use it)."""
        return list(map(self.partitions.get, topic_ids, repeat(-1)))

    def racks_for_partition(self, topic_id: TopicId, partition: int) -> frozenset[str]:
        per_partition = self.racks.get(topic_id)
        if per_partition is None or partition >= len(per_partition):
            return frozenset()
        return frozenset(per_partition[partition])


class PartitionAssignorError(Exception):
    """Kafka's ``PartitionAssignorException``: the assignor cannot assign this group (unknown topic, …)."""


class ServerAssignor(ABC):
    """Kafka's ``ConsumerGroupPartitionAssignor``: a pure function of the group spec and topic metadata."""

    #: the name a consumer asks for (``group.remote.assignor``) and the broker configures
    name: str = ""

    @abstractmethod
    def assign(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        """The new target assignment (raises :class:`PartitionAssignorError` as Kafka throws)."""


# --- building the inputs as Kafka's coordinator does ------------------------------------------------


def subscription_type(subscriptions: Iterable[Collection[object]]) -> SubscriptionType:
    """``ModernGroup.subscriptionType``: homogeneous when every subscribed topic has every member."""
    counts: dict[object, int] = {}
    members = 0
    for topics in subscriptions:
        members += 1
        for topic in set(topics):
            counts[topic] = counts.get(topic, 0) + 1
    if all(count == members for count in counts.values()):
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def topic_id_set(topic_ids: Iterable[TopicId]) -> tuple[TopicId, ...]:
    """``new HashSet<>(topicIds)``: the ids in the order that set iterates them."""
    return tuple(JavaHashSet.copy_of(_topic_hash, topic_ids))


def assignment_from_record(
    partitions: Iterable[tuple[TopicId, Iterable[int]]],
) -> dict[TopicId, tuple[int, ...]]:
    """``Assignment.fromRecord``: a ``HashMap`` filled in record order, each topic's partitions a ``HashSet``.

    A target-assignment record lists a member's topics in the order the assignor's result iterated
    them; the coordinator's replay turns it back into the map the next assignment starts from.
    """
    by_topic: JavaHashMap[TopicId, tuple[int, ...]] = JavaHashMap(_topic_hash)
    for topic, topic_partitions in partitions:
        if topic not in by_topic:
            by_topic.put(topic, tuple(JavaHashSet.copy_of(java_integer_hash, topic_partitions)))
    return {topic: partitions_ for topic, partitions_ in by_topic.items()}


def group_spec(
    members: Iterable[tuple[str, MemberSpec]],
    subscription: SubscriptionType | None = None,
    assigned: Mapping[TopicId, Mapping[int, str]] | None = None,
    assignable: Mapping[TopicId, Collection[int]] | None = None,
) -> GroupSpec:
    """A :class:`GroupSpec` as ``TargetAssignmentBuilder`` builds it: members ``put`` into a ``HashMap``
    in the given order (the group's own member order), so ``memberIds()`` iterates in that map's order.
    ``subscription`` defaults to :func:`subscription_type` over the members' subscriptions;
    ``assignable`` is a share group's initialised partitions (see :class:`GroupSpec`)."""
    listed = list(members)
    order = hashmap_put_order([member_id for member_id, _ in listed])
    if order is None:  # a bucket overfull on the way: the map itself, put by put
        by_id: JavaHashMap[str, MemberSpec] = JavaHashMap(java_string_hash)
        for member_id, member in listed:
            by_id.put(member_id, member)
        ordered = dict(by_id.items())
    else:
        given = dict(listed)  # a member listed twice: its last spec, as put leaves it
        ordered = {member_id: given[member_id] for member_id in order}
    if subscription is None:
        subscription = subscription_type(m.subscribed_topic_ids for m in ordered.values())
    return GroupSpec(ordered, subscription, assigned, assignable)
