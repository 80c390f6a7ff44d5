"""What Range and RoundRobin share: Kafka's ``AbstractPartitionAssignor`` preamble and member order.

``AbstractPartitionAssignor.assign(Cluster, GroupSubscription)`` passes on only the topics some member
subscribes to *and* that have partitions in the metadata, and every member appears in the result.
Range and RoundRobin then order members by ``MemberInfo.compareTo``: static members (with a
``group.instance.id``) first, ordered by instance id, then dynamic members by member id, both in Java
``String.compareTo`` order.

The layout built here is made for large groups (a million partitions, thousands of members): members
become integer positions, members with identical subscription lists are handled once, and topics
with the same subscribers share one subscriber tuple (which is also how Range finds co-partitioned
topics).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

from kgroup.javacompat import hashmap_iteration_order, java_string_key
from kgroup.model import Assignment, KgroupError, Member, TopicMetadata, TopicPartition

__all__ = [
    "GroupLayout",
    "PartitionMaker",
    "assignable_topics",
    "build_layout",
    "check_unique_member_ids",
    "drain",
    "member_info_order",
    "member_rack",
    "python_order_is_java_order",
    "topic_partitions",
    "use_rack_aware_assignment",
]


class PartitionMaker:
    """Builds ``[TopicPartition(topic, 0), ..., TopicPartition(topic, count - 1)]`` lists, fast.

    Everything runs in C (``tuple.__new__`` over ``zip``; the NamedTuple's own ``__new__`` is a Python
    function), and one list of partition numbers is shared by every topic: ints above 256 are separate
    objects in CPython, and re-creating a million of them costs a third of the time.
    """

    __slots__ = ("_numbers",)

    def __init__(self) -> None:
        self._numbers: list[int] = []

    def __call__(self, topic: str, count: int) -> list[TopicPartition]:
        if count > len(self._numbers):
            self._numbers = list(range(count))
        pairs = zip(repeat(topic, count), self._numbers, strict=False)  # stops after `count`
        made: list[TopicPartition] = list(map(tuple.__new__, repeat(TopicPartition, count), pairs))
        return made


def topic_partitions(topic: str, count: int) -> list[TopicPartition]:
    """``[TopicPartition(topic, 0), ..., TopicPartition(topic, count - 1)]``, built fast."""
    return PartitionMaker()(topic, count)


def drain(iterator: Iterator[object]) -> None:
    """Run an iterator of side effects (``map(list.append, ...)``) to the end, in C."""
    deque(iterator, maxlen=0)


def member_rack(member: Member) -> str | None:
    """The member's ``client.rack``; ``""`` counts as no rack, as in Kafka's assignors."""
    return member.rack_id or None


def check_unique_member_ids(members: Sequence[Member]) -> None:
    """Reject a member id given twice (Kafka's ``HashMap`` of subscriptions cannot hold it)."""
    seen: set[str] = set()
    for member in members:
        if member.member_id in seen:
            raise KgroupError(
                f"members: member id {member.member_id!r} appears twice; "
                "give every member a unique 'memberId'"
            )
        seen.add(member.member_id)


def _member_info_key(member: Member) -> tuple[int, bytes]:
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.member_id))


def member_info_order(members: Sequence[Member]) -> list[Member]:
    """Members in ``MemberInfo.compareTo`` order (static members first by instance id, then member id).

    Two static members with the same instance id compare equal; Java's stable sort then keeps them in
    the order it collected them, which is the ``HashMap`` iteration order of the subscriptions.
    """
    instance_ids = [m.group_instance_id for m in members if m.group_instance_id is not None]
    start: Sequence[Member] = members
    if len(instance_ids) != len(set(instance_ids)):
        by_id = {m.member_id: m for m in members}
        start = [by_id[mid] for mid in hashmap_iteration_order(m.member_id for m in members)]
    return sorted(start, key=_member_info_key)


