"""The share group's records: Kafka's own ``__consumer_offsets`` record types for KIP-932 groups.

Each class is one of Kafka 4.4's ``ShareGroup*Key`` / ``ShareGroup*Value`` pairs (record types 10–15):
the key fields, then ``value`` — ``None`` is the tombstone that deletes what the key names. Like the
consumer group's, they are upserts keyed by what they describe, as ``GroupMetadataManager`` writes
them. A share member has no revocation handshake, so its current assignment carries no partitions
pending revocation and no assignment epochs.
"""

from __future__ import annotations

from kgroup.group.records.consumer import TargetAssignmentMetadataValue, TopicAssignment
from kgroup.model import TopicId
from kgroup.valuetypes import value_type

__all__ = [
    "ShareCurrentAssignmentValue",
    "ShareGroupCurrentMemberAssignment",
    "ShareGroupMemberMetadata",
    "ShareGroupMetadata",
    "ShareGroupRecord",
    "ShareGroupStatePartitionMetadata",
    "ShareGroupTargetAssignmentMember",
    "ShareGroupTargetAssignmentMetadata",
    "ShareMemberMetadataValue",
    "SharePartitionsInfo",
    "ShareStatePartitionValue",
    "TargetAssignmentMetadataValue",
]


@value_type
class ShareMemberMetadataValue:
    """``ShareGroupMemberMetadataValue``: a share member's client facts and subscription."""

    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@value_type
class ShareGroupMemberMetadata:
    group_id: str
    member_id: str
    value: ShareMemberMetadataValue | None


@value_type
class ShareGroupMetadata:
    """``ShareGroupMetadataValue``: the group epoch and the hash of its subscribed topics' metadata;
    the tombstone deletes the group."""

    group_id: str
    value: tuple[int, int] | None  # (epoch, metadata hash)


@value_type
class ShareGroupTargetAssignmentMetadata:
    group_id: str
    value: TargetAssignmentMetadataValue | None


@value_type
class ShareGroupTargetAssignmentMember:
    group_id: str
    member_id: str
    value: TopicAssignment | None


@value_type
class ShareCurrentAssignmentValue:
    """``ShareGroupCurrentMemberAssignmentValue`` (``state``: Kafka's ``MemberState`` byte, always
    STABLE (0) for a share member)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: TopicAssignment


@value_type
class ShareGroupCurrentMemberAssignment:
    group_id: str
    member_id: str
    value: ShareCurrentAssignmentValue | None


@value_type
class SharePartitionsInfo:
    """``TopicPartitionsInfo``: a topic (id and name) and some of its partitions."""

    topic_id: TopicId
    topic_name: str
    partitions: tuple[int, ...]


@value_type
class ShareStatePartitionValue:
    """``ShareGroupStatePartitionMetadataValue``: which partitions' share state is being initialised,
    is initialised (only those are assignable), and which topics' state is being deleted."""

    initializing: tuple[SharePartitionsInfo, ...]
    initialized: tuple[SharePartitionsInfo, ...]
    deleting: tuple[tuple[TopicId, str], ...]


@value_type
class ShareGroupStatePartitionMetadata:
    group_id: str
    value: ShareStatePartitionValue | None


ShareGroupRecord = (
    ShareGroupMemberMetadata
    | ShareGroupMetadata
    | ShareGroupTargetAssignmentMetadata
    | ShareGroupTargetAssignmentMember
    | ShareGroupCurrentMemberAssignment
    | ShareGroupStatePartitionMetadata
)
