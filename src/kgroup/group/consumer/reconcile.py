"""A member's next current assignment (Kafka's ``CurrentAssignmentBuilder``), a pure function.

The member moves toward its target assignment one safe step at a time: it first gives up (revokes)
the partitions the target no longer gives it, and only then is given the new ones — and a new one
only once its previous owner released it (the coordinator knows an owner by the partition's epoch).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.metadata import MetadataImage
from kgroup.group.records.consumer import MemberAssignmentState, PartitionEpochs, ResolvedRegularExpression
from kgroup.messages import TopicPartitions
from kgroup.model import TopicId
from kgroup.valuetypes import replace

__all__ = ["FencedMemberEpoch", "next_assignment", "subscribed_topic_names"]

S = MemberAssignmentState


class FencedMemberEpoch(Exception):
    """``FencedMemberEpochException``: the member must abandon its partitions and rejoin."""


def subscribed_topic_names(
    member: ConsumerGroupMember, resolved: Mapping[str, ResolvedRegularExpression]
) -> Collection[str]:
    """The member's topic names plus those its regex resolved to (``UnionSet``)."""
    names: Collection[str] = member.subscribed_topic_names
    regex = member.regex
    if regex is not None:
        resolution = resolved.get(regex)
        if resolution is not None:
            if not names:
                names = resolution.topics
            elif resolution.topics:
                names = set(names) | resolution.topics
    return names


def _topic_ids(names: Collection[str], image: MetadataImage) -> set[TopicId]:
    topics = image.topics
    present = topics.keys() & names if len(names) > len(topics) else (n for n in names if n in topics)
    return {topics[name].topic_id for name in present}


def next_assignment(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: Mapping[TopicId, Collection[int]],
    image: MetadataImage,
    resolved_regexes: Mapping[str, ResolvedRegularExpression],
    current_partition_epoch: Callable[[TopicId, int], int],
    has_subscription_changed: bool,
    owned: tuple[TopicPartitions, ...] | None,
) -> ConsumerGroupMember:
    """``CurrentAssignmentBuilder.build``: the member after one reconciliation step."""
    builder = _Builder(member, target_epoch, target, image, resolved_regexes, current_partition_epoch, owned)
    state = member.state
    if state is S.STABLE:
        if member.member_epoch != target_epoch:
            return builder.compute_next(member.member_epoch, member.assigned_partitions)
        if has_subscription_changed:
            return builder.update_current(member.member_epoch, member.assigned_partitions)
        return member
    if state is S.UNREVOKED_PARTITIONS:
        if builder.owns_revoked(member.partitions_pending_revocation):
            if has_subscription_changed:
                return builder.update_current(member.member_epoch, member.assigned_partitions)
            return member
        return builder.compute_next(member.member_epoch, member.assigned_partitions)
    if state is S.UNRELEASED_PARTITIONS:
        return builder.compute_next(member.member_epoch, member.assigned_partitions)
    # UNKNOWN
    if owned is None or owned:
        raise FencedMemberEpoch(
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin."
        )
    return builder.compute_next(target_epoch, member.assigned_partitions)


