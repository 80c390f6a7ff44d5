"""Rack awareness of the sticky assignors (KIP-881), as ``AbstractStickyAssignor.RackInfo`` decides it.

Rack-aware logic is used for the whole assignment when some member has a (non-empty) rack, those
racks meet the partitions' replica racks, and not every partition has replicas on every rack (or
Kafka's test-only ``preferRackAwareLogic`` forces it). A member without a rack never mismatches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroup.assignors.sticky._tp import new_partition
from kgroup.model import Member, TopicMetadata, TopicPartition

__all__ = ["RackInfo", "build_rack_info"]

_NO_RACKS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class RackInfo:
    """``consumer_racks`` / ``partition_racks`` are empty unless rack-aware logic is on.

    ``consumers_on_racks`` (partition -> number of members on its replicas' racks) is filled whenever
    some member has a rack, even when rack-aware logic is off: Kafka sorts unassigned partitions by it
    in the constrained path either way (it changes nothing then, the counts being all equal).
    """

    consumer_racks: Mapping[str, str]
    partition_racks: Mapping[TopicPartition, frozenset[str]]
    consumers_on_racks: Mapping[TopicPartition, int]

    @property
    def rack_aware(self) -> bool:
        return bool(self.consumer_racks)

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is None or rack not in replica_racks

    def sort_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Stable sort by the number of members on the partition's racks (fewest first)."""
        if not self.consumers_on_racks:
            return partitions
        counts = self.consumers_on_racks
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: Sequence[str], first_index: int) -> int:
        """Index of the first member (cyclically from ``first_index``) on one of ``tp``'s racks, or -1."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first_index + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


def build_rack_info(
    member_order: Sequence[str],
    members: Mapping[str, Member],
    topics: Mapping[str, TopicMetadata],
    prefer_rack_aware_logic: bool,
) -> RackInfo:
    """``RackInfo`` over the assignable ``topics`` (name -> metadata) and the members."""
    consumers_by_rack: dict[str, list[str]] = {}
    for member_id in member_order:
        rack = members[member_id].rack_id
        if rack:
            consumers_by_rack.setdefault(rack, []).append(member_id)
    if not consumers_by_rack:
        return RackInfo({}, {}, {})

    partition_racks: dict[TopicPartition, frozenset[str]] = {}
    all_partition_racks: set[str] = set()
    for metadata in topics.values():
        for p in range(metadata.partitions):
            racks = metadata.racks[p] if metadata.racks is not None else _NO_RACKS
            partition_racks[new_partition((metadata.name, p))] = racks
            all_partition_racks.update(racks)

    # many partitions share one rack set: count its members once
    count_for: dict[frozenset[str], int] = {}
    consumers_on_racks: dict[TopicPartition, int] = {}
    for tp, racks in partition_racks.items():
        count = count_for.get(racks)
        if count is None:
            count = count_for[racks] = sum(len(consumers_by_rack.get(r, ())) for r in racks)
        consumers_on_racks[tp] = count
    if consumers_by_rack.keys().isdisjoint(all_partition_racks):
        use = False
    elif prefer_rack_aware_logic:
        use = True
    else:
        use = not all(racks == all_partition_racks for racks in partition_racks.values())
    if not use:
        return RackInfo({}, {}, consumers_on_racks)
    consumer_racks = {c: rack for rack, consumers in consumers_by_rack.items() for c in consumers}
    return RackInfo(consumer_racks, partition_racks, consumers_on_racks)
