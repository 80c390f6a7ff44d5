"""Typed requests and responses of the classic group protocol, mirroring Kafka's message fields.

Field names follow Kafka's JSON message schemas (``JoinGroupRequest.json`` …) in snake_case, so a
wire codec maps onto them one to one. As in Kafka, the ``metadata`` of a JoinGroup protocol and the
assignment of a SyncGroup are **opaque bytes**: the coordinator stores and forwards them untouched
(a group of any protocol type works). Consumers encode and decode them with
:mod:`kgroup.wire.consumer_protocol`; the decoded forms are :class:`ConsumerSubscription` (versions
0–3) and :class:`ConsumerAssignment`.

Every request carries the API version it was sent with (:attr:`Envelope.api_version`); by default
the version Kafka 4.0's Java consumer sends (:data:`CONSUMER_API_VERSIONS`), because some answers
depend on it (MEMBER_ID_REQUIRED from JoinGroup v4, ``skip_assignment`` from v9, GROUP_ID_NOT_FOUND
from OffsetCommit v9, the protocol fields of SyncGroup v5).

Requests travel inside an :class:`Envelope` that says which connection sent them; the coordinator
answers with :class:`Reply` objects addressed to that connection and correlation id, possibly much
later (a parked JoinGroup is answered when the join completes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from kgroup.model import ErrorCode, TopicId, TopicPartition
from kgroup.valuetypes import value_type

_Member = TypeVar("_Member")

__all__ = [
    "CONSUMER_API_VERSIONS",
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_GENERATION",
    "SHARE_LEAVE_GROUP_MEMBER_EPOCH",
    "UNKNOWN_MEMBER_ID",
    "ConsumerAssignment",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerSubscription",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribeRequestBase",
    "DescribedConsumerGroup",
    "DescribedConsumerMember",
    "DescribedGroup",
    "DescribedGroupBase",
    "DescribedMember",
    "DescribedShareGroup",
    "DescribedShareMember",
    "DescribedTopicPartitions",
    "Envelope",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HeartbeatResponseBase",
    "JoinGroupMember",
    "JoinGroupProtocol",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "OffsetCommitPartition",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchPartition",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "Reply",
    "Request",
    "Response",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartitions",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
]

#: ``JoinGroupRequest.UNKNOWN_MEMBER_ID``: the member id a new member sends
UNKNOWN_MEMBER_ID = ""
#: ``OffsetCommitRequest.DEFAULT_GENERATION_ID`` / ``JoinGroupResponse`` generation of no group
NO_GENERATION = -1


# --- the consumer protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment) ---------


@value_type
class ConsumerSubscription:
    """``ConsumerProtocolSubscription`` v0–v3: what a consumer puts in a JoinGroup protocol's metadata.

    v1 added ``owned_partitions``, v2 ``generation_id``, v3 ``rack_id``.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None


@value_type
class ConsumerAssignment:
    """``ConsumerProtocolAssignment``: the partitions a member gets in SyncGroup, plus user data."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None


# --- FindCoordinator -----------------------------------------------------------------------------


@value_type
class FindCoordinatorRequest:
    key: str
    key_type: int = 0  # 0 = group, 1 = transaction


@value_type
class FindCoordinatorResponse:
    error_code: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1


# --- JoinGroup -------------------------------------------------------------------------------------


@value_type
class JoinGroupProtocol:
    """One assignor the member supports (``name``) with its subscription for it."""

    name: str
    metadata: bytes  # opaque to the coordinator (a consumer's encoded subscription)


@value_type
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    protocols: tuple[JoinGroupProtocol, ...]
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    reason: str | None = None


@value_type
class JoinGroupMember:
    member_id: str
    metadata: bytes  # exactly the bytes the member sent for the selected protocol
    group_instance_id: str | None = None


@value_type
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()  # only in the leader's response


# --- SyncGroup -------------------------------------------------------------------------------------


@value_type
class SyncGroupAssignment:
    member_id: str
    assignment: bytes  # opaque to the coordinator (a consumer's encoded assignment)


@value_type
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[SyncGroupAssignment, ...] = ()  # only the leader sends any
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


@value_type
class SyncGroupResponse:
    error_code: ErrorCode
    assignment: bytes = b""  # the bytes the leader sent for this member (empty: none, or an error)
    protocol_type: str | None = None
    protocol_name: str | None = None


# --- Heartbeat -------------------------------------------------------------------------------------


@value_type
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@value_type
class HeartbeatResponse:
    error_code: ErrorCode


# --- LeaveGroup ------------------------------------------------------------------------------------


@value_type
class LeaveGroupMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@value_type
class LeaveGroupRequest:
    group_id: str
    members: tuple[LeaveGroupMember, ...]


@value_type
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@value_type
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


# --- OffsetCommit / OffsetFetch --------------------------------------------------------------------


@value_type
class OffsetCommitPartition:
    partition: TopicPartition
    committed_offset: int
    committed_metadata: str | None = ""
    committed_leader_epoch: int = -1


@value_type
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    offsets: tuple[OffsetCommitPartition, ...]
    group_instance_id: str | None = None


@value_type
class OffsetCommitResponse:
    results: tuple[tuple[TopicPartition, ErrorCode], ...]


@value_type
class TxnOffsetCommitRequest:
    """TxnOffsetCommit: offsets committed inside a producer's transaction, kept pending until the
    transaction's marker reaches the group's ``__consumer_offsets`` partition (KIP-98, KIP-447)."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    offsets: tuple[OffsetCommitPartition, ...]
    #: v3+ (KIP-447): the generation (classic) or member epoch (consumer protocol), member and instance
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@value_type
class TxnOffsetCommitResponse:
    results: tuple[tuple[TopicPartition, ErrorCode], ...]


