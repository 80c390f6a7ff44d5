"""Classic-protocol members in a consumer group (KIP-848's mixed groups), as Kafka 4.4's
``classicGroupJoinToConsumerGroup`` / ``classicGroupSyncToConsumerGroup`` /
``classicGroupHeartbeatToConsumerGroup`` / ``classicGroupLeaveToConsumerGroup`` do it.

A consumer that still speaks JoinGroup/SyncGroup/Heartbeat joins a consumer group as a member whose
subscription comes from its JoinGroup metadata. The coordinator assigns it like any other member: its
JoinGroup is answered at once (generation id = member epoch, never as leader), its SyncGroup carries
the partitions it may own now (encoded in its own consumer-protocol version), and its Heartbeat says
REBALANCE_IN_PROGRESS while it has partitions to revoke or to wait for, so it rejoins to move on.
"""

from __future__ import annotations

from kgroup.group.consumer import steps
from kgroup.group.consumer.context import (
    ConsumerContext,
    Op,
    random_uuid,
)
from kgroup.group.consumer.fencing import fence_members
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.migration import can_downgrade_replacing
from kgroup.group.consumer.migration import downgrade as downgrade_group
from kgroup.group.consumer.timers import ClassicMemberJoinTimer, ClassicMemberSyncTimer, SessionTimer
from kgroup.group.errors import ApiError
from kgroup.group.records.consumer import ClassicMemberMetadata, MemberAssignmentState
from kgroup.group.txn import Txn
from kgroup.messages import (
    ConsumerAssignment,
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, PeerError, TopicPartition
from kgroup.valuetypes import replace
from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment

__all__ = ["classic_heartbeat", "classic_join", "classic_leave", "classic_sync"]

S = MemberAssignmentState
#: ``JoinGroupRequest.requiresKnownMemberId``: from v4 a new dynamic member gets MEMBER_ID_REQUIRED
_MEMBER_ID_REQUIRED_VERSION = 4


def _supports(group: ConsumerGroupData, protocol_type: str, names: set[str]) -> bool:
    """``ConsumerGroup.supportsClassicProtocols``."""
    if protocol_type != "consumer":
        return False
    if group.is_empty():
        return bool(names)
    classic = group.num_classic_members()
    counts = group.classic_protocol_counts()
    return any(counts.get(name, 0) == classic for name in names)


def _owned(partitions: tuple[TopicPartition, ...], ctx: ConsumerContext) -> tuple[TopicPartitions, ...]:
    """``Utils.toTopicPartitions``: owned partitions by topic id; topics the image lacks are dropped."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    owned = []
    for name, numbers in by_topic.items():
        topic = ctx.image.topic(name)
        if topic is not None:
            owned.append(TopicPartitions(topic.topic_id, tuple(numbers)))
    return tuple(owned)


def classic_join(
    txn: Txn, env: Envelope, req: JoinGroupRequest, group: ConsumerGroupData, ctx: ConsumerContext
) -> None:
    def answer(response: JoinGroupResponse) -> None:
        txn.reply(env.connection, env.correlation_id, response)

    config = txn.config
    if config.consumer_migration_policy == "disabled":
        return answer(JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id))
    instance_id = req.group_instance_id
    unknown = req.member_id == ""
    member_id = random_uuid(txn) if unknown else req.member_id
    try:
        if (
            not group.has_static_member(instance_id)
            and len(group.members) >= config.consumer_max_size
            and member_id not in group.members
        ):
            raise ApiError(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not _supports(group, req.protocol_type, {p.name for p in req.protocols}):
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if unknown and instance_id is None and env.api_version >= _MEMBER_ID_REQUIRED_VERSION:
            return answer(JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
        op = Op()
        replaced = group.static_member(instance_id)
        downgrade = replaced is not None and can_downgrade_replacing(txn, group, replaced)
        member = _join_member(txn, group, member_id, instance_id, unknown, op, ctx)
        try:
            subscription = decode_subscription(req.protocols[0].metadata)
        except PeerError as exc:
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from exc
        changes = steps.member_changes(env, instance_id, subscription.rack_id, req.rebalance_timeout_ms)
        changes.update(
            subscribed_topic_names=frozenset(subscription.topics),
            subscribed_topic_regex="",
            classic_member_metadata=ClassicMemberMetadata(req.session_timeout_ms, tuple(req.protocols)),
        )
        updated = replace(member, **changes)
        changed = steps.member_subscription_changed(group.group_id, member, updated, op)
        regex_status = steps.maybe_update_regexes(txn, group, member, updated, op, ctx)
        bump = changed or regex_status != 0
        group_epoch, subscription_type = steps.update_subscription_metadata(
            group, bump, member, updated, op, ctx
        )
        owned = _owned(subscription.owned_partitions, ctx)
        rebalance = False
        if downgrade:
            # the last consumer-protocol member, a static one, is replaced by this classic member:
            # reconcile it to the current target unless a new one is due, then the group turns
            # classic (validateOnlineDowngradeWithReplacedMember + convertToClassicGroup)
            rebalance = group.assignment_epoch < group_epoch
            if not rebalance:
                updated = steps.maybe_reconcile(
                    txn,
                    group,
                    updated,
                    group.assignment_epoch,
                    group.target_of_static(updated.member_id, instance_id),
                    bump,
                    owned,
                    op,
                    ctx,
                )
        else:
            target_epoch, target = steps.maybe_update_target(
                txn, group, group_epoch, member, updated, subscription_type, op, ctx
            )
            updated = steps.maybe_reconcile(txn, group, updated, target_epoch, target, bump, owned, op, ctx)
    except ApiError as error:
        return answer(JoinGroupResponse(error.code, member_id=req.member_id))
    op.apply(txn)
    group_id, final_id = group.group_id, updated.member_id
    txn.cancel(ClassicMemberJoinTimer(group_id, final_id))
    if downgrade:
        # the group (every member classic now, the joining one in the replaced member's place)
        downgrade_group(txn, ctx.groups[group_id], [], ctx, rebalance=rebalance)
    else:
        txn.schedule(SessionTimer(group_id, final_id), req.session_timeout_ms)
        txn.schedule(ClassicMemberSyncTimer(group_id, final_id), req.rebalance_timeout_ms)
    answer(
        JoinGroupResponse(
            ErrorCode.NONE,
            generation_id=updated.member_epoch,
            protocol_type="consumer",
            protocol_name=req.protocols[0].name,
            member_id=final_id,
        )
    )


def _join_member(
    txn: Txn,
    group: ConsumerGroupData,
    member_id: str,
    instance_id: str | None,
    unknown: bool,
    op: Op,
    ctx: ConsumerContext,
) -> ConsumerGroupMember:
    """``getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember`` for a classic member (no epoch check)."""
    if instance_id is None:
        return group.members.get(member_id) or ConsumerGroupMember(member_id)
    existing = group.static_member(instance_id)
    if unknown:
        if existing is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        new_member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        steps.replace_member(group, existing, new_member, op, txn, ctx)
        return new_member
    if existing is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise ApiError(ErrorCode.FENCED_INSTANCE_ID)
    return existing


def _validate_member(
    group: ConsumerGroupData, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    """``validateConsumerGroupMember`` + ``throwIfMemberDoesNotUseClassicProtocol``."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    else:
        static = group.static_member(instance_id)
        if static is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if static.member_id != member_id:
            raise ApiError(ErrorCode.FENCED_INSTANCE_ID)
        member = static
    if not member.uses_classic_protocol:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    return member


def _first_protocol(member: ConsumerGroupMember) -> tuple[str, bytes]:
    assert member.classic_member_metadata is not None
    protocol = member.classic_member_metadata.supported_protocols[0]
    return protocol.name, protocol.metadata


def classic_sync(
    txn: Txn, env: Envelope, req: SyncGroupRequest, group: ConsumerGroupData, ctx: ConsumerContext
) -> None:
    def answer(response: SyncGroupResponse) -> None:
        txn.reply(env.connection, env.correlation_id, response)

    if group.is_empty():
        return answer(SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    try:
        member = _validate_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        name, metadata = _first_protocol(member)
        if req.protocol_type is not None and req.protocol_type != "consumer":
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if req.protocol_name is not None and req.protocol_name != name:
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.assignment_epoch > member.member_epoch and member.state is not S.UNREVOKED_PARTITIONS:
            _join_timeout_if_absent(txn, group.group_id, member)
            raise ApiError(ErrorCode.REBALANCE_IN_PROGRESS)
    except ApiError as error:
        return answer(SyncGroupResponse(error.code))
    group_id = group.group_id
    txn.cancel(ClassicMemberSyncTimer(group_id, member.member_id))
    assert member.classic_member_metadata is not None
    txn.schedule(SessionTimer(group_id, member.member_id), member.classic_member_metadata.session_timeout_ms)
    partitions: list[TopicPartition] = []
    for topic_id, numbers in member.assigned_partitions.items():
        topic = ctx.image.topic_by_id(topic_id)
        if topic is not None:
            partitions.extend(TopicPartition(topic.name, p) for p in numbers)
    version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
    assignment = encode_assignment(ConsumerAssignment(tuple(partitions)), max(version, 0))
    answer(SyncGroupResponse(ErrorCode.NONE, assignment, req.protocol_type, req.protocol_name))


def _join_timeout_if_absent(txn: Txn, group_id: str, member: ConsumerGroupMember) -> None:
    key = ClassicMemberJoinTimer(group_id, member.member_id)
    if key not in txn.armed:
        txn.schedule(key, member.rebalance_timeout_ms)


def _waiting_on_unreleased(group: ConsumerGroupData, member: ConsumerGroupMember) -> bool:
    """``ConsumerGroup.waitingOnUnreleasedPartition``."""
    if member.state is not S.UNRELEASED_PARTITIONS:
        return False
    for topic_id, partitions in group.target_of(member.member_id).items():
        assigned = member.assigned_partitions.get(topic_id, {})
        for partition in partitions:
            if partition not in assigned and group.current_partition_epoch(topic_id, partition) != -1:
                return True
    return False


def classic_heartbeat(txn: Txn, env: Envelope, req: HeartbeatRequest, group: ConsumerGroupData) -> None:
    try:
        member = _validate_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
    except ApiError as refused:
        txn.reply(env.connection, env.correlation_id, HeartbeatResponse(refused.code))
        return
    assert member.classic_member_metadata is not None
    group_id = group.group_id
    txn.schedule(SessionTimer(group_id, member.member_id), member.classic_member_metadata.session_timeout_ms)
    error = ErrorCode.NONE
    if (
        member.member_epoch < group.assignment_epoch
        or member.state is S.UNREVOKED_PARTITIONS
        or (member.state is S.UNRELEASED_PARTITIONS and not _waiting_on_unreleased(group, member))
    ):
        error = ErrorCode.REBALANCE_IN_PROGRESS
        _join_timeout_if_absent(txn, group_id, member)
    txn.reply(env.connection, env.correlation_id, HeartbeatResponse(error))


def classic_leave(
    txn: Txn, env: Envelope, req: LeaveGroupRequest, group: ConsumerGroupData, ctx: ConsumerContext
) -> None:
    """``classicGroupLeaveToConsumerGroup``: every valid member leaves in one epoch bump."""
    responses = []
    leaving: list[ConsumerGroupMember] = []
    for identity in req.members:
        code = ErrorCode.NONE
        member: ConsumerGroupMember | None
        if identity.group_instance_id is None:
            member = group.members.get(identity.member_id)
            if member is None:
                code = ErrorCode.UNKNOWN_MEMBER_ID
        else:
            member = group.static_member(identity.group_instance_id)
            if member is None:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            elif identity.member_id != "" and member.member_id != identity.member_id:
                code = ErrorCode.FENCED_INSTANCE_ID
                member = None
        responses.append(LeaveGroupMemberResponse(identity.member_id, identity.group_instance_id, code))
        if member is not None and member not in leaving:
            leaving.append(member)
    op = Op()
    fence_members(txn, group, leaving, op, ctx)
    op.apply(txn)
    txn.reply(env.connection, env.correlation_id, LeaveGroupResponse(ErrorCode.NONE, tuple(responses)))
