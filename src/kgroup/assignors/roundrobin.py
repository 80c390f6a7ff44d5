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
from kgroup.assignors.fast.partition_list import flat_numbering, lists_by_owner, owner_array
from kgroup.model import Assignment, RebalanceProtocol

__all__ = ["RoundRobinAssignor"]



class RoundRobinAssignor(Assignor):
    """``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (EAGER only)."""

    name = "roundrobin"
    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        layout = build_layout(request.members, request.topics)
        counts, table = flat_numbering([t.partitions for t in layout.topics], [t.name for t in layout.topics])
        member_count = len(layout.members)
        # owner[p]: the member position that receives flat partition p (topics in Java order,
        # partitions ascending: the order the shared iterator deals them)
        owner = owner_array(int(counts.sum()), member_count)
        steps = np.arange(int(counts.max()) if counts.size else 0, dtype=np.int64)
        as_array: dict[int, np.ndarray] = {}
        cursor = 0  # position of the member the shared iterator's peek() would return
        bases = table.bases.tolist()
        for topic, subscribers, base in zip(layout.topics, layout.subscribers, bases, strict=True):
            count = topic.partitions
            width = len(subscribers)
            first = bisect_left(subscribers, cursor) % width  # skip members not subscribed
            positions = as_array.get(id(subscribers))
            if positions is None:
                positions = as_array[id(subscribers)] = np.array(subscribers, dtype=owner.dtype)
            # partition i goes to subscribers[(first + i) % width]
            owner[base:base + count] = positions[(steps[:count] + first) % width]
            cursor = subscribers[(first + count - 1) % width] + 1
        lists = lists_by_owner(owner, member_count, table)
        return layout.to_assignment(request.members, lists)