@value_type
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None  # None = every committed partition
    #: v9+: a consumer-protocol member fetching its group's offsets (``None``/-1: not a member)
    member_id: str | None = None
    member_epoch: int = -1
    #: v7+: a partition with transactional offsets pending is answered UNSTABLE_OFFSET_COMMIT
    require_stable: bool = False


@value_type
class OffsetFetchPartition:
    partition: TopicPartition
    committed_offset: int  # -1 when nothing is committed
    metadata: str | None = ""
    error_code: ErrorCode = ErrorCode.NONE
    committed_leader_epoch: int = -1


@value_type
class OffsetFetchResponse:
    error_code: ErrorCode
    partitions: tuple[OffsetFetchPartition, ...] = ()


# --- DescribeGroups / ListGroups -------------------------------------------------------------------


@value_type
class DescribeGroupsRequest:
    groups: tuple[str, ...]


@value_type
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes  # empty unless the group is Stable (Kafka's describeNoMetadata)
    assignment: bytes


@value_type
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str  # Kafka's names: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
    protocol_type: str
    protocol_data: str  # the selected protocol (assignor) name
    members: tuple[DescribedMember, ...] = ()
    error_message: str | None = None  # DescribeGroups v6+ (KIP-1043)


@value_type
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@value_type
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()  # v5+: "classic", "consumer" (case-insensitive)


@value_type
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"  # v5+: "classic" or "consumer"


@value_type
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


# --- ConsumerGroupHeartbeat / ConsumerGroupDescribe (KIP-848, the consumer rebalance protocol) -------

#: ``ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH``: the epoch a member joins with
JOIN_GROUP_MEMBER_EPOCH = 0
#: ``LEAVE_GROUP_MEMBER_EPOCH``: a member leaving the group
LEAVE_GROUP_MEMBER_EPOCH = -1
#: ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``: a static member leaving for now (it will rejoin with its instance id)
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@value_type
class TopicPartitions:
    """One topic's partitions, named by topic id (``ConsumerGroupHeartbeat``'s ``TopicPartitions``)."""

    topic_id: TopicId
    partitions: tuple[int, ...]


@value_type
class ConsumerGroupHeartbeatRequest:
    """``ConsumerGroupHeartbeatRequest`` v0–v1. ``None`` fields mean "unchanged since the last
    heartbeat" (a joining member sends them all); ``rebalance_timeout_ms`` -1 means the same."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponseBase:
    """What a ConsumerGroupHeartbeat and a ShareGroupHeartbeat answer alike (each is its own type)."""

    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None


@value_type
class ConsumerGroupHeartbeatResponse(HeartbeatResponseBase):
    """``ConsumerGroupHeartbeatResponse``: ``assignment`` is ``None`` unless it changed for the member."""


@dataclass(frozen=True, slots=True)
class DescribeRequestBase:
    """What a ConsumerGroupDescribe and a ShareGroupDescribe ask alike (each is its own type)."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@value_type
class ConsumerGroupDescribeRequest(DescribeRequestBase):
    """``ConsumerGroupDescribeRequest``."""


@value_type
class DescribedTopicPartitions:
    """``ConsumerGroupDescribeResponse.TopicPartitions``: topic id, its name, the partitions."""

    topic_id: TopicId
    topic_name: str
    partitions: tuple[int, ...]