def assignable_topics(members: Iterable[Member], topics: Mapping[str, TopicMetadata]) -> list[str]:
    """Topics some member subscribes to that exist with at least one partition, in Java name order."""
    subscribed: set[str] = set()
    for topic_list in {m.topics for m in members}:
        subscribed.update(topic_list)
    found = [t for t in subscribed if (meta := topics.get(t)) is not None and meta.partitions > 0]
    return sorted(found, key=java_string_key)


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """A group prepared for Range / RoundRobin.

    ``members`` is in ``MemberInfo`` order and positions below index it. ``topics`` are the assignable
    topics in Java name order; ``subscribers[i]`` are the ascending positions of the members subscribed
    to ``topics[i]`` (never empty). Topics with the same subscribers share one tuple object.
    """

    members: tuple[Member, ...]
    topics: tuple[TopicMetadata, ...]
    subscribers: tuple[tuple[int, ...], ...]

    def empty_lists(self) -> list[list[TopicPartition]]:
        """One fresh list per member position."""
        return [[] for _ in self.members]

    def lists_by_subscribers(self, lists: list[list[TopicPartition]]) -> list[list[list[TopicPartition]]]:
        """For each topic, its subscribers' lists in subscriber order (shared between topics with the
        same subscriber tuple, so a uniform group builds this once)."""
        cache: dict[int, list[list[TopicPartition]]] = {}
        out: list[list[list[TopicPartition]]] = []
        for subscribers in self.subscribers:
            found = cache.get(id(subscribers))
            if found is None:
                found = [lists[i] for i in subscribers]
                cache[id(subscribers)] = found
            out.append(found)
        return out

    def to_assignment(
        self, request_members: Sequence[Member], lists: list[list[TopicPartition]]
    ) -> Assignment:
        """Member id -> partitions, keyed in the request's member order."""
        position = {m.member_id: i for i, m in enumerate(self.members)}
        return {m.member_id: lists[position[m.member_id]] for m in request_members}


def build_layout(members: Sequence[Member], topics: Mapping[str, TopicMetadata]) -> GroupLayout:
    """Order the members, filter the topics and find each topic's subscribers.

    Work is proportional to the number of *distinct* subscription lists times their length, plus the
    number of distinct subscriber sets times the member count: a uniform group of 2,000 members and
    500 topics costs a few thousand steps, not a million.
    """
    check_unique_member_ids(members)
    ordered = member_info_order(members)
    names = assignable_topics(ordered, topics)
    wanted = set(names)

    # subscription list -> group number; members with the same list share one group
    group_of_list: dict[tuple[str, ...], int] = {}
    member_group: list[int] = []
    for member in ordered:
        member_group.append(group_of_list.setdefault(member.topics, len(group_of_list)))

    # topic -> the groups subscribed to it (ascending group numbers)
    groups_of_topic: dict[str, list[int]] = {}
    for topic_list, group in group_of_list.items():
        for topic in set(topic_list) & wanted:
            groups_of_topic.setdefault(topic, []).append(group)

    # subscriber positions, computed once per distinct set of groups
    by_groups: dict[tuple[int, ...], tuple[int, ...]] = {}
    subscribers: list[tuple[int, ...]] = []
    for name in names:
        key = tuple(groups_of_topic[name])
        found = by_groups.get(key)
        if found is None:
            if len(group_of_list) == 1:
                found = tuple(range(len(ordered)))
            else:
                chosen = set(key)
                found = tuple(i for i, g in enumerate(member_group) if g in chosen)
            by_groups[key] = found
        subscribers.append(found)
    return GroupLayout(tuple(ordered), tuple(topics[n] for n in names), tuple(subscribers))


def use_rack_aware_assignment(
    consumer_racks: set[str],
    partition_racks: Sequence[frozenset[str]],
    prefer_rack_aware_logic: bool,
) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` for one set of partitions.

    Rack-aware only if some consumer has a rack that some replica is on, and (unless the test-only
    ``prefer_rack_aware_logic`` forces it) not every partition has replicas on every rack in use.
    """
    all_partition_racks = frozenset[str]().union(*partition_racks)
    if not consumer_racks or consumer_racks.isdisjoint(all_partition_racks):
        return False
    if prefer_rack_aware_logic:
        return True
    # tuple.count compares in C: every partition has replicas on every rack in use
    everywhere = tuple(partition_racks).count(all_partition_racks) == len(partition_racks)
    return not everywhere


def python_order_is_java_order(names: Iterable[str]) -> bool:
    """Whether Python's ``str`` order equals Java's ``String.compareTo`` order on these strings.

    They differ only between a supplementary character (UTF-16 surrogates D800-DBFF) and a BMP
    character at or above U+E000; without one of the two kinds, plain tuple sorting is exact.
    """
    text = "".join(names)
    if not text or max(text) < "\ue000":
        return True
    high_bmp = any("\ue000" <= ch <= "\uffff" for ch in text)
    supplementary = any(ch > "\uffff" for ch in text)
    return not (high_bmp and supplementary)
