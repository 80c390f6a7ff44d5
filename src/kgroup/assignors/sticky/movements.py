"""Partition movements of the general sticky path, with Java ``HashSet`` iteration order emulated.

When the general builder moves a partition from ``old`` to ``new`` and some partition of the same
topic earlier moved from ``new`` to ``old``, Kafka moves that earlier one back instead
(``getTheActualPartitionToBeMoved``): the *first element of a* ``HashSet<TopicPartition>``. Which
element that is depends on ``TopicPartition.hashCode()`` and the set's bucket table, so the set is
emulated here: ``hashCode = 31 * (31 + partition) + topic.hashCode()`` (int32), spread
``h ^ (h >>> 16)``, bucket ``spread & (capacity - 1)``; entries of one bucket in insertion order; the
table (16 buckets) doubles when the size exceeds 3/4 of it, and also when a bucket reaches 9 entries
while the table is smaller than 64 (``treeifyBin`` resizes instead of building a tree). Tree bins
(9+ colliding entries in a table of 64+) are not modelled; they need many partitions of one topic
moving between the same two members with colliding hashes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from kgroup.javacompat import java_string_hash
from kgroup.model import TopicPartition

__all__ = ["JavaHashSet", "PartitionMovements", "topic_partition_hash"]

_MASK32 = 0xFFFFFFFF


@lru_cache(maxsize=65536)
def _topic_hash(topic: str) -> int:
    return java_string_hash(topic)


def topic_partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode()`` spread as ``HashMap.hash`` does (unsigned 32-bit)."""
    h = (31 * (31 + tp.partition) + _topic_hash(tp.topic)) & _MASK32
    return h ^ (h >> 16)


class JavaHashSet:
    """A ``java.util.HashSet<TopicPartition>`` that knows which element Java would iterate first."""

    __slots__ = ("_capacity", "_items", "_next_seq")

    def __init__(self) -> None:
        self._items: dict[TopicPartition, tuple[int, int]] = {}  # element -> (spread hash, insertion seq)
        self._capacity = 16
        self._next_seq = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, tp: object) -> bool:
        return tp in self._items

    def add(self, tp: TopicPartition) -> None:
        if tp in self._items:
            return
        spread = topic_partition_hash(tp)
        self._items[tp] = (spread, self._next_seq)
        self._next_seq += 1
        if self._capacity < 64:
            mask = self._capacity - 1
            bucket = spread & mask
            if sum(1 for s, _ in self._items.values() if s & mask == bucket) >= 9:
                self._capacity *= 2  # treeifyBin on a small table resizes instead
        if len(self._items) > 0.75 * self._capacity:
            self._capacity *= 2

    def discard(self, tp: TopicPartition) -> None:
        self._items.pop(tp, None)

    def state(self) -> tuple[int, tuple[TopicPartition, ...]]:
        """What decides ``first()`` from here on: the table's size and the elements in insertion order."""
        items = self._items
        return self._capacity, tuple(sorted(items, key=lambda tp: items[tp][1]))

    def first(self) -> TopicPartition:
        """The element ``iterator().next()`` returns: lowest bucket, then earliest inserted."""
        mask = self._capacity - 1
        items = self._items
        return min(items, key=lambda tp: (items[tp][0] & mask, items[tp][1]))


Pair = tuple[str, str]  # (source member, destination member)


@dataclass(slots=True)
class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: where partitions moved during this rebalance."""

    by_topic: dict[str, dict[Pair, JavaHashSet]] = field(default_factory=dict)
    movements: dict[TopicPartition, Pair] = field(default_factory=dict)

    def _remove_record(self, tp: TopicPartition) -> Pair:
        pair = self.movements.pop(tp)
        for_topic = self.by_topic[tp.topic]
        moved = for_topic[pair]
        moved.discard(tp)
        if not moved:
            del for_topic[pair]
        if not for_topic:
            del self.by_topic[tp.topic]
        return pair

    def _add_record(self, tp: TopicPartition, pair: Pair) -> None:
        self.movements[tp] = pair
        for_topic = self.by_topic.setdefault(tp.topic, {})
        moved = for_topic.get(pair)
        if moved is None:
            moved = for_topic[pair] = JavaHashSet()
        moved.add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.movements:
            source, _ = self._remove_record(tp)
            if source != new:  # not simply moving back where it came from
                self._add_record(tp, (source, new))
        else:
            self._add_record(tp, (old, new))

    def state(self) -> tuple[object, ...]:
        """Every recorded movement, and each topic's sets of moved partitions with their Java state
        (for comparing two moments of one rebalance)."""
        sets = tuple(
            (topic, pair, moved.state())
            for topic, pairs in sorted(self.by_topic.items())
            for pair, moved in sorted(pairs.items())
        )
        return tuple(sorted(self.movements.items())), sets

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """Prefer undoing an earlier opposite move of the same topic over a fresh move."""
        for_topic = self.by_topic.get(tp.topic)
        if for_topic is None:
            return tp
        earlier = self.movements.get(tp)
        if earlier is not None:
            old = earlier[0]
        reverse = for_topic.get((new, old))
        if reverse is None:
            return tp
        return reverse.first()
