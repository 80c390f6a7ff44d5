"""One consumer group's state (Kafka's ``ConsumerGroup`` / ``ModernGroup``) and its replay.

Only :meth:`ConsumerGroupData.apply` changes a group: it applies Kafka's consumer-group records as
``GroupMetadataManager.replay`` does, and keeps the derived indexes Kafka keeps beside them
(subscribed topic counts, regex subscriber counts, server assignor votes, static members, the
current epoch of every owned partition, the inverted target assignment, the group state).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat

from kgroup.group.admin import DescribedMembers
from kgroup.group.assignors.api import InvertedTarget, MemberSpec, SubscriptionType, assignment_from_record
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.metadata import MetadataImage
from kgroup.group.modern import ModernGroupData
from kgroup.group.records import OffsetAndMetadata, OffsetCommitted
from kgroup.group.records import consumer as records
from kgroup.group.states import KafkaNamedState
from kgroup.javacompat import hashmap_iteration_order, timeline_table_after_put
from kgroup.messages import DescribedConsumerMember
from kgroup.model import TopicId, TopicPartition
from kgroup.valuetypes import replace

__all__ = ["ConsumerGroupData", "ConsumerGroupSnapshot", "ConsumerGroupState", "TopicCounts"]


class ConsumerGroupState(KafkaNamedState):
    """``ConsumerGroup.ConsumerGroupState`` (the value is Kafka's name for it)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class TopicCounts:
    """Kafka's ``Map<String, SubscriptionCount>``: per topic name, how many members subscribe to it
    by name and how many resolved regexes match it — kept as two counts of names (a name is in a
    count only while it is above 0), so that copying, comparing and listing them run in C on a group
    subscribed to 100,000 names."""

    by_name: dict[str, int] = field(default_factory=dict)
    by_regex: dict[str, int] = field(default_factory=dict)
    #: the names more than one member subscribes to by name (usually few: the rest change in bulk)
    shared: set[str] = field(default_factory=set)

    def copy(self) -> TopicCounts:
        return TopicCounts(dict(self.by_name), dict(self.by_regex), set(self.shared))

    def names(self) -> set[str]:
        """Every name subscribed to, by name or through a regex."""
        return self.by_name.keys() | self.by_regex.keys()

    def change_names(self, old: frozenset[str], new: frozenset[str]) -> None:
        """One member's subscribed names went from ``old`` to ``new``: only the difference counts,
        and names nobody else subscribes to are dropped or added by loops in C."""
        if old is new or old == new:
            return
        counts, shared = self.by_name, self.shared
        removed = old - new if new else old
        if removed:
            if shared.isdisjoint(removed):  # each counted once: by this member
                deque(map(counts.pop, removed, repeat(None)), maxlen=0)
            else:
                for name in removed:
                    value = counts.get(name, 0) - 1
                    if value > 1:
                        counts[name] = value
                    elif value == 1:
                        counts[name] = 1
                        shared.discard(name)
                    else:
                        counts.pop(name, None)
        added = new - old if old else new
        if added:
            known = counts.keys() & added
            for name in known:
                counts[name] += 1
            shared.update(known)
            counts.update(dict.fromkeys(added - known if known else added, 1))

    def change_regex(self, topics: Iterable[str], delta: int) -> None:
        """A resolved regex's topics count ``delta`` (±1) each."""
        counts = self.by_regex
        for name in topics:
            value = counts.get(name, 0) + delta
            if value > 0:
                counts[name] = value
            else:
                counts.pop(name, None)


@dataclass(frozen=True, slots=True)
class ConsumerGroupSnapshot:
    """Everything a consumer group holds, as a comparable value."""

    group_id: str
    state: ConsumerGroupState
    group_epoch: int
    metadata_hash: int
    assignment_epoch: int
    assignment_timestamp_ms: int
    members: tuple[ConsumerGroupMember, ...]
    target_assignment: tuple[tuple[str, tuple[tuple[TopicId, tuple[int, ...]], ...]], ...]
    resolved_regexes: tuple[tuple[str, records.ResolvedRegularExpression], ...]
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata], ...]


