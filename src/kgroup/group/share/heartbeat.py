"""ShareGroupHeartbeat (KIP-932) as Kafka 4.4.0's ``GroupMetadataManager`` answers it.

A member joins with epoch 0 and an id it chose itself, heartbeats with the epoch it was given, and
leaves with -1. Each heartbeat may bump the group epoch (the member's subscription changed, the
subscribed topics' metadata hash changed, or partitions whose share state was initialised are not
in the target assignment yet), recompute the target assignment with the ``simple`` assignor (at most
once per ``group.share.assignment.interval.ms``, over the initialised partitions only), and move the
member straight to its target (no revocation handshake). Partitions of subscribed topics whose share
state is neither initialised nor being initialised are written as initialising and handed to the
host as an :class:`InitializeShareState` task (Kafka's ``InitializeShareGroupState`` to the share
coordinator); its completion marks them initialised, and the next heartbeat assigns them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from kgroup.group.assignors import (
    MemberSpec,
    SimpleAssignor,
    SubscriptionType,
    assignment_from_record,
    group_spec,
)
from kgroup.group.errors import ApiError, member_of, not_blank, refusal, timer_member, unknown_member
from kgroup.group.metadata import MetadataImage
from kgroup.group.modern import changed_targets, new_target_assignment, same_assignment
from kgroup.group.records import share as records
from kgroup.group.records.consumer import TargetAssignmentMetadataValue, TopicAssignment
from kgroup.group.share.group import ShareGroupData, ShareMember, SharePartitionStates
from kgroup.group.share.timers import ShareSessionTimer
from kgroup.group.txn import Operation, Txn
from kgroup.javacompat import (
    JavaHashSet,
    hashmap_order_of,
    java_string_hash,
    timeline_hashmap_order,
    timeline_table_after_put,
)
from kgroup.messages import (
    SHARE_LEAVE_GROUP_MEMBER_EPOCH,
    Envelope,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId

__all__ = [
    "ApiError",
    "InitializeShareState",
    "ShareContext",
    "fence_share_member",
    "finish_initialize",
    "handle_share_heartbeat",
    "invalid_share_heartbeat_answer",
]

#: ``setMetadataRefreshDeadline(now + Integer.MAX_VALUE, epoch)``: a share group's topic metadata is
#: re-read only when its epoch moves (or it is loaded)
_INT_MAX = 2**31 - 1


@dataclass(slots=True)
class ShareContext:
    """What share-group handlers read: the groups, the metadata image, and whether another kind owns
    a group id (a share heartbeat for it is answered ``Group … is not a share group.``)."""

    groups: dict[str, ShareGroupData]
    image: MetadataImage
    owned_elsewhere: Callable[[str], bool]
    assignor: SimpleAssignor = field(default_factory=SimpleAssignor)


@dataclass(frozen=True, slots=True)
class InitializeShareState:
    """Kafka's ``InitializeShareGroupState`` call to the share coordinator (through its persister):
    these partitions' share state starts now. kgroup's share partitions keep their state themselves,
    so the call always succeeds; the host hands the outcome back to the coordinator."""

    group_id: str
    group_epoch: int
    partitions: tuple[tuple[TopicId, str, tuple[int, ...]], ...]

    def run(self) -> object:
        return True


class _Op(Operation[records.ShareGroupRecord]):
    """One share-group operation's records (:class:`~kgroup.group.txn.Operation`)."""

    __slots__ = ()


# --- the request --------------------------------------------------------------------------------------


def _validate(req: ShareGroupHeartbeatRequest) -> None:
    """``throwIfShareGroupHeartbeatRequestIsInvalid`` (GroupCoordinatorService, before the shard)."""
    not_blank(req.member_id, "MemberId can't be empty.")
    not_blank(req.group_id, "GroupId can't be empty.")
    not_blank(req.rack_id, "RackId can't be empty.")
    if req.member_epoch == 0:
        if not req.subscribed_topic_names:
            raise ApiError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < SHARE_LEAVE_GROUP_MEMBER_EPOCH:
        raise ApiError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


