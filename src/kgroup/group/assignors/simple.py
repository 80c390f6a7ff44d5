"""Kafka's ``SimpleAssignor`` (``simple``, the share groups' server assignor, KIP-932) as 4.4.0 runs it.

Balance first, stickiness second. A partition is shared by ``desiredSharing = ceil(M / P)`` members
(one when members do not outnumber partitions), and member ``i`` (in ``memberIds()`` order) is due
``ceil(x * (i + 1)) - ceil(x * i)`` partitions, ``x = desiredSharing * P / M``. Only the partitions
the spec calls assignable (a share group's initialised ones) are targets. Each member keeps what it
had of its subscribed topics; then members over their quota and partitions shared by too many give
some up; then the partitions still short of sharers go round the members still short of partitions.

Two builders, as in Kafka: ``SimpleHomogeneousAssignmentBuilder`` (one subscription) over every
topic at once, and ``SimpleHeterogeneousAssignmentBuilder``, the same steps topic by topic over each
topic's subscribers. Which member gets which partition follows the iteration order of Kafka's
``HashMap`` / ``HashSet`` working collections (a ``TopicIdPartition`` hashes as a Java record,
``31 * topicId.hashCode() + partition``), reproduced with :class:`kgroup.javacompat.JavaHashMap`.
The steps and their order are those of the 4.4.0 bytecode (the homogeneous builder revokes from
overfilled members before over-shared partitions, as the heterogeneous one does).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

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
    desired_assignment_counts,
    finish,
    missing_topic,
    topic_hash,
)
from kgroup.group.assignors.fast import kernels_ready
from kgroup.javacompat import (
    JavaHashMap,
    JavaHashSet,
    capacity_over_load_factor,
    int32,
    java_integer_hash,
)

__all__ = ["SimpleAssignor", "desired_assignment_counts"]

#: Kafka's ``TopicIdPartition`` (a record of a topic id and a partition)
_TopicPartition = tuple[TopicId, int]
_K = TypeVar("_K")


def _tp_hash(tp: _TopicPartition) -> int:
    """A Java record's ``hashCode``: ``31 * topicId.hashCode() + partition``."""
    return int32(31 * tp[0].java_hash + tp[1])


def _sized(count: int) -> int:
    """``AssignorHelpers.newHashMap(n)`` / ``newHashSet(n)``: ``(int) ((n + 1) / 0.75f + 1.0f)``."""
    return capacity_over_load_factor(count + 1)


def _int_set(capacity: int | None = None) -> JavaHashSet[int]:
    return JavaHashSet(java_integer_hash, capacity)


def _restart(unfilled: JavaHashSet[int]) -> list[int]:
    """``memberIterator = unfilledMembers.iterator()`` then ``next()``: on a set emptied while a
    partition still wants sharers (members filled by partitions kept outside the targets), Java's
    ``next()`` throws ``NoSuchElementException`` and the assignment fails."""
    members = list(unfilled)
    if not members:
        raise PartitionAssignorError(
            "NoSuchElementException: no unfilled member left for a partition short of sharers"
        )
    return members


def _assign_remaining(
    by_partition: JavaHashMap[_K, JavaHashSet[int]],
    unfilled: JavaHashSet[int],
    sharing: int,
    desired: list[int],
    give: Callable[[int, _K], int],
) -> None:
    """``assignRemainingPartitions``: each partition short of ``sharing`` holders goes round the
    members still short of partitions (``unfilled``, in that set's order, on from where the last
    partition stopped, a pass that assigns nothing ending it); ``give(member, partition)`` adds the
    partition to the member and answers how many the member holds now."""
    if not len(unfilled):
        return
    members = list(unfilled)
    at = 0
    assigned_this_pass = False
    for partition, holders in by_partition.items():
        if len(holders) < sharing:
            to_make = sharing - len(holders)
            while to_make > 0:
                if at == len(members):
                    if not assigned_this_pass:
                        break
                    members = _restart(unfilled)
                    at = 0
                    assigned_this_pass = False
                member = members[at]
                at += 1
                if member in holders:
                    continue
                to_make -= 1
                assigned_this_pass = True
                if give(member, partition) >= desired[member]:
                    unfilled.remove(member)
        if not len(unfilled):
            break