def _inc(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _dec(counts: dict[str, int], key: str) -> None:
    value = counts.get(key, 0) - 1
    if value <= 0:
        counts.pop(key, None)
    else:
        counts[key] = value


@dataclass(slots=True)
class ConsumerGroupData(ModernGroupData[ConsumerGroupMember]):
    """The mutable state of one consumer group; change it only through :meth:`apply`."""

    state: ConsumerGroupState = ConsumerGroupState.EMPTY
    #: topic -> partition -> the member the target assignment gives it to
    inverted_target: InvertedTarget = field(default_factory=InvertedTarget)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    server_assignors: dict[str, int] = field(default_factory=dict)
    subscribed_topic_names: TopicCounts = field(default_factory=TopicCounts)
    subscribed_regexes: dict[str, int] = field(default_factory=dict)
    resolved_regexes: dict[str, records.ResolvedRegularExpression] = field(default_factory=dict)
    #: topic -> partition -> the epoch of the member that owns (or is revoking) it
    partition_epochs: dict[TopicId, dict[int, int]] = field(default_factory=dict)
    subscription_type: SubscriptionType = SubscriptionType.HOMOGENEOUS
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    #: member epoch -> how many members are STABLE at it: the group is reconciled when that count at
    #: the assignment epoch is every member (what ``maybeUpdateGroupState`` finds walking them all)
    stable_at: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    #: member id -> (member, target, image, the spec built from them) at the last target assignment:
    #: a cache, not state (``steps.member_specs``)
    member_specs: dict[
        str, tuple[ConsumerGroupMember, records.TopicAssignment, MetadataImage, MemberSpec]
    ] = field(default_factory=dict, compare=False, repr=False)
    #: the members as the last ConsumerGroupDescribe described them: a cache, not state
    #: (``requests.handle_consumer_describe``)
    described_members: DescribedMembers[
        ConsumerGroupMember, records.TopicAssignment, DescribedConsumerMember
    ] = field(default_factory=DescribedMembers, compare=False, repr=False)

    # --- reading (Kafka's ConsumerGroup methods) ----------------------------------------------------

    @property
    def kind(self) -> str:
        return "consumer"

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def target_of(self, member_id: str) -> records.TopicAssignment:
        return self.target_assignment.get(member_id, {})

    def target_of_static(self, member_id: str, instance_id: str | None) -> records.TopicAssignment:
        """``targetAssignment(memberId, instanceId)``: a static member's is its instance's."""
        if instance_id is None:
            return self.target_of(member_id)
        previous = self.static_members.get(instance_id)
        return self.target_of(previous) if previous is not None else {}

    def current_partition_epoch(self, topic_id: TopicId, partition: int) -> int:
        """The epoch at which the partition is owned, -1 when nobody owns it."""
        partitions = self.partition_epochs.get(topic_id)
        return -1 if partitions is None else partitions.get(partition, -1)

    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regexes.get(regex, 0)

    def preferred_server_assignor(
        self, old: ConsumerGroupMember | None = None, new: ConsumerGroupMember | None = None
    ) -> str | None:
        """``computePreferredServerAssignor``: the name most members ask for (ties: the first
        counted, as ``stream().max`` over a ``HashMap`` keeps the first maximum)."""
        counts = dict(self.server_assignors)
        if old is not None and old.server_assignor is not None:
            _dec(counts, old.server_assignor)
        if new is not None and new.server_assignor is not None:
            _inc(counts, new.server_assignor)
        best: str | None = None
        for name in _java_string_order(counts):
            if best is None or counts[name] > counts[best]:
                best = name
        return best

    def last_regex_refresh_ms(self) -> int | None:
        for resolved in self.resolved_regexes.values():
            return resolved.timestamp_ms
        return None

    def last_regex_version(self) -> int:
        for resolved in self.resolved_regexes.values():
            return resolved.version
        return 0

    def subscribed_names_with(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> TopicCounts:
        """``computeSubscribedTopicNames(old, new)``: the topic counts if ``old`` became ``new``."""
        counts = self.subscribed_topic_names.copy()
        counts.change_names(_names(old), _names(new))
        old_regex = old.regex if old is not None else None
        if old_regex is not None:
            new_regex = new.regex if new is not None else None
            if old_regex != new_regex and self.num_subscribed_members(old_regex) == 1:
                resolved = self.resolved_regexes.get(old_regex)
                if resolved is not None:
                    counts.change_regex(resolved.topics, -1)
        return counts

    def subscribed_names_without(
        self, removed: Iterable[ConsumerGroupMember], removed_regexes: Iterable[str]
    ) -> TopicCounts:
        """``computeSubscribedTopicNamesWithoutDeletedMembers``."""
        counts = self.subscribed_topic_names.copy()
        for member in removed:
            counts.change_names(member.subscribed_topic_names, frozenset())
        for regex in removed_regexes:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                counts.change_regex(resolved.topics, -1)
        return counts

    def subscribed_regexes_with(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
    ) -> dict[str, int]:
        counts = dict(self.subscribed_regexes)
        old_regex = old.regex if old is not None else None
        new_regex = new.regex if new is not None else None
        if old_regex != new_regex:
            if old_regex is not None:
                _dec(counts, old_regex)
            if new_regex is not None:
                _inc(counts, new_regex)
        return counts

    def num_classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def classic_protocol_counts(self) -> dict[str, int]:
        """Protocol name -> how many classic-protocol members support it."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.classic_member_metadata is not None:
                for protocol in member.classic_member_metadata.supported_protocols:
                    counts[protocol.name] = counts.get(protocol.name, 0) + 1
        return counts

    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    # --- replay -------------------------------------------------------------------------------------

    def apply_commits(self, commits: list[OffsetCommitted]) -> None:
        """:meth:`apply` for each of ``commits``, in order (what an offset commit changes; one
        call for a whole OffsetCommit request)."""
        offsets = self.offsets
        for record in commits:
            offsets[record.partition] = record.value

    def apply(self, record: records.ConsumerGroupRecord | OffsetCommitted) -> None:
        if type(record) is OffsetCommitted:
            self.offsets[record.partition] = record.value
            return
        if isinstance(record, records.ConsumerGroupMetadata):
            if record.value is None:
                raise AssertionError("a consumer group's tombstone is applied by the coordinator")
            self.group_epoch, self.metadata_hash = record.value
        elif isinstance(record, records.ConsumerGroupMemberMetadata):
            if record.value is not None:
                old = self.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
                self._update_member(old.with_metadata(record.value))
            else:
                existing = self.members.get(record.member_id)
                if existing is None:
                    return
                if existing.member_epoch != -1:
                    raise AssertionError(
                        f"member {record.member_id} deleted before its current assignment tombstone"
                    )
                if record.member_id in self.target_assignment:
                    raise AssertionError(
                        f"member {record.member_id} deleted before its target assignment tombstone"
                    )
                self._remove_member(record.member_id)
        elif isinstance(record, records.ConsumerGroupCurrentMemberAssignment):
            if record.value is not None:
                old = self.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
                self._update_member(old.with_assignment(record.value))
            else:
                existing = self.members.get(record.member_id)
                if existing is None:
                    return
                self._update_member(
                    replace(
                        existing,
                        member_epoch=-1,
                        previous_member_epoch=-1,
                        assigned_partitions={},
                        partitions_pending_revocation={},
                    )
                )
        elif isinstance(record, records.ConsumerGroupTargetAssignmentMember):
            if record.value is not None:
                new_target = assignment_from_record(record.value.items())
                self._update_inverted(record.member_id, new_target)
                self.target_assignment[record.member_id] = new_target
            else:
                self._update_inverted(record.member_id, {})
                self.target_assignment.pop(record.member_id, None)
        elif isinstance(record, records.ConsumerGroupTargetAssignmentMetadata):
            if record.value is not None:
                self.assignment_epoch = record.value.assignment_epoch
                self.assignment_timestamp_ms = record.value.assignment_timestamp_ms
            else:
                if self.target_assignment:
                    raise AssertionError(
                        f"target assignment of {self.group_id} deleted while members have one"
                    )
                self.assignment_epoch, self.assignment_timestamp_ms = -1, 0
            self._update_state()
        elif isinstance(record, records.ConsumerGroupRegularExpression):
            old_resolved = self.resolved_regexes.pop(record.regex, None)
            if old_resolved is not None:
                self.subscribed_topic_names.change_regex(old_resolved.topics, -1)
            if record.value is not None:
                self.resolved_regexes[record.regex] = record.value
                self.subscribed_topic_names.change_regex(record.value.topics, 1)
            self._update_subscription_type()
            return
        else:
            raise AssertionError(f"not a consumer group record: {record!r}")
        self._update_state()

    def _update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self.members_table = timeline_table_after_put(len(self.members), self.members_table)
        self.members[new.member_id] = new
        if old is not None:
            self._count_stable(old, -1)
        self._count_stable(new, 1)
        self.subscribed_topic_names.change_names(_names(old), new.subscribed_topic_names)
        if old is not None and old.server_assignor is not None:
            _dec(self.server_assignors, old.server_assignor)
        if new.server_assignor is not None:
            _inc(self.server_assignors, new.server_assignor)
        if old is not None:
            self._remove_epochs(old.assigned_partitions, old.member_epoch)
            self._remove_epochs(old.partitions_pending_revocation, old.member_epoch)
        self._add_epochs(new.assigned_partitions, new.member_epoch)
        self._add_epochs(new.partitions_pending_revocation, new.member_epoch)
        if old is not None and old.regex is not None:
            _dec(self.subscribed_regexes, old.regex)
        if new.regex is not None:
            _inc(self.subscribed_regexes, new.regex)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self._update_subscription_type()

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id)
        self._count_stable(old, -1)
        self.subscribed_topic_names.change_names(old.subscribed_topic_names, frozenset())
        if old.server_assignor is not None:
            _dec(self.server_assignors, old.server_assignor)
        self._remove_epochs(old.assigned_partitions, old.member_epoch)
        self._remove_epochs(old.partitions_pending_revocation, old.member_epoch)
        if old.regex is not None:
            _dec(self.subscribed_regexes, old.regex)
        if old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        self._update_subscription_type()

    def _count_stable(self, member: ConsumerGroupMember, delta: int) -> None:
        if member.state is records.MemberAssignmentState.STABLE:
            count = self.stable_at.get(member.member_epoch, 0) + delta
            if count:
                self.stable_at[member.member_epoch] = count
            else:
                del self.stable_at[member.member_epoch]

    def _remove_epochs(self, assignment: records.PartitionEpochs, expected_epoch: int) -> None:
        for topic, partitions in assignment.items():
            owned = self.partition_epochs.get(topic)
            if owned is None:
                continue
            for partition in partitions:
                if owned.get(partition) == expected_epoch:
                    del owned[partition]
            if not owned:
                del self.partition_epochs[topic]

    def _add_epochs(self, assignment: records.PartitionEpochs, epoch: int) -> None:
        for topic, partitions in assignment.items():
            owned = self.partition_epochs.setdefault(topic, {})
            for partition in partitions:
                previous = owned.get(partition)
                if previous is not None and previous >= epoch:
                    raise AssertionError(
                        f"cannot set the epoch of {topic}-{partition} to {epoch}: owned at epoch {previous}"
                    )
                owned[partition] = epoch

    def _update_inverted(self, member_id: str, new: Mapping[TopicId, tuple[int, ...]]) -> None:
        self.inverted_target.move(member_id, self.target_assignment.get(member_id, {}), new)

    def _update_subscription_type(self) -> None:
        self.subscription_type = subscription_type_of(
            self.subscribed_regexes, self.subscribed_topic_names, len(self.members)
        )

    def _update_state(self) -> None:
        """``maybeUpdateGroupState``."""
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        else:
            # every member reconciled to the assignment epoch (is_reconciled_to), counted as they change
            reconciled = self.stable_at.get(self.assignment_epoch, 0) == len(self.members)
            self.state = ConsumerGroupState.STABLE if reconciled else ConsumerGroupState.RECONCILING

    # --- checkpoint and snapshot ----------------------------------------------------------------------

    def checkpoint_records(self) -> list[records.ConsumerGroupRecord | OffsetCommitted]:
        """The records that rebuild this group when replayed into a coordinator without it."""
        group_id = self.group_id
        rebuilt: list[records.ConsumerGroupRecord | OffsetCommitted] = [
            records.ConsumerGroupMetadata(group_id, (self.group_epoch, self.metadata_hash))
        ]
        for regex, resolved in self.resolved_regexes.items():
            rebuilt.append(records.ConsumerGroupRegularExpression(group_id, regex, resolved))
        for member in self.members.values():
            rebuilt.append(
                records.ConsumerGroupMemberMetadata(group_id, member.member_id, member.metadata_value())
            )
        for member_id, target in self.target_assignment.items():
            rebuilt.append(records.ConsumerGroupTargetAssignmentMember(group_id, member_id, target))
        rebuilt.append(
            records.ConsumerGroupTargetAssignmentMetadata(
                group_id,
                records.TargetAssignmentMetadataValue(self.assignment_epoch, self.assignment_timestamp_ms),
            )
        )
        for member in self.members.values():
            rebuilt.append(
                records.ConsumerGroupCurrentMemberAssignment(
                    group_id, member.member_id, member.assignment_value()
                )
            )
        for partition, value in self.offsets.items():
            rebuilt.append(OffsetCommitted(group_id, partition, value))
        return rebuilt

    def tombstone_records(self) -> list[records.ConsumerGroupRecord]:
        """``ConsumerGroup.createGroupTombstoneRecords``: a tombstone for each of its records (its
        offsets are not among them)."""
        group_id = self.group_id
        members = list(self.members)
        tombstones: list[records.ConsumerGroupRecord] = [
            records.ConsumerGroupCurrentMemberAssignment(group_id, m, None) for m in members
        ]
        tombstones.extend(records.ConsumerGroupTargetAssignmentMember(group_id, m, None) for m in members)
        tombstones.append(records.ConsumerGroupTargetAssignmentMetadata(group_id, None))
        tombstones.extend(records.ConsumerGroupMemberMetadata(group_id, m, None) for m in members)
        tombstones.extend(
            records.ConsumerGroupRegularExpression(group_id, regex, None) for regex in self.resolved_regexes
        )
        tombstones.append(records.ConsumerGroupMetadata(group_id, None))
        return tombstones

    def snapshot(self) -> ConsumerGroupSnapshot:
        return ConsumerGroupSnapshot(
            group_id=self.group_id,
            state=self.state,
            group_epoch=self.group_epoch,
            metadata_hash=self.metadata_hash,
            assignment_epoch=self.assignment_epoch,
            assignment_timestamp_ms=self.assignment_timestamp_ms,
            members=tuple(self.members[m] for m in sorted(self.members)),
            target_assignment=tuple(
                (m, tuple(sorted((t, tuple(sorted(p))) for t, p in self.target_assignment[m].items())))
                for m in sorted(self.target_assignment)
            ),
            resolved_regexes=tuple(sorted(self.resolved_regexes.items())),
            offsets=tuple(sorted(self.offsets.items())),
        )


def _java_string_order(counts: Mapping[str, int]) -> list[str]:
    return hashmap_iteration_order(counts)


def _names(member: ConsumerGroupMember | None) -> frozenset[str]:
    return frozenset() if member is None else member.subscribed_topic_names


def subscription_type_of(regexes: Mapping[str, int], counts: TopicCounts, members: int) -> SubscriptionType:
    """``ConsumerGroup.subscriptionType``: homogeneous when every member subscribes to the same names
    and no regex, or every member to one regex and nothing else."""
    by_name, by_regex = counts.by_name, counts.by_regex
    if not regexes:
        # every subscribed name (by name or regex) counted by name by every member
        values = list(by_name.values())
        if values.count(members) != len(values):
            return SubscriptionType.HETEROGENEOUS
        if members != 0 and not by_regex.keys() <= by_name.keys():
            return SubscriptionType.HETEROGENEOUS
        return SubscriptionType.HOMOGENEOUS
    first = next(iter(regexes.values()))
    if first == members and not by_name:
        values = list(by_regex.values())
        if values.count(1) == len(values):
            return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS
