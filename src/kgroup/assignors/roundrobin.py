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

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.common import build_layout, topic_partitions
from kgroup.model import Assignment, RebalanceProtocol

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(Assignor):
    """``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (EAGER only)."""

    name = "roundrobin"
    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        layout = build_layout(request.members, request.topics)
        lists = layout.empty_lists()
        cursor = 0  # position of the member the shared iterator's peek() would return
        for topic, subscribers in zip(layout.topics, layout.subscribers, strict=True):
            count = topic.partitions
            width = len(subscribers)
            first = bisect_left(subscribers, cursor) % width  # skip members not subscribed
            partitions = topic_partitions(topic.name, count)
            if count <= width:
                for i in range(count):
                    lists[subscribers[(first + i) % width]].append(partitions[i])
            else:
                for offset in range(width):
                    lists[subscribers[(first + offset) % width]].extend(partitions[offset::width])
            cursor = subscribers[(first + count - 1) % width] + 1
        return layout.to_assignment(request.members, lists)
