"""The consumer group's records: Kafka's own ``__consumer_offsets`` record types for KIP-848 groups.

Each class is one of Kafka's key/value record pairs (``ConsumerGroup*Key`` / ``ConsumerGroup*Value``):
the key fields, then ``value`` — ``None`` is the tombstone that deletes what the key names. Unlike the
classic group's deltas, these are **upserts keyed by what they describe**, exactly as Kafka writes
them: a log of them may be compacted by key. ``GroupCoordinator.replay`` applies them as Kafka's
``GroupMetadataManager.replay`` overloads do.

Assignments with epochs map topic id -> partition -> the epoch at which the member got it (Kafka
4.3+'s ``AssignmentEpochs``, used to fence zombie commits).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from kgroup.messages import JoinGroupProtocol
from kgroup.model import TopicId
from kgroup.valuetypes import value_type

__all__ = [
    "ClassicMemberMetadata",
    "ConsumerGroupCurrentMemberAssignment",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupMetadata",
    "ConsumerGroupRecord",
    "ConsumerGroupRegularExpression",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupTargetAssignmentMetadata",
    "CurrentAssignmentValue",
    "MemberAssignmentState",
    "MemberMetadataValue",
    "PartitionEpochs",
    "ResolvedRegularExpression",
    "TargetAssignmentMetadataValue",
    "TopicAssignment",
]

#: topic id -> partition -> assignment epoch (Kafka's ``Map<Uuid, Map<Integer, Integer>>``)
PartitionEpochs = Mapping[TopicId, Mapping[int, int]]
#: topic id -> partitions, in the order Kafka's ``Map<Uuid, Set<Integer>>`` iterates
TopicAssignment = Mapping[TopicId, tuple[int, ...]]


class MemberAssignmentState(IntEnum):
    """Kafka's ``modern.MemberState`` (the byte in ``ConsumerGroupCurrentMemberAssignmentValue.State``)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@value_type
class ClassicMemberMetadata:
    """``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: a member using the classic protocol."""

    session_timeout_ms: int
    supported_protocols: tuple[JoinGroupProtocol, ...]


@value_type
class MemberMetadataValue:
    """``ConsumerGroupMemberMetadataValue``: the member's subscription and client facts."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None


@value_type
class ConsumerGroupMemberMetadata:
    group_id: str
    member_id: str
    value: MemberMetadataValue | None


@value_type
class ConsumerGroupMetadata:
    """``ConsumerGroupMetadataValue``: the group epoch and the hash of its subscribed topics' metadata;
    the tombstone deletes the group (once every other record of it is gone)."""

    group_id: str
    value: tuple[int, int] | None  # (epoch, metadata hash)


@value_type
class ConsumerGroupTargetAssignmentMember:
    group_id: str
    member_id: str
    value: TopicAssignment | None


@value_type
class TargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp_ms: int


@value_type
class ConsumerGroupTargetAssignmentMetadata:
    group_id: str
    value: TargetAssignmentMetadataValue | None


@value_type
class CurrentAssignmentValue:
    """``ConsumerGroupCurrentMemberAssignmentValue``."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberAssignmentState
    assigned_partitions: PartitionEpochs
    partitions_pending_revocation: PartitionEpochs


@value_type
class ConsumerGroupCurrentMemberAssignment:
    group_id: str
    member_id: str
    value: CurrentAssignmentValue | None


@value_type
class ResolvedRegularExpression:
    """``ConsumerGroupRegularExpressionValue``: the topics a regex matched, at which metadata version."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


@value_type
class ConsumerGroupRegularExpression:
    group_id: str
    regex: str
    value: ResolvedRegularExpression | None


ConsumerGroupRecord = (
    ConsumerGroupMemberMetadata
    | ConsumerGroupMetadata
    | ConsumerGroupTargetAssignmentMember
    | ConsumerGroupTargetAssignmentMetadata
    | ConsumerGroupCurrentMemberAssignment
    | ConsumerGroupRegularExpression
)
