"""One share group's state and its replay (Kafka's ``ShareGroup`` and ``ShareGroupMember``).

Only :meth:`ShareGroupData.apply` changes it, one ``ShareGroup*`` record at a time, as
``GroupMetadataManager.replay`` does. A share group is Empty without members and Stable with any:
a share member has no revocation handshake (its assignment is set to its target at once), so the
group has neither Assigning nor Reconciling.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from kgroup.group.admin import DescribedMembers
from kgroup.group.assignors import SubscriptionType
from kgroup.group.modern import ModernGroupData
from kgroup.group.records import share as records
from kgroup.group.records.consumer import TargetAssignmentMetadataValue, TopicAssignment
from kgroup.group.states import KafkaNamedState
from kgroup.javacompat import timeline_table_after_put
from kgroup.messages import DescribedShareMember
from kgroup.model import TopicId
from kgroup.valuetypes import value_type

__all__ = ["ShareGroupData", "ShareGroupState", "ShareMember", "SharePartitionStates"]


class ShareGroupState(KafkaNamedState):
    """``ShareGroup.ShareGroupState``."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@value_type
class ShareMember:
    """``ShareGroupMember``: ``subscribed_topic_names`` in the order its ``HashSet`` iterates them."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = 0  # MemberState.STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned_partitions: TopicAssignment = field(default_factory=dict)

    def metadata_value(self) -> records.ShareMemberMetadataValue:
        return records.ShareMemberMetadataValue(
            self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names
        )

    def assignment_value(self) -> records.ShareCurrentAssignmentValue:
        return records.ShareCurrentAssignmentValue(
            self.member_epoch, self.previous_member_epoch, self.state, self.assigned_partitions
        )

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.member_epoch == target_epoch


@dataclass(slots=True)
class SharePartitionStates:
    """``ShareGroupStatePartitionMetadataInfo``: topic -> (name, partitions) being initialised (with
    when kgroup asked, in memory only: Kafka keeps the replay time), initialised, and being deleted."""

    initializing: dict[TopicId, tuple[str, frozenset[int], int]] = field(default_factory=dict)
    initialized: dict[TopicId, tuple[str, frozenset[int]]] = field(default_factory=dict)
    deleting: dict[TopicId, str] = field(default_factory=dict)

    def value(self) -> records.ShareStatePartitionValue:
        return records.ShareStatePartitionValue(
            tuple(
                records.SharePartitionsInfo(t, n, tuple(sorted(p)))
                for t, (n, p, _) in self.initializing.items()
            ),
            tuple(
                records.SharePartitionsInfo(t, n, tuple(sorted(p))) for t, (n, p) in self.initialized.items()
            ),
            tuple(self.deleting.items()),
        )

    def assignable(self) -> dict[TopicId, frozenset[int]]:
        """``stripInitValue(initializedTopics)``: what the assignor may hand out."""
        return {t: p for t, (_, p) in self.initialized.items()}


@dataclass(slots=True)
class ShareGroupData(ModernGroupData[ShareMember]):
    """The mutable state of one share group; change it only through :meth:`apply`."""

    #: topic name -> how many members subscribe to it
    subscribed_topic_names: dict[str, int] = field(default_factory=dict)
    partition_states: SharePartitionStates | None = None
    #: the metadata refresh deadline's epoch (``setMetadataRefreshDeadline``): the hash is recomputed
    #: when the group epoch moved past it
    metadata_refresh_epoch: int = -1
    #: the members as the last ShareGroupDescribe described them: a cache, not state
    #: (``requests.handle_share_describe``)
    described_members: DescribedMembers[ShareMember, None, DescribedShareMember] = field(
        default_factory=DescribedMembers, compare=False, repr=False
    )

    # --- reading -----------------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        return "share"

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def is_empty(self) -> bool:
        return not self.members

    def subscription_type(self, names: Mapping[str, int], members: int) -> SubscriptionType:
        """``ModernGroup.subscriptionType``: homogeneous when every subscribed name has every member."""
        if all(count == members for count in names.values()):
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS

    def names_with(self, old: ShareMember | None, new: ShareMember | None) -> dict[str, int]:
        """``computeSubscribedTopicNames(oldMember, newMember)``: the counts with one member changed."""
        counts = dict(self.subscribed_topic_names)
        for name in old.subscribed_topic_names if old is not None else ():
            left = counts.get(name, 0) - 1
            if left > 0:
                counts[name] = left
            else:
                counts.pop(name, None)
        for name in new.subscribed_topic_names if new is not None else ():
            counts[name] = counts.get(name, 0) + 1
        return counts

    # --- replay ------------------------------------------------------------------------------------

    def apply(self, record: records.ShareGroupRecord) -> None:
        if isinstance(record, records.ShareGroupMetadata):
            assert record.value is not None  # the tombstone is the kind's: it deletes the group
            self.group_epoch, self.metadata_hash = record.value
        elif isinstance(record, records.ShareGroupMemberMetadata):
            old = self.members.get(record.member_id)
            if record.value is None:
                if old is not None:
                    self._count(old, -1)
                    del self.members[record.member_id]
                return
            v = record.value
            base = old if old is not None else ShareMember(record.member_id)
            new = replace(
                base,
                rack_id=v.rack_id,
                client_id=v.client_id,
                client_host=v.client_host,
                subscribed_topic_names=v.subscribed_topic_names,
            )
            self._put(old, new)
        elif isinstance(record, records.ShareGroupCurrentMemberAssignment):
            old = self.members.get(record.member_id)
            base = old if old is not None else ShareMember(record.member_id)
            if record.value is None:
                new = replace(base, member_epoch=-1, previous_member_epoch=-1, assigned_partitions={})
            else:
                c = record.value
                new = replace(
                    base,
                    member_epoch=c.member_epoch,
                    previous_member_epoch=c.previous_member_epoch,
                    state=c.state,
                    assigned_partitions=dict(c.assigned_partitions),
                )
            if old is None and record.value is None:
                return
            self._put(old, new)
        elif isinstance(record, records.ShareGroupTargetAssignmentMember):
            if record.value is None:
                self.target_assignment.pop(record.member_id, None)
            else:
                self.target_assignment[record.member_id] = dict(record.value)
        elif isinstance(record, records.ShareGroupTargetAssignmentMetadata):
            value = record.value if record.value is not None else TargetAssignmentMetadataValue(0, 0)
            self.assignment_epoch = value.assignment_epoch
            self.assignment_timestamp_ms = value.assignment_timestamp_ms
        elif isinstance(record, records.ShareGroupStatePartitionMetadata):
            if record.value is None:
                self.partition_states = None
                return
            old_states = self.partition_states
            asked = {} if old_states is None else old_states.initializing
            s = record.value
            self.partition_states = SharePartitionStates(
                {
                    i.topic_id: (
                        i.topic_name,
                        frozenset(i.partitions),
                        asked.get(i.topic_id, ("", frozenset(), 0))[2],
                    )
                    for i in s.initializing
                },
                {i.topic_id: (i.topic_name, frozenset(i.partitions)) for i in s.initialized},
                dict(s.deleting),
            )
        else:  # pragma: no cover - the kind routes only share records here
            raise AssertionError(f"not a share group record: {record!r}")

    def note_initializing_asked(self, topics: Mapping[TopicId, int]) -> None:
        """When kgroup asked for these topics' initialisation (not in a record: see
        :class:`SharePartitionStates`)."""
        states = self.partition_states
        if states is None:
            return
        for topic, when in topics.items():
            found = states.initializing.get(topic)
            if found is not None:
                states.initializing[topic] = (found[0], found[1], when)

    def _put(self, old: ShareMember | None, new: ShareMember) -> None:
        self.members_table = timeline_table_after_put(len(self.members), self.members_table)
        if old is not None:
            self._count(old, -1)
        self.members[new.member_id] = new
        self._count(new, 1)

    def _count(self, member: ShareMember, delta: int) -> None:
        counts = self.subscribed_topic_names
        for name in member.subscribed_topic_names:
            value = counts.get(name, 0) + delta
            if value > 0:
                counts[name] = value
            else:
                counts.pop(name, None)

    # --- checkpoint and snapshot -------------------------------------------------------------------

    def checkpoint_records(self) -> Iterator[records.ShareGroupRecord]:
        """Records that rebuild this group in an empty coordinator (Kafka's compaction keeps these)."""
        gid = self.group_id
        yield records.ShareGroupMetadata(gid, (self.group_epoch, self.metadata_hash))
        for member in self.members.values():
            yield records.ShareGroupMemberMetadata(gid, member.member_id, member.metadata_value())
        for member_id, target in self.target_assignment.items():
            yield records.ShareGroupTargetAssignmentMember(gid, member_id, target)
        yield records.ShareGroupTargetAssignmentMetadata(
            gid, TargetAssignmentMetadataValue(self.assignment_epoch, self.assignment_timestamp_ms)
        )
        for member in self.members.values():
            yield records.ShareGroupCurrentMemberAssignment(gid, member.member_id, member.assignment_value())
        if self.partition_states is not None:
            yield records.ShareGroupStatePartitionMetadata(gid, self.partition_states.value())

    def tombstone_records(self) -> list[records.ShareGroupRecord]:
        """``ShareGroup.createGroupTombstoneRecords``: a tombstone for each of its records."""
        group_id = self.group_id
        members = list(self.members)
        tombstones: list[records.ShareGroupRecord] = [
            records.ShareGroupCurrentMemberAssignment(group_id, m, None) for m in members
        ]
        tombstones.extend(
            records.ShareGroupTargetAssignmentMember(group_id, m, None) for m in self.target_assignment
        )
        tombstones.append(records.ShareGroupTargetAssignmentMetadata(group_id, None))
        tombstones.extend(records.ShareGroupMemberMetadata(group_id, m, None) for m in members)
        if self.partition_states is not None:
            tombstones.append(records.ShareGroupStatePartitionMetadata(group_id, None))
        tombstones.append(records.ShareGroupMetadata(group_id, None))
        return tombstones

    def snapshot(self) -> tuple[object, ...]:
        def assignment(a: TopicAssignment) -> tuple[tuple[TopicId, tuple[int, ...]], ...]:
            return tuple(sorted((t, tuple(sorted(p))) for t, p in a.items()))

        states = self.partition_states
        return (
            self.group_id,
            self.group_epoch,
            self.metadata_hash,
            self.assignment_epoch,
            self.assignment_timestamp_ms,
            tuple(
                (
                    m.member_id,
                    m.member_epoch,
                    m.previous_member_epoch,
                    m.rack_id,
                    m.client_id,
                    m.client_host,
                    m.subscribed_topic_names,
                    assignment(m.assigned_partitions),
                )
                for m in sorted(self.members.values(), key=lambda m: m.member_id)
            ),
            tuple(sorted((m, assignment(a)) for m, a in self.target_assignment.items())),
            None if states is None else states.value(),
        )