def invalid_share_heartbeat_answer(req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse | None:
    """The answer Kafka's ``GroupCoordinatorService`` gives a request that fails its own checks (at any
    broker, before the group's coordinator is looked for), or ``None``."""
    return refusal(lambda: _validate(req), ShareGroupHeartbeatResponse)


def handle_share_heartbeat(
    txn: Txn, env: Envelope, req: ShareGroupHeartbeatRequest, ctx: ShareContext
) -> None:
    try:
        _validate(req)
        if req.member_epoch == SHARE_LEAVE_GROUP_MEMBER_EPOCH:
            response = _leave(txn, req, ctx)
        else:
            response = _heartbeat(txn, env, req, ctx)
    except ApiError as exc:
        response = ShareGroupHeartbeatResponse(exc.code, exc.message)
    txn.reply(env.connection, env.correlation_id, response)


def _share_group(ctx: ShareContext, group_id: str) -> ShareGroupData:
    """``shareGroup(groupId)``: the group, or GROUP_ID_NOT_FOUND as ``group(id)`` words it."""
    group = ctx.groups.get(group_id)
    if group is None:
        message = (
            f"Group {group_id} is not a share group."
            if ctx.owned_elsewhere(group_id)
            else f"Group {group_id} not found."
        )
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, message)
    return group


def _heartbeat(
    txn: Txn, env: Envelope, req: ShareGroupHeartbeatRequest, ctx: ShareContext
) -> ShareGroupHeartbeatResponse:
    group_id, member_id, epoch = req.group_id, req.member_id, req.member_epoch
    create = epoch == 0
    # getOrMaybeCreateShareGroup
    group = ctx.groups.get(group_id)
    if group is None:
        if ctx.owned_elsewhere(group_id):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = ShareGroupData(group_id)
    # throwIfShareGroupIsFull
    max_size = txn.config.share_max_size
    if len(group.members) >= max_size and (not member_id or member_id not in group.members):
        raise ApiError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The share group has reached its maximum capacity of {max_size} members.",
        )
    # getOrMaybeSubscribeShareGroupMember
    member = group.members.get(member_id)
    if member is None:
        if not create:
            raise unknown_member(member_id, group_id)
        member = ShareMember(member_id)
    _check_epoch(member, epoch)

    op = _Op()
    names = member.subscribed_topic_names
    if req.subscribed_topic_names is not None:
        names = tuple(JavaHashSet.copy_of(java_string_hash, req.subscribed_topic_names))
        if set(names) == set(member.subscribed_topic_names):
            names = member.subscribed_topic_names
    updated = replace(
        member,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        subscribed_topic_names=names,
        client_id=env.client_id,
        client_host=env.client_host,
    )
    changed = False
    if updated != member:
        op.records.append(records.ShareGroupMemberMetadata(group_id, member_id, updated.metadata_value()))
        changed = set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)

    group_epoch = group.group_epoch
    if group.assignment_epoch >= group_epoch:
        changed = changed or _initialized_assignment_pending(group)
    counts: Mapping[str, int] = group.subscribed_topic_names
    subscription = group.subscription_type(counts, len(group.members))
    refreshed = False
    # Kafka refreshes a share group's topic metadata when its epoch moved or when a topic it subscribes
    # to changed (``onMetadataUpdate`` -> ``requestMetadataRefresh``); comparing the subscribed topics'
    # hash on every heartbeat gives the same refreshes
    expired = group.metadata_refresh_epoch != group_epoch or (
        bool(group.members)
        and ctx.image.group_hash(group.subscribed_topic_names.keys()) != group.metadata_hash
    )
    if changed or expired:
        counts = group.names_with(group.members.get(member_id), updated)
        metadata_hash = ctx.image.group_hash(counts.keys())
        members = len(group.members) + (0 if member_id in group.members else 1)
        subscription = group.subscription_type(counts, members)
        if metadata_hash != group.metadata_hash:
            changed = True
        if changed:
            group_epoch += 1
            op.records.append(records.ShareGroupMetadata(group_id, (group_epoch, metadata_hash)))
        refreshed = True

    target_epoch, target = _maybe_update_target(txn, group, group_epoch, updated, subscription, op, ctx)
    reconciled = _maybe_reconcile(group_id, updated, target_epoch, target, changed, op, ctx)
    initialize = _maybe_initialize(txn, group, group_epoch, counts.keys(), op, ctx)

    op.apply(txn)
    stored = ctx.groups.get(group_id)
    if stored is not None:
        if refreshed:
            stored.metadata_refresh_epoch = group_epoch
        if initialize is not None:
            stored.note_initializing_asked({t: txn.now_ms for t, _, _ in initialize.partitions})
    txn.schedule(ShareSessionTimer(group_id, member_id), txn.config.share_session_timeout_ms)
    if initialize is not None:
        txn.tasks.append(initialize)

    full = req.subscribed_topic_names is not None
    assignment = None
    if epoch == 0 or full or not same_assignment(member.assigned_partitions, reconciled.assigned_partitions):
        assignment = tuple(TopicPartitions(t, tuple(p)) for t, p in reconciled.assigned_partitions.items())
    return ShareGroupHeartbeatResponse(
        ErrorCode.NONE,
        None,
        reconciled.member_id,
        reconciled.member_epoch,
        txn.config.share_heartbeat_interval_ms,
        assignment,
    )


