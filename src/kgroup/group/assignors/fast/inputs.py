"""A :class:`GroupSpec` as integer arrays, in bulk: what the fast server assignors start from.

Topic ids become dense indices (:class:`TopicTable`: by object identity first — the coordinator hands
the same ``TopicId`` objects around — and by value on a miss). Members whose subscriptions are equal
share one subscription class (the same collection object, or an equal one), so a subscription is
turned into indices once per class, not once per member. A member's current assignment becomes flat
arrays (its topics in the order its map iterates them, their partitions in the order their
collections do). Every pass over the members goes through ``map``/``zip`` rather than a Python loop
per member.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import chain
from operator import attrgetter, methodcaller

import numpy as np

from kgroup.group.assignors.api import GroupSpec, MemberSpec, SubscribedTopicDescriber, TopicId
from kgroup.javacompat import java_string_key

__all__ = ["Classes", "OldAssignments", "TopicTable", "classes_of", "old_assignments", "sorted_member_ids"]

_subscription = attrgetter("subscribed_topic_ids")
_assignment = attrgetter("assignment")
_values = methodcaller("values")
_pair = attrgetter("msb", "lsb")
_java_hash = attrgetter("java_hash")


class TopicTable:
    """Topic ids as dense indices ``0..T-1``; each topic's partition count and spread Java hash."""

    __slots__ = ("_by_id", "_by_pair", "_counts", "_spreads", "topics")

    def __init__(self) -> None:
        self.topics: list[TopicId] = []
        self._spreads: list[int] = []
        #: by value: ``(msb, lsb)``, hashed and compared in C (a ``TopicId``'s own ``__eq__`` is Python)
        self._by_pair: dict[tuple[int, int], int] = {}
        self._by_id: dict[int, int] = {}

    def index(self, topic: TopicId) -> int:
        found = self._by_id.get(id(topic))
        if found is not None:
            return found
        pair = (topic.msb, topic.lsb)
        found = self._by_pair.get(pair)
        if found is None:
            found = self._by_pair[pair] = len(self.topics)
            self.topics.append(topic)
        self._by_id[id(topic)] = found
        return found

    def indices(self, topics: Sequence[TopicId]) -> list[int]:
        """The index of each topic (objects kept alive by the caller while the table is in use): by
        identity when the first is an object met before; otherwise, or when some are other objects
        (ids read back from records), by value in bulk."""
        found: list[int | None]
        if not self.topics and topics:
            # a fresh table (the subscription, first): distinct topics are indexed in one pass
            pairs = list(map(_pair, topics))
            by_pair = dict(zip(pairs, range(len(pairs)), strict=True))
            if len(by_pair) == len(pairs):
                self._by_pair = by_pair
                self._by_id = dict(zip(map(id, topics), range(len(pairs)), strict=True))
                self.topics = list(topics)
                return list(range(len(pairs)))
        if type(topics) is list and self.topics[: len(topics)] == topics:
            # this table's first topics, in order (a remembered call's table, this one grown from it)
            return list(range(len(topics)))
        if not topics or id(topics[0]) in self._by_id:
            found = list(map(self._by_id.get, map(id, topics)))
        else:
            found = [None]
        if None in found:
            found = list(map(self._by_pair.get, map(_pair, topics)))
            if None in found:
                index = self.index
                found = [index(topics[i]) if f is None else f for i, f in enumerate(found)]
        return found  # type: ignore[return-value]

    def copy(self) -> TopicTable:
        """A table with the same topics and indices (extending it leaves this one as it is)."""
        table = TopicTable()
        table.topics = list(self.topics)
        table._by_pair = dict(self._by_pair)
        table._by_id = dict(self._by_id)
        table._spreads = list(self._spreads)
        return table

    def counts(self, describer: SubscribedTopicDescriber) -> np.ndarray:
        """``numPartitions`` of every topic (-1: not in the metadata); in one lookup pass where the
        describer offers it (``partition_counts``: kgroup's describers)."""
        bulk = getattr(describer, "partition_counts", None)
        if bulk is not None:
            return np.array(bulk(self.topics), np.int64)
        return np.fromiter(map(describer.num_partitions, self.topics), np.int64, len(self.topics))

    def spreads(self) -> np.ndarray:
        """``HashMap.hash(topicId)`` of every topic (each computed once per table)."""
        known = self._spreads
        if len(known) < len(self.topics):
            hashes = np.fromiter(map(_java_hash, self.topics[len(known) :]), np.int64) & 0xFFFFFFFF
            known.extend((hashes ^ (hashes >> 16)).tolist())  # java_spread, for all at once
        return np.array(known, np.int64)