@value_type
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    member_type: int = -1  # v1+: 0 a classic-protocol member, 1 a consumer-protocol member


@dataclass(frozen=True, slots=True)
class DescribedGroupBase(Generic[_Member]):
    """A group as ConsumerGroupDescribe and ShareGroupDescribe describe it alike (each is its own type)."""

    error_code: ErrorCode
    group_id: str
    error_message: str | None = None
    group_state: str = ""  # the kind's state, as Kafka names it
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[_Member, ...] = ()
    authorized_operations: int = -(2**31)


@value_type
class DescribedConsumerGroup(DescribedGroupBase[DescribedConsumerMember]):
    """``ConsumerGroupDescribeResponse.DescribedGroup``: ``group_state`` Empty, Assigning, Reconciling,
    Stable or Dead."""


@value_type
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedConsumerGroup, ...]


# --- share groups (KIP-932) ----------------------------------------------------------------------------

#: ``ShareGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH``: the epoch a share member leaves with
SHARE_LEAVE_GROUP_MEMBER_EPOCH = -1


@value_type
class ShareGroupHeartbeatRequest:
    """``ShareGroupHeartbeatRequest`` v1: a share member joins with epoch 0 and an id it chose itself
    (its ``Uuid``), leaves with -1; ``subscribed_topic_names`` ``None`` means "unchanged"."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None


@value_type
class ShareGroupHeartbeatResponse(HeartbeatResponseBase):
    """``ShareGroupHeartbeatResponse`` v1: ``assignment`` is ``None`` unless the member joined, sent its
    whole state, or its assignment changed (Kafka's rule)."""


@value_type
class ShareGroupDescribeRequest(DescribeRequestBase):
    """``ShareGroupDescribeRequest`` v1."""


@value_type
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[DescribedTopicPartitions, ...]


@value_type
class DescribedShareGroup(DescribedGroupBase[DescribedShareMember]):
    """``ShareGroupDescribeResponse.DescribedGroup``: ``group_state`` Empty, Stable or Dead."""


@value_type
class ShareGroupDescribeResponse:
    groups: tuple[DescribedShareGroup, ...]


Request = (
    FindCoordinatorRequest
    | JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | TxnOffsetCommitRequest
    | OffsetFetchRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
    | ConsumerGroupHeartbeatRequest
    | ConsumerGroupDescribeRequest
    | ShareGroupHeartbeatRequest
    | ShareGroupDescribeRequest
)
Response = (
    FindCoordinatorResponse
    | JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | TxnOffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | ConsumerGroupHeartbeatResponse
    | ConsumerGroupDescribeResponse
    | ShareGroupHeartbeatResponse
    | ShareGroupDescribeResponse
)


#: The version of each API that Kafka 4.0's Java consumer (classic protocol) sends to a Kafka 4.0
#: broker: the highest stable version of each schema in ``clients/src/main/resources/common/message``
#: (the consumer's request builders do not enable unstable versions).
CONSUMER_API_VERSIONS: dict[type, int] = {
    FindCoordinatorRequest: 6,
    JoinGroupRequest: 9,
    SyncGroupRequest: 5,
    HeartbeatRequest: 4,
    LeaveGroupRequest: 5,
    OffsetCommitRequest: 9,
    OffsetFetchRequest: 9,
    DescribeGroupsRequest: 5,
    ListGroupsRequest: 5,
    ConsumerGroupHeartbeatRequest: 1,
    ConsumerGroupDescribeRequest: 1,
}


@value_type
class Envelope:
    """A request as it arrives: which connection sent it, its correlation id, the client's id and host,
    the principal it authenticated as, and the API version it was sent with (``-1``: the version Kafka
    4.0's Java consumer sends for this request, :data:`CONSUMER_API_VERSIONS`)."""

    connection: str
    correlation_id: int
    body: Request
    client_id: str = "consumer"
    client_host: str = "/127.0.0.1"
    api_version: int = -1
    #: the connection's authenticated principal (Kafka's ``RequestContext.principal``): what the
    #: coordinator's regex resolution filters topics by
    principal: str = "User:ANONYMOUS"

    def __post_init__(self) -> None:
        if self.api_version < 0:
            object.__setattr__(self, "api_version", CONSUMER_API_VERSIONS.get(type(self.body), 0))


@value_type
class Reply:
    """A response addressed to the connection and correlation id of the request it answers."""

    connection: str
    correlation_id: int
    body: Response
