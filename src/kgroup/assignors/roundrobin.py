"""Kafka's ``RoundRobinAssignor`` (Kafka 4.0).

All partitions of the subscribed, existing topics, topics in Java ``String`` order and partitions
ascending, are dealt to the members in ``MemberInfo`` order through **one** circular iterator shared
by all topics: for each partition, members not subscribed to its topic are skipped (they lose their
turn), and the partition goes to the next subscribed member; the iterator then continues after it.

Instead of stepping the iterator a million times, each topic is dealt in one go: if the cursor
stands at member position ``c`` and the topic's subscribers are ``S`` (ascending positions), the
first partition goes to the first ``S[k] >= c`` (wrapping), partition ``i`` to ``S[(k + i) % len(S)]``,
so subscriber ``S[j]`` receives the strided slice starting at ``(j - k) % len(S)``. The cursor then
moves just past the member that received the topic's last partition. This is exactly the iterator's
behaviour, in O(members) per topic.

The deal is computed on integers (the receiving member of every partition, then one stable sort by
member); each member's list is a :class:`~kgroup.assignors.fast.partition_list.FlatPartitionList`,
whose ``TopicPartition`` objects are built when it is first read.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.common import build_layout
from kgroup.assignors.fast.partition_list import FlatPartitionList, TopicTable
from kgroup.model import Assignment, RebalanceProtocol, TopicPartition

__all__ = ["RoundRobinAssignor"]

#: up to this many members, member positions fit an int16, which numpy's stable sort radix-sorts
_INT16_MEMBERS = 32_767


class RoundRobinAssignor(Assignor):
    """``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (EAGER only)."""

    name = "roundrobin"
    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        layout = build_layout(request.members, request.topics)
        counts = np.array([topic.partitions for topic in layout.topics], dtype=np.int64)
        bases = np.zeros(counts.size, dtype=np.int64)
        if counts.size > 1:
            np.cumsum(counts[:-1], out=bases[1:])
        total = int(counts.sum())
        member_count = len(layout.members)
        # owner[p]: the member position that receives flat partition p (topics in Java order,
        # partitions ascending: the order the shared iterator deals them)
        owner = np.empty(total, dtype=np.int16 if member_count <= _INT16_MEMBERS else np.int64)
        steps = np.arange(int(counts.max()) if counts.size else 0, dtype=np.int64)
        as_array: dict[int, np.ndarray] = {}
        cursor = 0  # position of the member the shared iterator's peek() would return
        for topic, subscribers, base in zip(layout.topics, layout.subscribers, bases.tolist(), strict=True):
            count = topic.partitions
            width = len(subscribers)
            first = bisect_left(subscribers, cursor) % width  # skip members not subscribed
            positions = as_array.get(id(subscribers))
            if positions is None:
                positions = as_array[id(subscribers)] = np.array(subscribers, dtype=owner.dtype)
            # partition i goes to subscribers[(first + i) % width]
            owner[base:base + count] = positions[(steps[:count] + first) % width]
            cursor = subscribers[(first + count - 1) % width] + 1
        # each member's flat partitions, ascending: a stable sort by owner (a radix sort on int16)
        flat = np.argsort(owner, kind="stable")
        ends = np.cumsum(np.bincount(owner, minlength=member_count)).tolist()
        table = TopicTable([topic.name for topic in layout.topics], bases)
        lists: list[list[TopicPartition]] = []
        start = 0
        for end in ends:
            lists.append(FlatPartitionList(flat[start:end], table) if end > start else [])
            start = end
        return layout.to_assignment(request.members, lists)