class Classes:
    """Members grouped by equal subscription: ``member_class[m]`` and each class's topic indices."""

    __slots__ = ("member_class", "start", "topics")

    def __init__(self, member_class: np.ndarray, lists: list[list[int]]) -> None:
        self.member_class = member_class
        self.start = np.zeros(len(lists) + 1, np.int64)
        self.start[1:] = np.cumsum([len(x) for x in lists]) if lists else []
        self.topics = np.fromiter(chain.from_iterable(lists), np.int64, int(self.start[-1]))

    def of(self, cls: int) -> np.ndarray:
        return self.topics[self.start[cls] : self.start[cls + 1]]


def classes_of(subscriptions: Sequence[Collection[TopicId]], table: TopicTable) -> Classes:
    """Subscription classes: the same object is one class; an equal sequence found by its length and
    first element joins that class (a miss only costs a separate class, never a wrong answer)."""
    keys = list(map(id, subscriptions))
    by_object = dict(zip(keys, subscriptions, strict=True))
    class_of: dict[int, int] = {}
    seen: dict[tuple[int, int], list[int]] = {}
    listed: list[Sequence[TopicId]] = []
    lists: list[list[int]] = []
    for key, subscription in by_object.items():
        items: Sequence[TopicId] = (
            subscription if isinstance(subscription, tuple | list) else tuple(subscription)
        )
        signature = (len(items), id(items[0]) if items else 0)
        for candidate in seen.get(signature, ()):
            if listed[candidate] == items:
                class_of[key] = candidate
                break
        else:
            class_of[key] = len(lists)
            seen.setdefault(signature, []).append(len(lists))
            listed.append(items)
            lists.append(table.indices(items))
    member_class = np.fromiter(map(class_of.__getitem__, keys), np.int64, len(keys))
    return Classes(member_class, lists)


class OldAssignments:
    """Every member's current assignment as flat arrays (member order of the spec)."""

    __slots__ = ("entry_start", "lengths", "maps", "part_start", "parts", "plain", "topic")

    def __init__(self, maps: list[Mapping[TopicId, Collection[int]]], table: TopicTable) -> None:
        self.maps = maps
        sizes = list(map(len, maps))
        self.entry_start = np.zeros(len(maps) + 1, np.int64)
        self.entry_start[1:] = np.cumsum(sizes)
        entries = int(self.entry_start[-1])
        topics = list(chain.from_iterable(maps))
        values = list(chain.from_iterable(map(_values, maps)))
        self.topic = np.fromiter(table.indices(topics), np.int64, entries)
        lengths = list(map(len, values))
        self.lengths = np.fromiter(lengths, np.int64, entries)
        self.part_start = np.zeros(entries + 1, np.int64)
        self.part_start[1:] = np.cumsum(self.lengths)
        self.parts = np.fromiter(chain.from_iterable(values), np.int64, int(self.part_start[-1]))
        #: every map a dict and every partition collection a tuple: the map itself is the answer
        #: of a member the assignor leaves alone (as Kafka keeps the member's own immutable map)
        self.plain = set(map(type, maps)) <= {dict} and set(map(type, values)) <= {tuple}


def old_assignments(specs: list[MemberSpec], table: TopicTable) -> OldAssignments:
    return OldAssignments(list(map(_assignment, specs)), table)


def sorted_member_ids(group: GroupSpec) -> list[str]:
    """``RangeAssignor``'s member order: static members by instance id, then the others by member id,
    both as ``String.compareTo`` orders (Python's order when every id is ASCII); ties keep the order."""
    member_ids = list(group.members)
    instances = list(map(attrgetter("instance_id"), group.members.values()))
    statics = [m for m, i in zip(member_ids, instances, strict=True) if i is not None]
    if statics:
        instance_of = dict(zip(member_ids, instances, strict=True))
        statics.sort(key=lambda m: java_string_key(instance_of[m]))
        dynamic = [m for m, i in zip(member_ids, instances, strict=True) if i is None]
    else:
        dynamic = member_ids
    ascii_only = "".join(dynamic).isascii()
    dynamic = sorted(dynamic) if ascii_only else sorted(dynamic, key=java_string_key)
    return statics + dynamic