def _check_epoch(member: ShareMember, received: int) -> None:
    """``throwIfShareGroupMemberEpochIsInvalid``."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise ApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise ApiError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.",
        )


# --- the target assignment ------------------------------------------------------------------------------


def _initialized_assignment_pending(group: ShareGroupData) -> bool:
    """``initializedAssignmentPending``: an initialised partition of a subscribed topic that the
    target assignment does not hold."""
    if group.is_empty() or group.partition_states is None or not group.partition_states.initialized:
        return False
    subscribed = group.subscribed_topic_names.keys()
    if not subscribed:
        return False
    held: dict[TopicId, set[int]] = {}
    for target in group.target_assignment.values():
        for topic, partitions in target.items():
            held.setdefault(topic, set()).update(partitions)
    for topic, (name, initialized) in group.partition_states.initialized.items():
        if name in subscribed:
            current = held.get(topic)
            if current is None or current != set(initialized):
                return True
    return False


def _can_compute(timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """``canComputeNextTargetAssignment``."""
    return timestamp_ms == 0 or interval_ms == 0 or now_ms >= timestamp_ms + interval_ms


def _subscribed_ids(member: ShareMember, image: MetadataImage) -> tuple[TopicId, ...]:
    """``TopicIds(subscribedTopicNames, image)``: the names that are topics, in the member's set's order."""
    names = member.subscribed_topic_names
    present = hashmap_order_of(image.topics.keys() & set(names), len(names), names)
    return tuple(image.topics[name].topic_id for name in present)


def _member_ids_with(group: ShareGroupData, member_id: str) -> list[str]:
    """The member ids as ``ShareGroup.members()`` iterates them when the target is computed. Unlike a
    consumer group's, a share group's ``getOrMaybeCreateMember`` puts a joining member (empty) into the
    group's ``TimelineHashMap`` at once (``updateMember``), so the joiner already has its place there
    (its slot, the table grown by that put), and ``UpdatedMembersAndTargetAssignmentView`` replaces it
    in place rather than appending it: the ``GroupSpec``'s ``HashMap`` is filled in that order, which
    decides the order of members sharing one of its buckets (two members joining a bucket of 16)."""
    if member_id in group.members:
        return group.member_ids_in_kafka_order()
    table = timeline_table_after_put(len(group.members), group.members_table)
    return timeline_hashmap_order([*group.members, member_id], table)


def _maybe_update_target(
    txn: Txn,
    group: ShareGroupData,
    group_epoch: int,
    updated: ShareMember,
    subscription: SubscriptionType,
    op: _Op,
    ctx: ShareContext,
) -> tuple[int, TopicAssignment]:
    """``maybeUpdateTargetAssignment`` of a share group: the ``simple`` assignor over the initialised
    partitions, when the group epoch moved past the assignment epoch (at most once per interval)."""
    if group.assignment_epoch >= group_epoch or not _can_compute(
        group.assignment_timestamp_ms, txn.config.share_assignment_interval_ms, txn.now_ms
    ):
        return group.assignment_epoch, group.target_assignment.get(updated.member_id, {})
    members: dict[str, ShareMember] = {
        m: group.members.get(m, updated) for m in _member_ids_with(group, updated.member_id)
    }
    members[updated.member_id] = updated
    targets = group.target_assignment
    assignable = group.partition_states.assignable() if group.partition_states is not None else {}
    spec = group_spec(
        (
            (
                member_id,
                MemberSpec(
                    _subscribed_ids(m, ctx.image),
                    assignment_from_record(targets.get(member_id, {}).items()),
                    None,
                    m.rack_id,
                ),
            )
            for member_id, m in members.items()
        ),
        subscription,
        assignable=assignable,
    )
    result = new_target_assignment(ctx.assignor, spec, ctx.image, group_epoch)
    group_id = group.group_id
    for member_id, new in changed_targets(spec.members, result, targets):
        op.records.append(records.ShareGroupTargetAssignmentMember(group_id, member_id, new))
    op.records.append(
        records.ShareGroupTargetAssignmentMetadata(
            group_id, TargetAssignmentMetadataValue(group_epoch, txn.now_ms)
        )
    )
    return group_epoch, result.get(updated.member_id, {})


def _maybe_reconcile(
    group_id: str,
    member: ShareMember,
    target_epoch: int,
    target: TopicAssignment,
    changed: bool,
    op: _Op,
    ctx: ShareContext,
) -> ShareMember:
    """``maybeReconcile`` with ``ShareGroupAssignmentBuilder``: straight to the target (its topics
    the member subscribes to), no revocation step."""
    if not changed and member.is_reconciled_to(target_epoch):
        return member
    if target_epoch != member.member_epoch:
        updated = replace(
            member,
            state=0,
            assigned_partitions=_filter(target, member, ctx.image),
            previous_member_epoch=member.member_epoch,
            member_epoch=target_epoch,
        )
    elif changed:
        updated = replace(member, assigned_partitions=_filter(target, member, ctx.image))
    else:
        return member
    if updated != member:
        op.records.append(
            records.ShareGroupCurrentMemberAssignment(group_id, updated.member_id, updated.assignment_value())
        )
    return updated


def _filter(target: TopicAssignment, member: ShareMember, image: MetadataImage) -> TopicAssignment:
    """``filterAssignedPartitions``: the target's topics whose ids the member subscribes to by name."""
    subscribed = set(_subscribed_ids(member, image))
    if all(topic in subscribed for topic in target):
        return target
    return {t: p for t, p in target.items() if t in subscribed}


