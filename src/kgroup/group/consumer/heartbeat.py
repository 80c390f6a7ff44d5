"""ConsumerGroupHeartbeat (KIP-848): join, heartbeat, reconcile and leave, as Kafka 4.4's
``GroupMetadataManager.consumerGroupHeartbeat`` does it; and the timers it arms.

A handler validates, decides, and collects Kafka's records in a list; only when it cannot fail any more
are the records emitted (applied and persisted) and the timers armed — Kafka writes an operation's
records only when it succeeds. An :class:`ApiError` answers the request with its code and message.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kgroup.group.consumer.context import (
    ConsumerContext,
    Op,
    random_uuid,
)
from kgroup.group.consumer.fencing import fence_members
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.reconcile import FencedMemberEpoch
from kgroup.group.consumer.steps import (
    RegexStatus,
    maybe_reconcile,
    maybe_update_regexes,
    maybe_update_target,
    member_changes,
    member_subscription_changed,
    replace_member,
    response_assignment,
    update_subscription_metadata,
)
from kgroup.group.consumer.timers import SessionTimer
from kgroup.group.errors import ApiError, member_of, not_blank, refusal, unknown_member
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
)
from kgroup.group.txn import Txn
from kgroup.messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Envelope,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId
from kgroup.valuetypes import replace

__all__ = ["handle_consumer_heartbeat", "invalid_heartbeat_answer"]


# --- validation (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid) ------------------


def _validate(req: ConsumerGroupHeartbeatRequest, version: int, assignors: Collection[str]) -> None:
    if version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        not_blank(req.member_id, "MemberId can't be empty.")
    not_blank(req.group_id, "GroupId can't be empty.")
    not_blank(req.instance_id, "InstanceId can't be empty.")
    not_blank(req.rack_id, "RackId can't be empty.")
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise ApiError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise ApiError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise ApiError(
                ErrorCode.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ApiError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise ApiError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )


# --- one heartbeat ---------------------------------------------------------------------------------


def invalid_heartbeat_answer(
    req: ConsumerGroupHeartbeatRequest, version: int, assignors: Collection[str]
) -> ConsumerGroupHeartbeatResponse | None:
    """The answer to a heartbeat that fails ``throwIfConsumerGroupHeartbeatRequestIsInvalid``, or
    ``None``: a host that routes requests to coordinators asks this first, as Kafka's
    ``GroupCoordinatorService`` validates before the shard (an invalid request is never NOT_COORDINATOR)."""
    return refusal(lambda: _validate(req, version, assignors), ConsumerGroupHeartbeatResponse)


def handle_consumer_heartbeat(
    txn: Txn, env: Envelope, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext
) -> None:
    try:
        _validate(req, env.api_version, txn.config.consumer_assignors)
        op = Op()
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            response = _leave(txn, req, ctx, op)
        else:
            response = _heartbeat(txn, env, req, ctx, op)
    except ApiError as error:
        txn.reply(
            env.connection,
            env.correlation_id,
            ConsumerGroupHeartbeatResponse(error.code, error.message),
        )
        return
    op.apply(txn)
    txn.reply(env.connection, env.correlation_id, response)


def _group_or_error(ctx: ConsumerContext, group_id: str) -> ConsumerGroupData:
    group = ctx.groups.get(group_id)
    if group is None:
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return group


def _is_subset(
    owned: tuple[TopicPartitions, ...] | None, target: Mapping[TopicId, Mapping[int, int]]
) -> bool:
    if owned is None:
        return False
    for topic in owned:
        partitions = target.get(topic.topic_id)
        if partitions is None:
            return False
        for partition in topic.partitions:
            if partition not in partitions:
                return False
    return True


def _check_epoch(
    member: ConsumerGroupMember, received: int, owned: tuple[TopicPartitions, ...] | None
) -> None:
    """``throwIfConsumerGroupMemberEpochIsInvalid``."""
    if received == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received > member.member_epoch:
        raise ApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )
    if received < member.member_epoch and not (
        received == member.previous_member_epoch and _is_subset(owned, member.assigned_partitions)
    ):
        raise ApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )


def _dynamic_member(
    group: ConsumerGroupData,
    member_id: str,
    epoch: int,
    owned: tuple[TopicPartitions, ...] | None,
    create: bool,
) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        if not create:
            raise unknown_member(member_id, group.group_id)
        member = ConsumerGroupMember(member_id)
    _check_epoch(member, epoch, owned)
    return member


def _static_member(
    group: ConsumerGroupData,
    member_id: str,
    epoch: int,
    instance_id: str,
    owned: tuple[TopicPartitions, ...] | None,
    create: bool,
    op: Op,
    txn: Txn,
    ctx: ConsumerContext,
) -> ConsumerGroupMember:
    existing = group.static_member(instance_id)
    if create:
        if existing is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise ApiError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {existing.member_id} member.",
            )
        new_member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        replace_member(group, existing, new_member, op, txn, ctx)
        return new_member
    if existing is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise ApiError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{existing.member_id}.",
        )
    _check_epoch(existing, epoch, owned)
    return existing


def _heartbeat(
    txn: Txn, env: Envelope, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext, op: Op
) -> ConsumerGroupHeartbeatResponse:
    config = txn.config
    group_id = req.group_id
    create = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    group = ctx.groups.get(group_id)
    if group is None:
        if not create:
            # ``getOrMaybeCreateConsumerGroup`` without creating: a classic group of that id is not one
            message = (
                f"Group {group_id} is not a consumer group."
                if group_id in ctx.classic.groups
                else f"Consumer group {group_id} not found."
            )
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, message)
        classic = ctx.classic.groups.get(group_id)
        if classic is not None and classic.members:
            from kgroup.group.consumer.migration import upgrade

            group = upgrade(txn, classic, ctx, op.records, op.timer_ops)
        else:
            group = ConsumerGroupData(group_id)  # a new group; it exists once its records are replayed
    member_id = req.member_id
    instance_id = req.instance_id
    # throwIfConsumerGroupIsFull
    if (
        not group.has_static_member(instance_id)
        and len(group.members) >= config.consumer_max_size
        and (not member_id or member_id not in group.members)
    ):
        raise ApiError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {config.consumer_max_size} members.",
        )
    if not member_id:
        member_id = random_uuid(txn)
    owned = req.topic_partitions
    if instance_id is None:
        member = _dynamic_member(group, member_id, req.member_epoch, owned, create)
    else:
        member = _static_member(group, member_id, req.member_epoch, instance_id, owned, create, op, txn, ctx)

    updated = member
    changes = member_changes(env, instance_id, req.rack_id, req.rebalance_timeout_ms)
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        # the names as the member's record lists them (sorted, once each): cheap when the broker
        # handed them over sorted, as it does
        ordered = tuple(dict.fromkeys(sorted(req.subscribed_topic_names)))
        names = frozenset(ordered)
        changes["subscribed_topic_names"] = names
        changes["names_sorted"] = (names, ordered)
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex
    changes["classic_member_metadata"] = None
    updated = replace(member, **changes)

    names_changed = member_subscription_changed(group_id, member, updated, op)
    regex_status = maybe_update_regexes(txn, group, member, updated, op, ctx)
    default_assignor = config.consumer_assignors[0]
    assignor_changed = (group.preferred_server_assignor() or default_assignor) != (
        group.preferred_server_assignor(member, updated) or default_assignor
    )
    subscription_changed = names_changed or regex_status != RegexStatus.NO_CHANGE
    group_epoch = group.group_epoch
    subscription = group.subscription_type
    bump = names_changed or regex_status == RegexStatus.UPDATED_AND_RESOLVED or assignor_changed
    # Kafka refreshes when the member changed its subscription or the metadata of the group's topics
    # may have changed; comparing the metadata hash on every heartbeat gives the same bumps
    group_epoch, subscription = update_subscription_metadata(group, bump, member, updated, op, ctx)

    target_epoch, target = maybe_update_target(
        txn, group, group_epoch, member, updated, subscription, op, ctx
    )
    try:
        updated = maybe_reconcile(
            txn, group, updated, target_epoch, target, subscription_changed, owned, op, ctx
        )
    except FencedMemberEpoch as exc:
        raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from exc
    final_member_id = updated.member_id
    op.timer_ops.append(
        lambda: txn.schedule(SessionTimer(group_id, final_member_id), config.consumer_session_timeout_ms)
    )

    full_request = (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and owned is not None
    )
    assignment = None
    if (
        req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        or full_request
        or member.assigned_partitions != updated.assigned_partitions
    ):
        assignment = response_assignment(updated.assigned_partitions)
    return ConsumerGroupHeartbeatResponse(
        ErrorCode.NONE,
        None,
        final_member_id,
        updated.member_epoch,
        config.consumer_heartbeat_interval_ms,
        assignment,
    )


# --- leaving and fencing ---------------------------------------------------------------------------------


def _leave(
    txn: Txn, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext, op: Op
) -> ConsumerGroupHeartbeatResponse:
    """``consumerGroupLeave``: -1 leaves for good, -2 (static members) leaves for now."""
    group = _group_or_error(ctx, req.group_id)
    response = ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch)
    if req.instance_id is None:
        member = member_of(group, req.member_id)
        fence_members(txn, group, [member], op, ctx)
        return response
    member_or_none = group.static_member(req.instance_id)
    if member_or_none is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
    member = member_or_none
    if member.member_id != req.member_id:
        raise ApiError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
            f"{member.member_id}.",
        )
    if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        leaving = replace(
            member.with_assigned_epochs_reset(),
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            partitions_pending_revocation={},
        )
        op.records.append(
            ConsumerGroupCurrentMemberAssignment(group.group_id, member.member_id, leaving.assignment_value())
        )
        return ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, None, member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH
        )
    fence_members(txn, group, [member], op, ctx)
    return response
