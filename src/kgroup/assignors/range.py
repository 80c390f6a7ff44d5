"""Kafka's ``RangeAssignor`` (Kafka 4.0), including KIP-881 rack-aware assignment.

Per topic, the subscribers in ``MemberInfo`` order each take a contiguous range: ``n = P // C``
partitions, and the first ``P % C`` of them one more. Topics are independent.

Rack-aware assignment (KIP-881) runs only when some topic qualifies (see
:func:`~kgroup.assignors.common.use_rack_aware_assignment`). Then, before the plain range pass, a
rack-matching pass runs over every topic whose subscribers include a member with a rack:

* topics with the same subscribers and the same partition count ("co-partitioned") are handled
  together, partition index by partition index: partition ``p`` of all of them goes to the first
  remaining subscriber whose rack holds ``p`` of every one of them and that still has quota in every
  one of them;
* a topic alone (only if it qualifies itself) gives each subscriber in order the first unassigned
  partitions on its rack, up to its quota.

Quotas are dynamic, as in Kafka: a member may take ``n + 1`` while fewer than ``P % C`` members have
exceeded ``n``, so in rack-aware mode the extra partitions need not go to the first members. The plain
range pass then fills what is left with the same quotas, in member order. A member without a rack
matches every partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.common import (
    GroupLayout,
    PartitionMaker,
    build_layout,
    drain,
    member_rack,
    python_order_is_java_order,
    use_rack_aware_assignment,
)
from kgroup.assignors.fast.partition_list import flat_numbering, lists_by_owner, owner_array
from kgroup.model import Assignment, Member, RebalanceProtocol, TopicMetadata, TopicPartition

__all__ = ["RangeAssignor"]

#: from this many partitions per member on, a member's range is taken as one slice rather than
#: appended partition by partition (slices cost an object each; appends cost per partition)
_SLICED_FROM = 8


class RangeAssignor(Assignor):
    """``org.apache.kafka.clients.consumer.RangeAssignor``: contiguous ranges per topic (EAGER only)."""

    name = "range"
    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        layout = build_layout(request.members, request.topics)
        lists = layout.empty_lists()
        make = PartitionMaker()
        states = _rack_aware_states(layout, request.prefer_rack_aware_logic, make)
        if states is None:
            return _plain_assignment(layout, request.members)
        if states is not None:
            _assign_with_rack_matching(states, lists)
        for topic, member_lists in zip(layout.topics, layout.lists_by_subscribers(lists), strict=True):
            state = states.get(topic.name) if states is not None else None
            if state is None:
                _assign_plain_ranges(make(topic.name, topic.partitions), member_lists)
            else:
                _assign_ranges(state, lists, rack_matching=False)
        if states is not None:
            # the rack pass appends out of order; Kafka sorts every list in that case
            if python_order_is_java_order(topic.name for topic in layout.topics):
                for partitions in lists:
                    partitions.sort()  # (topic, partition) tuples compare in C
            else:
                rank = {topic.name: i for i, topic in enumerate(layout.topics)}
                for partitions in lists:
                    partitions.sort(key=lambda tp: (rank[tp.topic], tp.partition))
        return layout.to_assignment(request.members, lists)


def _plain_assignment(layout: GroupLayout, request_members: Sequence[Member]) -> Assignment:
    """Range without rack matching, on integers: the receiving member of every partition, per topic
    ``n = P // C`` each and the first ``P % C`` subscribers one more; the lists are
    ``FlatPartitionList``s, whose ``TopicPartition`` objects are built when first read."""
    counts, table = flat_numbering([t.partitions for t in layout.topics], [t.name for t in layout.topics])
    owner = owner_array(int(counts.sum()), len(layout.members))
    shares: dict[tuple[int, int], np.ndarray] = {}  # (subscribers, count) -> owner of each partition
    bases = table.bases.tolist()
    for topic, subscribers, base in zip(layout.topics, layout.subscribers, bases, strict=True):
        count = topic.partitions
        dealt = shares.get((id(subscribers), count))
        if dealt is None:
            per_member, extra = divmod(count, len(subscribers))
            sizes = np.full(len(subscribers), per_member, dtype=np.int64)
            sizes[:extra] += 1
            dealt = np.repeat(np.array(subscribers, dtype=owner.dtype), sizes)
            shares[(id(subscribers), count)] = dealt
        owner[base:base + count] = dealt
    return layout.to_assignment(request_members, lists_by_owner(owner, len(layout.members), table))


def _assign_plain_ranges(partitions: list[TopicPartition], member_lists: list[list[TopicPartition]]) -> None:
    """The classic split of one topic (untouched by a rack pass): ``n = P // C`` each, the first
    ``P % C`` subscribers one more. Dealt with C-level ``map`` calls, no Python loop per member."""
    count, width = len(partitions), len(member_lists)
    per_member, extra = divmod(count, width)
    if per_member == 0 or (per_member == 1 and extra == 0):  # at most one each: pair them up
        drain(map(list.append, member_lists, partitions))
    elif per_member < _SLICED_FROM:
        # a flat sequence naming, for each partition in order, the list it goes to
        shares = chain(repeat(per_member + 1, extra), repeat(per_member, width - extra))
        drain(map(list.append, chain.from_iterable(map(repeat, member_lists, shares)), partitions))
    else:  # many partitions per member: one slice each
        big = (per_member + 1) * extra  # the partitions of the members with one more
        starts = chain(range(0, big, per_member + 1), range(big, count, per_member))
        ends = chain(
            range(per_member + 1, big + 1, per_member + 1), range(big + per_member, count + 1, per_member)
        )
        drain(map(list.extend, member_lists, map(partitions.__getitem__, map(slice, starts, ends))))


class _TopicState:
    """Kafka's ``RangeAssignor.TopicAssignmentState`` for one topic in rack-aware mode.

    Subscribers are addressed by their index ``j`` in ``subscribers``. Unassigned partitions are
    tracked with a ``taken`` flag per partition and forward-only cursors (one over all partitions, one
    per rack over the partitions with a replica on that rack): partitions are only ever taken, so each
    cursor passes each partition once.
    """

    __slots__ = (
        "_cursor",
        "_rack_cursor",
        "_rack_lists",
        "consumer_racks",
        "count",
        "left",
        "needs_rack_aware",
        "partition_racks",
        "partitions",
        "per_member",
        "remaining_extra",
        "subscribers",
        "taken",
        "topic",
    )

    def __init__(
        self,
        topic: TopicMetadata,
        subscribers: tuple[int, ...],
        consumer_racks: list[str | None],
        prefer_rack_aware_logic: bool,
        partitions: list[TopicPartition],
    ) -> None:
        self.topic = topic
        self.subscribers = subscribers
        self.consumer_racks = consumer_racks
        self.partitions = partitions
        no_racks: frozenset[str] = frozenset()
        self.partition_racks: tuple[frozenset[str], ...] = (
            topic.racks if topic.racks is not None else (no_racks,) * topic.partitions
        )
        self.per_member, self.remaining_extra = divmod(topic.partitions, len(subscribers))
        self.count = [0] * len(subscribers)
        self.taken = bytearray(topic.partitions)
        self.left = topic.partitions
        self._cursor = 0
        self._rack_lists: dict[str, list[int]] = {}
        self._rack_cursor: dict[str, int] = {}
        racks = {r for r in consumer_racks if r is not None}
        self.needs_rack_aware = use_rack_aware_assignment(
            racks, self.partition_racks, prefer_rack_aware_logic
        )

    def max_assignable(self, j: int) -> int:
        quota = self.per_member + (1 if self.remaining_extra > 0 else 0)
        return max(0, quota - self.count[j])

    def racks_match(self, j: int, partition: int) -> bool:
        rack = self.consumer_racks[j]
        return rack is None or rack in self.partition_racks[partition]

    def on_assigned(self, j: int, numbers: Sequence[int], lists: list[list[TopicPartition]]) -> None:
        taken = self.taken
        partitions = self.partitions
        target = lists[self.subscribers[j]]
        for p in numbers:
            taken[p] = 1
            target.append(partitions[p])
        self.left -= len(numbers)
        self.count[j] += len(numbers)
        if self.count[j] > self.per_member:
            self.remaining_extra -= 1

    def first_unassigned(self, limit: int) -> list[int]:
        """The first ``limit`` unassigned partitions in partition order."""
        out: list[int] = []
        p, end, taken = self._cursor, self.topic.partitions, self.taken
        while p < end and len(out) < limit:
            if not taken[p]:
                out.append(p)
            p += 1
        # everything before p is now taken (or about to be): the cursor never needs to look back
        self._cursor = p
        return out

    def first_unassigned_on_rack(self, rack: str, limit: int) -> list[int]:
        """The first ``limit`` unassigned partitions with a replica on ``rack``, in partition order."""
        numbers = self._rack_lists.get(rack)
        if numbers is None:
            numbers = [p for p, racks in enumerate(self.partition_racks) if rack in racks]
            self._rack_lists[rack] = numbers
        out: list[int] = []
        i, end, taken = self._rack_cursor.get(rack, 0), len(numbers), self.taken
        while i < end and len(out) < limit:
            if not taken[numbers[i]]:
                out.append(numbers[i])
            i += 1
        self._rack_cursor[rack] = i
        return out


def _rack_aware_states(
    layout: GroupLayout, prefer_rack_aware_logic: bool, make: PartitionMaker
) -> dict[str, _TopicState] | None:
    """States of the topics whose subscribers include a member with a rack, or ``None`` when no topic
    qualifies for rack-aware assignment (then Range is the plain split everywhere)."""
    racks = [member_rack(m) for m in layout.members]
    if not any(racks):
        return None
    states: dict[str, _TopicState] = {}
    for topic, subscribers in zip(layout.topics, layout.subscribers, strict=True):
        consumer_racks = [racks[i] for i in subscribers]
        if any(consumer_racks):
            partitions = make(topic.name, topic.partitions)
            states[topic.name] = _TopicState(
                topic, subscribers, consumer_racks, prefer_rack_aware_logic, partitions
            )
    if not any(state.needs_rack_aware for state in states.values()):
        return None
    return states


def _assign_with_rack_matching(states: dict[str, _TopicState], lists: list[list[TopicPartition]]) -> None:
    """Kafka's ``assignWithRackMatching``: group by (subscribers, partition count), then match racks.

    The order in which groups are visited does not matter: each group touches only its own topics.
    """
    groups: dict[tuple[tuple[int, ...], int], list[_TopicState]] = {}
    for state in states.values():
        groups.setdefault((state.subscribers, state.topic.partitions), []).append(state)
    for (_, partition_count), group in groups.items():
        if len(group) > 1:
            _assign_co_partitioned(group, partition_count, lists)
        elif group[0].needs_rack_aware:
            _assign_ranges(group[0], lists, rack_matching=True)


def _assign_co_partitioned(
    group: list[_TopicState], partition_count: int, lists: list[list[TopicPartition]]
) -> None:
    """Partition ``p`` of every topic in ``group`` to the first remaining member that matches all.

    Kafka asks every topic's state "does the rack match, is there quota left" for each candidate.
    The group's states start fresh and every step assigns the same index in all of them, so their
    quotas move in lockstep: one shared count per member answers the quota question for all, and a
    member's rack matches partition ``p`` of every topic iff it is in the intersection of their racks.
    """
    first = group[0]
    racks = first.consumer_racks  # same subscribers in every state of the group
    per_member, extra = first.per_member, first.remaining_extra
    count = [0] * len(first.subscribers)
    rack_sets = [state.partition_racks for state in group]
    partition_lists = [state.partitions for state in group]
    taken_flags = [state.taken for state in group]
    remaining = list(range(len(first.subscribers)))
    assigned = 0
    for p in range(partition_count):
        quota = per_member + 1 if extra > 0 else per_member
        common: frozenset[str] | None = None  # the racks holding p of every topic, when first needed
        chosen = -1
        for index, j in enumerate(remaining):
            if count[j] >= quota:
                continue
            rack = racks[j]
            if rack is not None:
                if common is None:
                    common = frozenset.intersection(*(r[p] for r in rack_sets))
                if rack not in common:
                    continue
            chosen = index
            break
        if chosen < 0:
            continue
        j = remaining[chosen]
        lists[first.subscribers[j]].extend([partitions[p] for partitions in partition_lists])
        for taken in taken_flags:
            taken[p] = 1
        assigned += 1
        count[j] += 1
        if count[j] > per_member:
            extra -= 1
        if count[j] >= (per_member + 1 if extra > 0 else per_member):  # no quota left in any topic
            del remaining[chosen]
            if not remaining:
                break
    for state in group:
        state.count = count.copy()
        state.remaining_extra = extra
        state.left -= assigned


def _assign_ranges(state: _TopicState, lists: list[list[TopicPartition]], *, rack_matching: bool) -> None:
    """Kafka's ``assignRanges``: each member in order takes its first assignable partitions."""
    for j in range(len(state.subscribers)):
        if state.left == 0:
            break
        limit = state.max_assignable(j)
        if limit == 0:
            continue
        rack = state.consumer_racks[j] if rack_matching else None
        numbers = (
            state.first_unassigned(limit) if rack is None else state.first_unassigned_on_rack(rack, limit)
        )
        if numbers:
            state.on_assigned(j, numbers, lists)