# --- share-state initialisation -------------------------------------------------------------------------


def _maybe_initialize(
    txn: Txn, group: ShareGroupData, group_epoch: int, names: object, op: _Op, ctx: ShareContext
) -> InitializeShareState | None:
    """``maybeCreateInitializeShareGroupStateRequest``: the subscribed partitions neither initialised
    nor being initialised (asked less than ``group.share.initialize.retry.interval.ms`` ago) are
    written as initialising and asked for."""
    subscribed = set(names)  # type: ignore[call-overload]
    if not subscribed or not ctx.image.topics:
        return None
    states = group.partition_states or SharePartitionStates()
    retry = txn.config.share_initialize_retry_interval_ms
    wanted: dict[TopicId, tuple[str, frozenset[int]]] = {}
    for name in sorted(subscribed):
        topic = ctx.image.topics.get(name)
        if topic is None:
            continue
        done: set[int] = set()
        initialized = states.initialized.get(topic.topic_id)
        if initialized is not None:
            done |= initialized[1]
        asked = states.initializing.get(topic.topic_id)
        if asked is not None and asked[2] + retry > txn.now_ms:
            done |= asked[1]
        missing = frozenset(range(topic.partitions)) - done
        if missing:
            wanted[topic.topic_id] = (name, missing)
    if not wanted:
        return None
    initializing = {t: (n, p, 0) for t, (n, p, _) in states.initializing.items()}
    for topic_id, (name, partitions) in wanted.items():
        before = initializing.get(topic_id)
        initializing[topic_id] = (name, partitions | (before[1] if before else frozenset()), 0)
    deleting = {t: n for t, n in states.deleting.items() if t not in wanted}
    op.records.append(
        records.ShareGroupStatePartitionMetadata(
            group.group_id, SharePartitionStates(initializing, dict(states.initialized), deleting).value()
        )
    )
    return InitializeShareState(
        group.group_id,
        group_epoch,
        tuple((t, n, tuple(sorted(p))) for t, (n, p) in wanted.items()),
    )