class SimpleAssignor(BuilderAssignor):
    """``org.apache.kafka.coordinator.group.assignor.SimpleAssignor``."""

    name = "simple"

    def assign_fast(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
        """The homogeneous builder over integer arrays (:mod:`kgroup.group.assignors.fast.simple_fast`)."""
        if not kernels_ready() or group.subscription_type is not SubscriptionType.HOMOGENEOUS:
            return None
        from kgroup.group.assignors.fast.simple_fast import assign_simple_homogeneous  # numba: lazily

        return assign_simple_homogeneous(group, topics)

    def build_homogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        return _Homogeneous(group, topics).build()

    def build_heterogeneous(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        return _Heterogeneous(group, topics).build()


class _Builder:
    """What both builders keep: the members (their index in ``memberIds()``), their current maps
    (``oldGroupAssignment``, never changed) and Kafka's deep copies of the maps it changes."""

    def __init__(self, group: GroupSpec) -> None:
        self.member_ids = list(group.members)
        # oldGroupAssignment: Integer keys in a table bigger than the member count iterate in index order
        self.old: list[Mapping[TopicId, Collection[int]]] = [
            group.members[m].assignment for m in self.member_ids
        ]
        self.new: dict[int, JavaHashMap[TopicId, JavaHashSet[int]]] = {}

    def _copy(self, member: int) -> JavaHashMap[TopicId, JavaHashSet[int]]:
        copy = self.new.get(member)
        if copy is None:
            copy = self.new[member] = deep_copy(self.old[member])
        return copy

    def _target(self) -> GroupAssignment:
        """Each member's new map, or its own when the builder left it alone."""
        target: dict[str, WorkingAssignment] = {}
        for index, member_id in enumerate(self.member_ids):
            target[member_id] = self.new.get(index, self.old[index])
        return finish(target)


class _Homogeneous(_Builder):
    """``SimpleHomogeneousAssignmentBuilder``: members are their index in ``memberIds()``."""

    def __init__(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> None:
        super().__init__(group)
        first = group.members[self.member_ids[0]]
        self.subscribed: Collection[TopicId] = first.subscribed_topic_ids
        self.subscribed_set = set(self.subscribed)
        count = len(self.member_ids)
        self.targets: list[_TopicPartition] = []
        for topic in self.subscribed:
            partitions = topics.num_partitions(topic)
            if partitions == -1:
                raise missing_topic(topic)
            self.targets.extend(
                (topic, p) for p in range(partitions) if group.is_partition_assignable(topic, p)
            )
        self.sharing, self.desired = desired_assignment_counts(count, len(self.targets))
        self.by_partition: JavaHashMap[_TopicPartition, JavaHashSet[int]] = JavaHashMap(
            _tp_hash, _sized(len(self.targets))
        )
        self.by_member: JavaHashMap[int, JavaHashSet[_TopicPartition]] = JavaHashMap(
            java_integer_hash, _sized(count)
        )
        self.unfilled: JavaHashSet[int] = _int_set(_sized(count))
        self.overfilled: JavaHashSet[int] = _int_set(_sized(count))

    def build(self) -> GroupAssignment:
        if not self.subscribed_set:
            return {}
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for tp in self.targets:
            self.by_partition.compute_if_absent(tp, _int_set)
        self._assign_remaining()
        return self._target()

    def _revoke_unassignable(self) -> None:
        for member, old in enumerate(self.old):
            assigned = 0
            desired = self.desired[member]
            copy: JavaHashMap[TopicId, JavaHashSet[int]] | None = None
            for topic, partitions in old.items():
                if topic in self.subscribed_set:
                    for partition in partitions:
                        tp = (topic, partition)
                        assigned += 1
                        self.by_partition.compute_if_absent(tp, _int_set).add(member)
                        self.by_member.compute_if_absent(member, lambda: JavaHashSet(_tp_hash)).add(tp)
                        if assigned >= desired and copy is None:
                            copy = deep_copy(old)
                else:
                    if copy is None:
                        copy = deep_copy(old)
                    copy.remove(topic)
            if copy is not None:
                self.new[member] = copy
            if assigned < desired:
                self.unfilled.add(member)
            elif assigned > desired:
                self.overfilled.add(member)

    def _revoke_overfilled(self) -> None:
        for member in list(self.overfilled):
            desired = self.desired[member]
            held = self.by_member[member]
            if len(held) <= desired:
                continue
            for tp in list(held):
                self.new[member][tp[0]].remove(tp[1])
                self.by_partition[tp].remove(member)
                held.remove(tp)
                if len(held) == desired:
                    break

    def _revoke_overshared(self) -> None:
        for tp, members in list(self.by_partition.items()):
            count = len(members)
            if count <= self.sharing:
                continue
            for member in list(members):
                partitions = self._copy(member).get(tp[0])
                if partitions is not None and tp[1] in partitions:
                    partitions.remove(tp[1])
                    count -= 1
                    members.remove(member)
                    self.by_member[member].remove(tp)
                    self.unfilled.add(member)
                if count <= self.sharing:
                    break

    def _assign_remaining(self) -> None:
        def give(member: int, tp: _TopicPartition) -> int:
            self._copy(member).compute_if_absent(tp[0], _int_set).add(tp[1])
            held = self.by_member.compute_if_absent(member, lambda: JavaHashSet(_tp_hash))
            held.add(tp)
            return len(held)

        _assign_remaining(self.by_partition, self.unfilled, self.sharing, self.desired, give)


class _Heterogeneous(_Builder):
    """``SimpleHeterogeneousAssignmentBuilder``: the homogeneous steps topic by topic."""

    def __init__(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> None:
        super().__init__(group)
        count = len(self.member_ids)
        self.count = count
        self.subscribed: JavaHashSet[TopicId] = JavaHashSet(topic_hash)
        for member_id in self.member_ids:
            for topic in group.members[member_id].subscribed_topic_ids:
                self.subscribed.add(topic)
        self.targets: dict[TopicId, list[int]] = {}
        for topic in self.subscribed:
            partitions = topics.num_partitions(topic)
            if partitions == -1:
                raise missing_topic(topic)
            self.targets[topic] = [p for p in range(partitions) if group.is_partition_assignable(topic, p)]
        self.subscribers: dict[TopicId, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic in group.members[member_id].subscribed_topic_ids:
                self.subscribers.setdefault(topic, []).append(index)

    def build(self) -> GroupAssignment:
        if not len(self.subscribed):
            return {}
        for topic in self.subscribed:
            self._topic(topic, self.targets[topic], self.subscribers[topic])
        return self._target()

    def _topic(self, topic: TopicId, targets: list[int], subscribers: list[int]) -> None:
        """``TopicAssignmentPartialBuilder``."""
        by_partition: JavaHashMap[int, JavaHashSet[int]] = JavaHashMap(
            java_integer_hash, _sized(len(targets))
        )
        by_member: JavaHashMap[int, JavaHashSet[int]] = JavaHashMap(
            java_integer_hash, _sized(len(subscribers))
        )
        sharing, quotas = desired_assignment_counts(len(subscribers), len(targets))
        desired = [0] * self.count
        for position, member in enumerate(subscribers):
            desired[member] = quotas[position]

        # revokeUnassignablePartitions: every subscribed topic's holders are recorded
        for member, old in enumerate(self.old):
            if not old:
                continue
            partitions = old.get(topic)
            if partitions is None:
                continue
            for partition in partitions:
                by_partition.compute_if_absent(partition, _int_set).add(member)
                by_member.compute_if_absent(member, _int_set).add(partition)

        # revokeOverfilledMembers
        for member, held in list(by_member.items()):
            quota = desired[member]
            if len(held) <= quota:
                continue
            copy = self.new.get(member)
            for partition in list(held):
                if len(held) <= quota:
                    break
                by_partition[partition].remove(member)
                held.remove(partition)
                if copy is None:
                    copy = self.new[member] = deep_copy(self.old[member])
                copy[topic].remove(partition)

        # revokeOversharedPartitions
        for partition, holders in list(by_partition.items()):
            count = len(holders)
            if count <= sharing:
                continue
            for member in list(holders):
                partitions = self._copy(member).get(topic)
                if partitions is not None and partition in partitions:
                    partitions.remove(partition)
                    count -= 1
                    holders.remove(member)
                    by_member[member].remove(partition)
                if count <= sharing:
                    break

        sized = _sized(len(subscribers))
        for partition in targets:
            by_partition.compute_if_absent(partition, lambda: _int_set(sized))

        # assignRemainingPartitions
        unfilled = _int_set(_sized(self.count))
        for member in subscribers:
            held_now = by_member.get(member)
            if (0 if held_now is None else len(held_now)) < desired[member]:
                unfilled.add(member)

        def give(member: int, partition: int) -> int:
            self._copy(member).compute_if_absent(topic, _int_set).add(partition)
            held = by_member.compute_if_absent(member, _int_set)
            held.add(partition)
            return len(held)

        _assign_remaining(by_partition, unfilled, sharing, desired, give)
