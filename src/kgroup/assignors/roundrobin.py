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
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import cycle, repeat

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.common import PartitionMaker, build_layout, drain, gc_paused
from kgroup.model import Assignment, RebalanceProtocol

__all__ = ["RoundRobinAssignor"]

#: from this many partitions per member on, a member's share is taken as one slice rather than
#: appended partition by partition (slices cost an object each; appends cost per partition)
_STRIDED_FROM = 8


class RoundRobinAssignor(Assignor):
    """``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (EAGER only)."""

    name = "roundrobin"
    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        with gc_paused():
            layout = build_layout(request.members, request.topics)
            lists = layout.empty_lists()
            make = PartitionMaker()
            cursor = 0  # position of the member the shared iterator's peek() would return
            for topic, subscribers, member_lists in zip(
                layout.topics, layout.subscribers, layout.lists_by_subscribers(lists), strict=True
            ):
                count = topic.partitions
                width = len(subscribers)
                first = bisect_left(subscribers, cursor) % width  # skip members not subscribed
                # the subscribers' lists in dealing order, starting with the one that gets partition 0
                order = member_lists[first:] + member_lists[:first] if first else member_lists
                partitions = make(topic.name, count)
                if count < _STRIDED_FROM * width:
                    # partition i to order[i % width]: one C-level append per partition
                    drain(map(list.append, cycle(order), partitions))
                else:  # many partitions per member: one strided slice each
                    strides = map(slice, range(width), repeat(None), repeat(width))
                    drain(map(list.extend, order, map(partitions.__getitem__, strides)))
                cursor = subscribers[(first + count - 1) % width] + 1
            return layout.to_assignment(request.members, lists)