def finish_initialize(txn: Txn, ctx: ShareContext, task: InitializeShareState, outcome: object) -> None:
    """``initializeShareGroupState``: the asked partitions are initialised (a failed call leaves them
    initialising, asked again after the retry interval)."""
    group = ctx.groups.get(task.group_id)
    if group is None or outcome is not True:
        return
    states = group.partition_states or SharePartitionStates()
    initialized = {t: (n, set(p)) for t, (n, p) in states.initialized.items()}
    initializing = {t: (n, set(p), w) for t, (n, p, w) in states.initializing.items()}
    for topic_id, name, partitions in task.partitions:
        entry = initialized.setdefault(topic_id, (name, set()))
        entry[1].update(partitions)
        asked = initializing.get(topic_id)
        if asked is not None:
            asked[1].difference_update(partitions)
            if not asked[1]:
                del initializing[topic_id]
    value = SharePartitionStates(
        {t: (n, frozenset(p), w) for t, (n, p, w) in initializing.items()},
        {t: (n, frozenset(p)) for t, (n, p) in initialized.items()},
        dict(states.deleting),
    ).value()
    txn.emit(records.ShareGroupStatePartitionMetadata(task.group_id, value))


# --- leaving and fencing --------------------------------------------------------------------------------


def _leave(txn: Txn, req: ShareGroupHeartbeatRequest, ctx: ShareContext) -> ShareGroupHeartbeatResponse:
    """``shareGroupLeave``: the member is fenced; the answer carries its id and epoch -1."""
    group = _share_group(ctx, req.group_id)
    member = member_of(group, req.member_id)
    fence_share_member(txn, group, member, ctx)
    return ShareGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch)


def fence_share_member(txn: Txn, group: ShareGroupData, member: ShareMember, ctx: ShareContext) -> None:
    """``shareGroupFenceMember``: its records gone, the group epoch bumped; an emptied group's
    assignment epoch moves to it."""
    group_id, member_id = group.group_id, member.member_id
    counts = group.names_with(member, None)
    metadata_hash = ctx.image.group_hash(counts.keys())
    epoch = group.group_epoch + 1
    last = len(group.members) == 1
    txn.emit(records.ShareGroupCurrentMemberAssignment(group_id, member_id, None))
    txn.emit(records.ShareGroupTargetAssignmentMember(group_id, member_id, None))
    txn.emit(records.ShareGroupMemberMetadata(group_id, member_id, None))
    txn.emit(records.ShareGroupMetadata(group_id, (epoch, metadata_hash)))
    if last:
        txn.emit(
            records.ShareGroupTargetAssignmentMetadata(group_id, TargetAssignmentMetadataValue(epoch, 0))
        )
    txn.cancel(ShareSessionTimer(group_id, member_id))


def fence_on_timer(txn: Txn, ctx: ShareContext, key: ShareSessionTimer) -> None:
    """The session timed out: ``shareGroupFenceMemberOperation`` (a group or member already gone is
    nothing to do)."""
    found = timer_member(ctx.groups, key.group_id, key.member_id)
    if found is None:
        return
    group, member = found
    fence_share_member(txn, group, member, ctx)