@dataclass(frozen=True, slots=True)
class _Builder:
    """``CurrentAssignmentBuilder``'s inputs: the member, its target, and how to read the cluster."""

    member: ConsumerGroupMember
    target_epoch: int
    target: Mapping[TopicId, Collection[int]]
    image: MetadataImage
    resolved: Mapping[str, ResolvedRegularExpression]
    current_epoch_of: Callable[[TopicId, int], int]
    owned: tuple[TopicPartitions, ...] | None

    def subscribed_ids(self) -> set[TopicId]:
        return _topic_ids(subscribed_topic_names(self.member, self.resolved), self.image)

    def owns_revoked(self, pending: PartitionEpochs) -> bool:
        """Does the member still report owning any partition pending revocation? (Unknown: yes.)"""
        if self.owned is None:
            return True
        for topic in self.owned:
            revoking = pending.get(topic.topic_id)
            if revoking:
                for partition in topic.partitions:
                    if partition in revoking:
                        return True
        return False

    def update_current(self, member_epoch: int, assigned: PartitionEpochs) -> ConsumerGroupMember:
        """``updateCurrentAssignment``: revoke at once the partitions of topics no longer subscribed."""
        member = self.member
        subscribed = self.subscribed_ids()
        new_assigned: dict[TopicId, Mapping[int, int]]
        new_pending: dict[TopicId, Mapping[int, int]]
        if not subscribed and not member.partitions_pending_revocation:
            # Kafka compares map identity here: a member's map is never ``Map.of()`` once it has been
            # reconciled or replayed, so this is a change
            new_assigned, new_pending = {}, dict(assigned)
            changed = True
        else:
            new_assigned, new_pending = dict(assigned), dict(member.partitions_pending_revocation)
            changed = False
            for topic, partitions in assigned.items():
                if topic not in subscribed:
                    changed = True
                    del new_assigned[topic]
                    merged = dict(new_pending.get(topic, {}))
                    merged.update(partitions)
                    new_pending[topic] = merged
        if not changed:
            return member
        unrevoked = self._unrevoked(member_epoch, new_assigned, new_pending)
        if unrevoked is not None:
            return unrevoked
        return replace(member.update_member_epoch(member_epoch), assigned_partitions=new_assigned)

    def _unrevoked(
        self, member_epoch: int, new_assigned: PartitionEpochs, new_pending: PartitionEpochs
    ) -> ConsumerGroupMember | None:
        """The member at ``member_epoch`` in ``UNREVOKED_PARTITIONS`` when it still owns a partition of
        ``new_pending`` (``None``: it owns none, or nothing is pending)."""
        if not new_pending or not self.owns_revoked(new_pending):
            return None
        return replace(
            self.member.update_member_epoch(member_epoch),
            state=S.UNREVOKED_PARTITIONS,
            assigned_partitions=new_assigned,
            partitions_pending_revocation=new_pending,
        )

    def compute_next(self, member_epoch: int, assigned: PartitionEpochs) -> ConsumerGroupMember:
        """``computeNextAssignment``."""
        member = self.member
        subscribed = self.subscribed_ids()
        target_epoch = self.target_epoch
        has_unreleased = False
        new_assigned: dict[TopicId, dict[int, int]] = {}
        new_pending: dict[TopicId, dict[int, int]] = {}
        pending_assignment: dict[TopicId, list[int]] = {}
        pending_of_member = member.partitions_pending_revocation
        for topic in set(self.target) | set(assigned):
            target = self.target.get(topic, ()) if topic in subscribed else ()
            target_set = set(target)
            current = assigned.get(topic, {})
            kept = {p: e for p, e in current.items() if p in target_set}
            revoking = {p: e for p, e in current.items() if p not in kept}
            to_assign = []
            revoking_before = pending_of_member.get(topic, {})
            for partition in target:
                if partition in kept:
                    continue
                if self.current_epoch_of(topic, partition) != -1 and partition not in revoking_before:
                    has_unreleased = True
                else:
                    to_assign.append(partition)
            if kept:
                new_assigned[topic] = kept
            if revoking:
                new_pending[topic] = revoking
            if to_assign:
                pending_assignment[topic] = to_assign
        unrevoked = self._unrevoked(member_epoch, new_assigned, new_pending)
        if unrevoked is not None:
            return unrevoked
        for topic, partitions in pending_assignment.items():
            epochs = new_assigned.setdefault(topic, {})
            for partition in partitions:
                epochs[partition] = target_epoch
        return replace(
            member.update_member_epoch(target_epoch),
            state=S.UNRELEASED_PARTITIONS if has_unreleased else S.STABLE,
            assigned_partitions=new_assigned,
            partitions_pending_revocation={},
        )
