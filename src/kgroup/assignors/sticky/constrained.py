"""The constrained sticky path (all members subscribe to the same topics).

Kafka's ``ConstrainedAssignmentBuilder``, step by step:

1. quotas: ``min = floor(P / C)``, ``max = ceil(P / C)``; ``P % C`` members may hold ``max``;
2. each member (in ``HashMap`` iteration order) keeps its valid owned partitions — rack-mismatched
   ones dropped first, sorted by **partition number, then topic** — up to ``max`` while fewer than
   ``P % C`` members hold ``max``, else up to ``min``; the rest are "revoked". Members below ``min``
   go to the *under* list, members at ``min`` that may still get one more to the *exactly-min* list;
3. unassigned partitions (topic, partition order; stably re-sorted by members-on-rack count) go
   first to rack-matching members (rack-aware only), then round robin over the *under* list (sorted
   by member id), a member reaching ``min`` moving to the end of the *exactly-min* list, which
   receives the extras head first once the *under* list is empty.

Partitions a member gave up (beyond its quota, or on a rack it does not share) and then handed to a
*different* member, and partitions claimed by two members of one generation, are recorded for the
cooperative adjustment. (This is the 4.0 code, with the KAFKA-15170-era fixes: rack-mismatched owned
partitions count as given up, and the rack-aware pass counts members it fills to ``max``.)
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from kgroup.assignors.sticky._tp import new_partition, topic_key
from kgroup.assignors.sticky.errors import StickyAssignmentError
from kgroup.assignors.sticky.racks import RackInfo
from kgroup.javacompat import java_string_key
from kgroup.model import TopicPartition, sorted_partitions

__all__ = ["ConstrainedBuilder", "ConstrainedResult"]

ConstrainedResult = tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]


def _owned_order(tp: TopicPartition) -> tuple[int, bytes]:
    return (tp.partition, topic_key(tp.topic))


class _ListIterator:
    """A Java ``ListIterator`` over a Python list: ``next`` / ``has_next`` / ``remove`` the last returned."""

    __slots__ = ("_items", "_last", "_pos")

    def __init__(self, items: list[str]) -> None:
        self._items = items
        self._pos = 0
        self._last = -1

    def has_next(self) -> bool:
        return self._pos < len(self._items)

    def next(self) -> str:
        item = self._items[self._pos]
        self._last = self._pos
        self._pos += 1
        return item

    def remove(self) -> None:
        if self._last < 0:
            raise StickyAssignmentError("IllegalStateException: iterator remove() without next()")
        del self._items[self._last]
        self._pos = self._last
        self._last = -1


@dataclass(eq=False)
class ConstrainedBuilder:
    """Kafka's ``ConstrainedAssignmentBuilder`` (every member subscribed to the same topics):
    ``build()`` answers (assignment, partitions transferring ownership -> their new owner)."""

    partitions_per_topic: Mapping[str, int]
    rack_info: RackInfo
    owned: Mapping[str, list[TopicPartition]]
    multiply_claimed: Set[TopicPartition]

    def __post_init__(self) -> None:
        # partition -> the member that gave it up (beyond its quota, or on a mismatched rack)
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        total = sum(self.partitions_per_topic.values())
        members = len(self.owned)
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_over_min = total % members
        self.current_over_min = 0
        self.assignment: dict[str, list[TopicPartition]] = {m: [] for m in self.owned}
        self.assigned: list[TopicPartition] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> ConstrainedResult:
        self._assign_owned_partitions()
        unassigned = self._unassigned_partitions()
        self.under_min.sort(key=java_string_key)
        self.exactly_min.sort(key=java_string_key)
        unassigned = self.rack_info.sort_by_rack_consumers(unassigned)
        if self.rack_info.rack_aware:
            unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled_members()
        return self.assignment, self.transferring

    def _assign_owned_partitions(self) -> None:
        rack_info = self.rack_info
        for consumer, claimed in self.owned.items():
            matching: list[TopicPartition] = []
            for tp in claimed:
                if rack_info.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    matching.append(tp)
            kept = sorted(matching, key=_owned_order)
            if self.multiply_claimed:
                kept = [tp for tp in kept if tp not in self.multiply_claimed]
            target = self.assignment[consumer]
            if len(kept) < self.min_quota:
                target.extend(kept)
                self.assigned.extend(kept)
                self.under_min.append(consumer)
            elif len(kept) >= self.max_quota and self.current_over_min < self.expected_over_min:
                self.current_over_min += 1
                if self.current_over_min == self.expected_over_min:
                    self.exactly_min.clear()
                target.extend(kept[: self.max_quota])
                self.assigned.extend(kept[: self.max_quota])
                self.maybe_revoked.update(dict.fromkeys(kept[self.max_quota :], consumer))
            else:
                target.extend(kept[: self.min_quota])
                self.assigned.extend(kept[: self.min_quota])
                self.maybe_revoked.update(dict.fromkeys(kept[self.min_quota :], consumer))
                if self.current_over_min < self.expected_over_min:
                    self.exactly_min.append(consumer)

    def _unassigned_partitions(self) -> list[TopicPartition]:
        """All partitions (topic order, then number) minus the kept ones, by Kafka's two-pointer walk.

        The walk is reproduced rather than a set difference because it behaves differently on a
        claimed partition number beyond the topic's current partition count.
        """
        topics = sorted(self.partitions_per_topic, key=java_string_key)
        if not self.assigned:
            return [new_partition((t, p)) for t in topics for p in range(self.partitions_per_topic[t])]
        assigned = sorted_partitions(self.assigned)  # (topic_order's order, the tuples sorted in C)
        out: list[TopicPartition] = []
        it = iter(assigned)
        next_assigned = next(it)
        add_directly = False
        for topic in topics:
            for p in range(self.partitions_per_topic[topic]):
                if add_directly or next_assigned.topic != topic or next_assigned.partition != p:
                    out.append(new_partition((topic, p)))
                else:
                    following = next(it, None)
                    if following is None:
                        add_directly = True
                    else:
                        next_assigned = following
        return out

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        rack_info = self.rack_info
        under, exactly = self.under_min, self.exactly_min
        next_index = 0
        remaining: list[TopicPartition] = []
        for tp in unassigned:
            consumer: str | None = None
            index = rack_info.next_rack_consumer(tp, under, next_index)
            if index >= 0:
                consumer = under[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    under.remove(consumer)
                    if count < self.max_quota and self.current_over_min < self.expected_over_min:
                        exactly.append(consumer)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exactly:
                first = rack_info.next_rack_consumer(tp, exactly, 0)
                if first >= 0:
                    consumer = exactly[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del exactly[first]
                        self.current_over_min += 1
                        if self.current_over_min == self.expected_over_min:
                            exactly.clear()
            if consumer is None:
                remaining.append(tp)
            else:
                self._assign_new_partition(tp, consumer)
        return remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under, exactly = self.under_min, self.exactly_min
        it = _ListIterator(under)
        for tp in unassigned:
            if it.has_next():
                consumer = it.next()
            elif not under and not exactly:
                raise StickyAssignmentError("No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exactly.pop(0)
            else:
                it = _ListIterator(under)
                consumer = it.next()
            count = self._assign_new_partition(tp, consumer)
            if count == self.min_quota:
                it.remove()
                exactly.append(consumer)
            elif count == self.max_quota:
                self.current_over_min += 1

    def _assign_new_partition(self, tp: TopicPartition, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        # It was someone else's (given up, or claimed twice in one generation): it changes owner.
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in self.multiply_claimed:
            self.transferring[tp] = consumer
        return len(target)

    def _verify_unfilled_members(self) -> None:
        if not self.under_min:
            return
        if self.current_over_min != self.expected_over_min:
            raise StickyAssignmentError(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise StickyAssignmentError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )
