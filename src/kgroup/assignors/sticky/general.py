"""The general sticky path (members subscribe to different topics).

Kafka's ``GeneralAssignmentBuilder``:

1. keep every valid owned partition whose topic the member still subscribes to (and, rack-aware,
   whose replicas are on the member's rack); dropping one for those reasons sets
   ``revocation_required``;
2. remember older-generation claims as "previous owners" (``prevAssignment``);
3. hand each unassigned partition — topics ordered by number of potential members, then name — to the
   first member, by (assignment size, member id), that subscribes to its topic (rack-matching first);
4. rebalance: while not balanced, move a partition back to its previous owner if its current owner
   has 2+ more, else to the least-loaded subscriber if some subscriber has 2+ fewer — undoing an
   earlier opposite move of the same topic when there is one; first only the newly assigned
   partitions (unless a revocation was required), then all;
5. keep the result only if it is strictly more balanced than before step 4 (except on the very first
   assignment).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kgroup.assignors.sticky._tp import new_partition
from kgroup.assignors.sticky.errors import StickyAssignmentError, StickyReassignmentLoops
from kgroup.assignors.sticky.movements import PartitionMovements
from kgroup.assignors.sticky.owned import DEFAULT_GENERATION, MemberData
from kgroup.assignors.sticky.racks import RackInfo
from kgroup.javacompat import java_string_key
from kgroup.model import Member, TopicPartition

__all__ = ["GeneralBuilder"]


class _MembersBySize:
    """Kafka's ``TreeSet<String>`` of members ordered by (current assignment size, member id).

    Members are bucketed by size; each bucket holds Java-ordered member ranks, so ``first``/``last``
    are O(1) and an insert or removal costs a bisect in one bucket.
    """

    __slots__ = ("_levels", "_names", "_rank", "_size_of", "_sizes")

    def __init__(self, members_in_java_order: Sequence[str]) -> None:
        self._names = list(members_in_java_order)
        self._rank = {m: i for i, m in enumerate(self._names)}
        self._levels: dict[int, list[int]] = {}
        self._sizes: list[int] = []
        self._size_of: dict[str, int] = {}

    def add(self, member: str, size: int) -> None:
        if member in self._size_of:
            return
        self._size_of[member] = size
        level = self._levels.get(size)
        if level is None:
            level = self._levels[size] = []
            bisect.insort(self._sizes, size)
        bisect.insort(level, self._rank[member])

    def remove(self, member: str) -> None:
        size = self._size_of.pop(member, None)
        if size is None:
            return
        level = self._levels[size]
        del level[bisect.bisect_left(level, self._rank[member])]
        if not level:
            del self._levels[size]
            del self._sizes[bisect.bisect_left(self._sizes, size)]

    def first(self) -> str:
        return self._names[self._levels[self._sizes[0]][0]]

    def last(self) -> str:
        return self._names[self._levels[self._sizes[-1]][-1]]

    def members(self) -> list[str]:
        return list(self._size_of)

    def first_matching(self, accept: Callable[[str], bool]) -> str | None:
        names = self._names
        for size in self._sizes:
            for rank in self._levels[size]:
                if accept(names[rank]):
                    return names[rank]
        return None


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """Sum over all member pairs of the difference of their assignment sizes."""
    sizes = sorted(len(p) for p in assignment.values())
    n = len(sizes)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))


@dataclass(eq=False)
class GeneralBuilder:
    """Kafka's ``GeneralAssignmentBuilder``: ``build()`` answers member -> partitions (unsorted lists);
    ``current`` (member -> valid owned partitions) is updated in place."""

    partitions_per_topic: Mapping[str, int]
    rack_info: RackInfo
    current: dict[str, list[TopicPartition]]
    member_order: Sequence[str]
    members: Mapping[str, Member]
    member_data: Mapping[str, MemberData]
    max_generation: int

    def __post_init__(self) -> None:
        partitions_per_topic, member_order, current = (
            self.partitions_per_topic,
            self.member_order,
            self.current,
        )
        members = self.members
        self.total_partitions = sum(partitions_per_topic.values())
        self.revocation_required = False
        self.movements = PartitionMovements()

        self.topic_consumers: dict[str, list[str]] = {t: [] for t in partitions_per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for consumer in member_order:
            # duplicates in a subscription list are kept, as Kafka keeps them
            subscribed = [t for t in members[consumer].topics if t in partitions_per_topic]
            self.consumer_topics[consumer] = subscribed
            for topic in subscribed:
                self.topic_consumers[topic].append(consumer)
            current.setdefault(consumer, [])
        self.consumer_topic_set = {c: frozenset(ts) for c, ts in self.consumer_topics.items()}
        self.max_assignment_size = {
            c: self._max_assignment_size(ts) for c, ts in self.consumer_topics.items()
        }

        self.partition_owner: dict[TopicPartition, str] = {
            tp: consumer for consumer, partitions in current.items() for tp in partitions
        }
        self.topic_order = {
            t: (len(consumers), java_string_key(t)) for t, consumers in self.topic_consumers.items()
        }
        sorted_topics = sorted(self.topic_consumers, key=self.topic_order.__getitem__)
        self.sorted_all_partitions = [
            new_partition((t, p)) for t in sorted_topics for p in range(partitions_per_topic[t])
        ]
        self.sorted_members = _MembersBySize(sorted(member_order, key=java_string_key))
        # topic -> member -> how many of the topic's partitions it holds (for the balance check)
        self.topic_owners: dict[str, dict[str, int]] = {}
        self.version = 0  # bumped on every change, so an unchanged assignment is checked once
        self.balanced_at: tuple[int, bool] = (-1, False)

    # -- bookkeeping ----------------------------------------------------------------------------

    def _max_assignment_size(self, topics: Sequence[str]) -> int:
        if len(topics) == len(self.partitions_per_topic):
            return self.total_partitions
        return sum(self.partitions_per_topic[t] for t in topics)

    def _size(self, consumer: str) -> int:
        partitions = self.current.get(consumer)
        if partitions is None:
            raise StickyAssignmentError(f"NullPointerException: no current assignment for {consumer}")
        return len(partitions)

    def _give(self, consumer: str, tp: TopicPartition) -> None:
        self.current[consumer].append(tp)
        owners = self.topic_owners.setdefault(tp.topic, {})
        owners[consumer] = owners.get(consumer, 0) + 1
        self.version += 1

    def _take(self, consumer: str, tp: TopicPartition) -> None:
        try:
            self.current[consumer].remove(tp)
        except ValueError:
            return
        owners = self.topic_owners[tp.topic]
        owners[consumer] -= 1
        if not owners[consumer]:
            del owners[consumer]
        self.version += 1

    # -- the build --------------------------------------------------------------------------------

    def build(self) -> dict[str, list[TopicPartition]]:
        previous = self._previous_owners()
        assigned = self._assign_owned_partitions()
        unassigned = self._unassigned_partitions(assigned)
        for consumer, partitions in self.current.items():
            self.sorted_members.add(consumer, len(partitions))
            for tp in partitions:
                owners = self.topic_owners.setdefault(tp.topic, {})
                owners[consumer] = owners.get(consumer, 0) + 1
        self._balance(previous, unassigned)
        return self.current

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """``prepopulateCurrentAssignments``: claims of members older than the newest generation."""
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for consumer in self.member_order:
            data = self.member_data[consumer]
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in data.partitions:
                known = previous.get(tp)
                if known is None or generation > known[1]:
                    previous[tp] = (consumer, generation)
        return previous

    def _assign_owned_partitions(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer, partitions in self.current.items():
            subscribed = set(self.members[consumer].topics)
            kept: list[TopicPartition] = []
            for tp in partitions:
                if tp.topic not in self.topic_consumers:
                    self.partition_owner.pop(tp, None)
                elif tp.topic not in subscribed or self.rack_info.racks_mismatch(consumer, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            partitions[:] = kept
        return assigned

    def _unassigned_partitions(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        """All partitions minus the kept ones, by Kafka's two-pointer walk (see the constrained path)."""
        if not assigned:
            return list(self.sorted_all_partitions)
        order = self.topic_order
        ordered = sorted(assigned, key=lambda tp: (order[tp.topic], tp.partition))
        out: list[TopicPartition] = []
        it = iter(ordered)
        next_assigned = next(it)
        add_directly = False
        for tp in self.sorted_all_partitions:
            if add_directly or next_assigned != tp:
                out.append(tp)
            else:
                following = next(it, None)
                if following is None:
                    add_directly = True
                else:
                    next_assigned = following
        return out

    # -- balancing --------------------------------------------------------------------------------

    def _is_balanced(self) -> bool:
        if self.balanced_at[0] == self.version:
            return self.balanced_at[1]
        result = self._compute_is_balanced()
        self.balanced_at = (self.version, result)
        return result

    def _compute_is_balanced(self) -> bool:
        members = self.sorted_members
        if self._size(members.first()) >= self._size(members.last()) - 1:
            return True
        # Kafka asks, per member not holding all it could: is one of its topics' partitions held by
        # someone with 2+ more? Per topic only the two largest holders matter.
        largest: dict[str, tuple[int, str | None, int]] = {}
        for consumer in members.members():
            size = len(self.current[consumer])
            if size == self.max_assignment_size[consumer]:
                continue
            for topic in self.consumer_topics[consumer]:
                top = largest.get(topic)
                if top is None:
                    top = largest[topic] = self._two_largest_holders(topic)
                other = top[0] if top[1] != consumer else top[2]
                if size + 1 < other:
                    return False
        return True

    def _two_largest_holders(self, topic: str) -> tuple[int, str | None, int]:
        best, best_owner, second = -1, None, -1
        for owner in self.topic_owners.get(topic, {}):
            if owner not in self.current:
                continue  # a member out of the reassignment (Kafka's map of holders leaves it out)
            size = len(self.current[owner])
            if size > best:
                best, best_owner, second = size, owner, best
            elif size > second:
                second = size
        return best, best_owner, second

    def _subscribed(self, topic: str) -> Callable[[str], bool]:
        return lambda consumer: topic in self.consumer_topic_set[consumer]

    def _maybe_assign(
        self, partitions: list[TopicPartition], rack_matching: bool, remove_assigned: bool
    ) -> list[TopicPartition]:
        remaining: list[TopicPartition] = []
        rack_info = self.rack_info
        topics = self.consumer_topic_set
        for tp in partitions:
            if not self.topic_consumers[tp.topic]:
                remaining.append(tp)
                continue

            def accept(consumer: str, tp: TopicPartition = tp) -> bool:
                return tp.topic in topics[consumer] and not (
                    rack_matching and rack_info.racks_mismatch(consumer, tp)
                )

            consumer = self.sorted_members.first_matching(accept)
            if consumer is not None:
                self.sorted_members.remove(consumer)
                self._give(consumer, tp)
                self.partition_owner[tp] = consumer
                self.sorted_members.add(consumer, len(self.current[consumer]))
            if consumer is None or not remove_assigned:
                remaining.append(tp)
        return remaining

    def _can_participate(self, consumer: str) -> bool:
        partitions = self.current[consumer]
        if len(partitions) < self.max_assignment_size[consumer]:
            return True
        return any(len(self.topic_consumers[tp.topic]) >= 2 for tp in partitions)

    def _balance(
        self, previous: Mapping[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]
    ) -> None:
        initializing = not self.current[self.sorted_members.last()]
        to_assign = unassigned
        if self.rack_info.rack_aware:
            to_assign = self._maybe_assign(list(unassigned), rack_matching=True, remove_assigned=True)
        self._maybe_assign(to_assign, rack_matching=False, remove_assigned=False)

        fixed_topics = {t for t, consumers in self.topic_consumers.items() if len(consumers) < 2}
        reassignable = [tp for tp in self.sorted_all_partitions if tp.topic not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp.topic not in fixed_topics]

        fixed: dict[str, list[TopicPartition]] = {}
        for consumer in self.consumer_topics:
            if not self._can_participate(consumer):
                self.sorted_members.remove(consumer)
                fixed[consumer] = self.current.pop(consumer)
        self.version += 1  # the members taking part changed

        before = {c: list(p) for c, p in self.current.items()}
        owners_before = dict(self.partition_owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, previous)
        performed = self._perform_reassignments(reassignable, previous)

        if not initializing and performed and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.partition_owner = owners_before
        self.current.update(fixed)

    def _perform_reassignments(
        self, partitions: list[TopicPartition], previous: Mapping[TopicPartition, tuple[str, int]]
    ) -> bool:
        performed = False
        consumer_racks = self.rack_info.consumer_racks
        # where each pass ended: every pass walks the same partitions from the state the last one left,
        # so a state met again means Kafka's loop never ends (StickyReassignmentLoops)
        ended: dict[object, int] = {}
        while True:
            if performed:
                state = self._reassignment_state()
                first = ended.get(state)
                if first is not None:
                    raise StickyReassignmentLoops(len(ended) + 1, first + 1)
                ended[state] = len(ended)
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.partition_owner[tp]
                size = self._size(consumer)
                earlier = previous.get(tp)
                if earlier is not None and size > self._size(earlier[0]) + 1:
                    self._reassign(tp, earlier[0])
                    performed = modified = True
                    continue
                # prefer a less loaded member on a rack of the partition
                consumer_rack = consumer_racks.get(consumer)
                replica_racks = self.rack_info.partition_racks.get(tp)
                found_rack_consumer = False
                if consumer_rack is not None and replica_racks and consumer_rack in replica_racks:
                    for other in self.topic_consumers[tp.topic]:
                        other_rack = consumer_racks.get(other)
                        if other_rack is None or other_rack not in replica_racks:
                            continue
                        if size > self._size(other) + 1:
                            self._reassign_to_least_loaded(tp)
                            performed = modified = found_rack_consumer = True
                            break
                if not found_rack_consumer:
                    for other in self.topic_consumers[tp.topic]:
                        if size > self._size(other) + 1:
                            self._reassign_to_least_loaded(tp)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _reassignment_state(self) -> object:
        """What a pass of ``_perform_reassignments`` decides from (the partitions and ``previous`` are
        the same each pass; the members' order by size, the topics' holders and the balance check
        follow from these): each member's partitions in order, each partition's owner, and the
        movements with each set's Java iteration state."""
        return (
            tuple((member, tuple(partitions)) for member, partitions in self.current.items()),
            tuple(self.partition_owner.items()),
            self.movements.state(),
        )

    def _reassign_to_least_loaded(self, tp: TopicPartition) -> None:
        new = self.sorted_members.first_matching(self._subscribed(tp.topic))
        if new is None:
            # Java asserts newConsumer != null; without -ea it goes on with null and fails there
            raise StickyAssignmentError(f"NullPointerException: no member left to take {tp}")
        self._reassign(tp, new)

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        moved = self.movements.actual_partition_to_move(tp, self.partition_owner[tp], new)
        old = self.partition_owner[moved]
        self.sorted_members.remove(old)
        self.sorted_members.remove(new)
        self.movements.move(moved, old, new)
        self._take(old, moved)
        self._give(new, moved)
        self.partition_owner[moved] = new
        self.sorted_members.add(new, self._size(new))
        self.sorted_members.add(old, self._size(old))
