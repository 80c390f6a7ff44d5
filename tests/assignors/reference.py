"""Slow, literal re-statements of Kafka's Range and RoundRobin algorithms, for property tests.

They follow Kafka's control flow step by step (a circular iterator stepped once per member, a
per-topic state with a set of unassigned partitions scanned from the start), with none of the fast
paths of ``kgroup.assignors.range`` / ``roundrobin``; the property tests check that both agree on
random groups.
"""

from __future__ import annotations

from kgroup.assignors.api import AssignmentRequest
from kgroup.javacompat import hashmap_iteration_order, java_string_key
from kgroup.model import Assignment, Member, TopicPartition


def _member_order(members: list[Member]) -> list[Member]:
    """``Utils.sorted(memberInfos)`` over members collected in ``HashMap`` iteration order."""
    by_id = {m.member_id: m for m in members}
    collected = [by_id[i] for i in hashmap_iteration_order(m.member_id for m in members)]

    def key(m: Member) -> tuple[int, bytes]:
        if m.group_instance_id is not None:
            return (0, java_string_key(m.group_instance_id))
        return (1, java_string_key(m.member_id))

    return sorted(collected, key=key)


def _partitions_per_topic(request: AssignmentRequest) -> dict[str, int]:
    subscribed = {t for m in request.members for t in m.topics}
    return {
        t: request.topics[t].partitions
        for t in subscribed
        if t in request.topics and request.topics[t].partitions > 0
    }


def reference_roundrobin(request: AssignmentRequest) -> Assignment:
    members = list(request.members)
    partitions_per_topic = _partitions_per_topic(request)
    assignment: Assignment = {m.member_id: [] for m in members}
    ring = _member_order(members)
    cursor = 0
    topics = sorted({t for m in members for t in m.topics}, key=java_string_key)
    for topic in topics:
        if topic not in partitions_per_topic:
            continue
        for p in range(partitions_per_topic[topic]):
            while topic not in ring[cursor % len(ring)].topics:  # peek(); next() while not subscribed
                cursor += 1
            assignment[ring[cursor % len(ring)].member_id].append(TopicPartition(topic, p))
            cursor += 1
    return assignment


class _State:
    def __init__(self, topic: str, count: int, consumers: list[Member], request: AssignmentRequest) -> None:
        self.topic = topic
        self.consumers = consumers
        self.rack = {c.member_id: (c.rack_id or None) for c in consumers}
        self.unassigned = [TopicPartition(topic, p) for p in range(count)]
        self.assigned = {c.member_id: 0 for c in consumers}
        self.per = count // len(consumers)
        self.extra = count % len(consumers)
        consumer_racks = {r for r in self.rack.values() if r is not None}
        meta = request.topics[topic]
        self.partition_racks: dict[int, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumer_racks:
            for p in range(count):
                racks = meta.racks[p] if meta.racks is not None else frozenset()
                self.partition_racks[p] = racks
                all_partition_racks |= racks
        if not consumer_racks or not (consumer_racks & all_partition_racks):
            self.needs = False
        elif request.prefer_rack_aware_logic:
            self.needs = True
        else:
            self.needs = not all(r == all_partition_racks for r in self.partition_racks.values())

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.rack[consumer]
        return rack is None or rack in self.partition_racks.get(tp.partition, frozenset())

    def max_assignable(self, consumer: str) -> int:
        return max(0, self.per + (1 if self.extra > 0 else 0) - self.assigned[consumer])

    def on_assigned(self, consumer: str, tps: list[TopicPartition]) -> None:
        self.assigned[consumer] += len(tps)
        if self.assigned[consumer] > self.per:
            self.extra -= 1
        for tp in tps:
            self.unassigned.remove(tp)


def reference_range(request: AssignmentRequest) -> Assignment:
    members = list(request.members)
    ordered = _member_order(members)
    partitions_per_topic = _partitions_per_topic(request)
    assignment: Assignment = {m.member_id: [] for m in members}
    states = []
    for topic, count in partitions_per_topic.items():
        consumers: list[Member] = []
        for m in ordered:
            if topic in m.topics and m not in consumers:
                consumers.append(m)
        states.append(_State(topic, count, consumers, request))

    def assign(consumer: str, tps: list[TopicPartition], state: _State) -> None:
        assignment[consumer].extend(tps)
        state.on_assigned(consumer, tps)

    def assign_ranges(state: _State, rack_matching: bool) -> None:
        for c in state.consumers:
            if not state.unassigned:
                break
            limit = state.max_assignable(c.member_id)
            ok = [tp for tp in state.unassigned if not rack_matching or state.racks_match(c.member_id, tp)]
            chosen = ok[:limit]
            if chosen:
                assign(c.member_id, chosen, state)

    use_rack_aware = any(s.needs for s in states)
    if use_rack_aware:
        groups: dict[tuple[tuple[str, ...], int], list[_State]] = {}
        for s in states:
            key = (tuple(c.member_id for c in s.consumers), len(s.partition_racks))
            groups.setdefault(key, []).append(s)
        for (consumer_ids, n), group in groups.items():
            if len(group) > 1:
                remaining = list(consumer_ids)
                for p in range(n):
                    match = [
                        c
                        for c in remaining
                        if all(
                            s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0
                            for s in group
                        )
                    ]
                    if match:
                        c = match[0]
                        for s in group:
                            assign(c, [TopicPartition(s.topic, p)], s)
                        if not any(s.max_assignable(c) > 0 for s in group):
                            remaining.remove(c)
                            if not remaining:
                                break
            elif group[0].needs:
                assign_ranges(group[0], rack_matching=True)
    for s in states:
        assign_ranges(s, rack_matching=False)
    return assignment
