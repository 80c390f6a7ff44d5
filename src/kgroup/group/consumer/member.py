"""One member of a consumer group (Kafka's ``ConsumerGroupMember``), as an immutable value.

Built from two records (``ConsumerGroupMemberMetadataValue``: subscription and client facts;
``ConsumerGroupCurrentMemberAssignmentValue``: epochs, state and partitions) and changed by
``dataclasses.replace`` in the handlers, as Kafka's ``ConsumerGroupMember.Builder`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kgroup.group.records.consumer import (
    ClassicMemberMetadata,
    CurrentAssignmentValue,
    MemberAssignmentState,
    MemberMetadataValue,
    PartitionEpochs,
)
from kgroup.model import TopicId
from kgroup.valuetypes import replace

__all__ = ["ConsumerGroupMember", "epochs_of", "partitions_of", "without_epochs"]

_NO_PARTITIONS: PartitionEpochs = {}


def epochs_of(assignment: Mapping[TopicId, Iterable[int]], epoch: int) -> dict[TopicId, dict[int, int]]:
    """Every partition of ``assignment`` at ``epoch``."""
    return {topic: dict.fromkeys(partitions, epoch) for topic, partitions in assignment.items()}


def partitions_of(assignment: PartitionEpochs) -> dict[TopicId, frozenset[int]]:
    return {topic: frozenset(partitions) for topic, partitions in assignment.items()}


def without_epochs(assignment: PartitionEpochs) -> dict[TopicId, tuple[int, ...]]:
    return {topic: tuple(sorted(partitions)) for topic, partitions in assignment.items()}


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberAssignmentState = MemberAssignmentState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    #: ``""`` when none (Kafka's builder default); a record may also carry ``None``
    subscribed_topic_regex: str | None = ""
    server_assignor: str | None = None
    assigned_partitions: PartitionEpochs = field(default_factory=lambda: _NO_PARTITIONS)
    partitions_pending_revocation: PartitionEpochs = field(default_factory=lambda: _NO_PARTITIONS)
    classic_member_metadata: ClassicMemberMetadata | None = None
    #: ``subscribed_topic_names`` sorted, with the set it sorts (kept only while that set is this
    #: member's: a replaced set is sorted again): the record of a 100,000-name subscription needs
    #: the names sorted, and the broker hands them over sorted
    names_sorted: tuple[frozenset[str], tuple[str, ...]] | None = field(
        default=None, compare=False, repr=False
    )

    # --- Kafka's reading methods ------------------------------------------------------------------

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    @property
    def regex(self) -> str | None:
        """The subscribed regex, ``None`` when there is none (empty or null)."""
        return self.subscribed_topic_regex or None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        return self.state is MemberAssignmentState.STABLE and self.member_epoch == target_assignment_epoch

    def assignment_epoch(self, topic_id: TopicId, partition: int) -> int | None:
        partitions = self.assigned_partitions.get(topic_id)
        return None if partitions is None else partitions.get(partition)

    def pending_revocation_epoch(self, topic_id: TopicId, partition: int) -> int | None:
        partitions = self.partitions_pending_revocation.get(topic_id)
        return None if partitions is None else partitions.get(partition)

    def update_member_epoch(self, epoch: int) -> ConsumerGroupMember:
        """``Builder.updateMemberEpoch``: the current epoch becomes the previous one."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def with_assigned_epochs_reset(self) -> ConsumerGroupMember:
        """``resetAssignedPartitionsEpochsToZero`` (a static member leaving temporarily)."""
        if not self.assigned_partitions:
            return self
        reset = {
            topic: dict.fromkeys(partitions, 0) for topic, partitions in self.assigned_partitions.items()
        }
        return replace(self, assigned_partitions=reset)

    # --- records ------------------------------------------------------------------------------------

    def metadata_value(self) -> MemberMetadataValue:
        """``newConsumerGroupMemberSubscriptionRecord``'s value."""
        return MemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.sorted_topic_names(),
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=self.classic_member_metadata,
        )

    def sorted_topic_names(self) -> tuple[str, ...]:
        """The subscribed names in the order Kafka's record lists them (``Collections.sort``)."""
        cached = self.names_sorted
        if cached is not None and cached[0] is self.subscribed_topic_names:
            return cached[1]
        return tuple(sorted(self.subscribed_topic_names))

    def same_metadata(self, other: ConsumerGroupMember) -> bool:
        """``metadata_value() == other.metadata_value()`` without sorting the subscribed names."""
        return (
            self.instance_id == other.instance_id
            and self.rack_id == other.rack_id
            and self.client_id == other.client_id
            and self.client_host == other.client_host
            and self.subscribed_topic_regex == other.subscribed_topic_regex
            and self.rebalance_timeout_ms == other.rebalance_timeout_ms
            and self.server_assignor == other.server_assignor
            and self.classic_member_metadata == other.classic_member_metadata
            and self.subscribed_topic_names == other.subscribed_topic_names
        )

    def assignment_value(self) -> CurrentAssignmentValue:
        """``newConsumerGroupCurrentAssignmentRecord``'s value."""
        return CurrentAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned_partitions=self.assigned_partitions,
            partitions_pending_revocation=self.partitions_pending_revocation,
        )

    def with_metadata(self, value: MemberMetadataValue) -> ConsumerGroupMember:
        """``Builder.updateWith(ConsumerGroupMemberMetadataValue)``."""
        ordered = tuple(dict.fromkeys(sorted(value.subscribed_topic_names)))  # (sorted already: O(n))
        names = frozenset(ordered)
        return replace(
            self,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=names,
            names_sorted=(names, ordered),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            classic_member_metadata=value.classic_member_metadata,
        )

    def with_assignment(self, value: CurrentAssignmentValue) -> ConsumerGroupMember:
        """``Builder.updateWith(ConsumerGroupCurrentMemberAssignmentValue)``."""
        return replace(
            self,
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=value.state,
            assigned_partitions=value.assigned_partitions,
            partitions_pending_revocation=value.partitions_pending_revocation,
        )
