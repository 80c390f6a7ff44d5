"""ShareGroupDescribe, ListGroups' entry and DeleteGroups of share groups; sessions on load."""

from __future__ import annotations

from kgroup.group.records.share import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
)
from kgroup.group.share.group import ShareGroupData, ShareGroupState, ShareMember
from kgroup.group.share.heartbeat import ShareContext
from kgroup.group.share.timers import ShareSessionTimer
from kgroup.group.txn import Txn
from kgroup.javacompat import JavaHashSet, java_integer_hash
from kgroup.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    DescribedTopicPartitions,
    Envelope,
    ListedGroup,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kgroup.model import ErrorCode, TopicId

__all__ = [
    "SHARE_ASSIGNOR_NAME",
    "delete_share_group",
    "handle_share_describe",
    "listed_share_group",
    "restart_sessions",
]

#: ``group.share.assignors``' only entry in Kafka 4.4 (``SimpleAssignor.name()``)
SHARE_ASSIGNOR_NAME = "simple"
#: ``ShareGroup.PROTOCOL_TYPE``
SHARE_PROTOCOL_TYPE = "share"


def _described(
    assignment: dict[TopicId, tuple[int, ...]], ctx: ShareContext
) -> tuple[DescribedTopicPartitions, ...]:
    described = []
    for topic_id, partitions in JavaHashSet.copy_of(lambda t: t.java_hash, assignment).items():
        del partitions
        topic = ctx.image.topic_by_id(topic_id)
        if topic is None:
            continue  # Kafka leaves out topics the metadata no longer has
        ordered = tuple(JavaHashSet.copy_of(java_integer_hash, assignment[topic_id]))
        described.append(DescribedTopicPartitions(topic_id, topic.name, ordered))
    return tuple(described)


def _describe_member(member: ShareMember, ctx: ShareContext) -> DescribedShareMember:
    return DescribedShareMember(
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        assignment=_described(dict(member.assigned_partitions), ctx),
    )


def handle_share_describe(txn: Txn, env: Envelope, req: ShareGroupDescribeRequest, ctx: ShareContext) -> None:
    """``shareGroupDescribe``: each group, or GROUP_ID_NOT_FOUND as ``shareGroup(id)`` words it."""
    described = []
    for group_id in req.group_ids:
        group = ctx.groups.get(group_id)
        if group is None:
            message = (
                f"Group {group_id} is not a share group."
                if ctx.owned_elsewhere(group_id)
                else f"Group {group_id} not found."
            )
            described.append(DescribedShareGroup(ErrorCode.GROUP_ID_NOT_FOUND, group_id, message))
            continue
        described.append(
            DescribedShareGroup(
                ErrorCode.NONE,
                group_id,
                None,
                group.state.kafka_name,
                group.group_epoch,
                group.assignment_epoch,
                SHARE_ASSIGNOR_NAME,
                tuple(_describe_member(group.members[m], ctx) for m in group.member_ids_in_kafka_order()),
            )
        )
    txn.reply(env.connection, env.correlation_id, ShareGroupDescribeResponse(tuple(described)))


def listed_share_group(group: ShareGroupData) -> ListedGroup:
    return ListedGroup(group.group_id, SHARE_PROTOCOL_TYPE, group.state.kafka_name, "share")


def delete_share_group(txn: Txn, group: ShareGroupData) -> ErrorCode:
    """DeleteGroups of a share group: only an Empty one (``validateDeleteGroup``: NON_EMPTY_GROUP
    otherwise); the tombstones of its records (``createGroupTombstoneRecords``)."""
    if group.state is not ShareGroupState.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP
    group_id = group.group_id
    for key in [k for k in txn.armed if k.group_id == group_id]:
        txn.cancel(key)
    members = list(group.members)
    for member_id in members:
        txn.emit(ShareGroupCurrentMemberAssignment(group_id, member_id, None))
    for member_id in list(group.target_assignment):
        txn.emit(ShareGroupTargetAssignmentMember(group_id, member_id, None))
    txn.emit(ShareGroupTargetAssignmentMetadata(group_id, None))
    for member_id in members:
        txn.emit(ShareGroupMemberMetadata(group_id, member_id, None))
    if group.partition_states is not None:
        txn.emit(ShareGroupStatePartitionMetadata(group_id, None))
    txn.emit(ShareGroupMetadata(group_id, None))
    return ErrorCode.NONE


def restart_sessions(txn: Txn, group: ShareGroupData) -> None:
    """``onLoaded``: every member's session starts again from now."""
    for member_id in group.members:
        txn.schedule(ShareSessionTimer(group.group_id, member_id), txn.config.share_session_timeout_ms)
