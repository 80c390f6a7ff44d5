"""ConsumerGroupHeartbeat (KIP-848): join, heartbeat, reconcile and leave, as Kafka 4.4's
``GroupMetadataManager.consumerGroupHeartbeat`` does it; and the timers it arms.

A handler validates, decides, and collects Kafka's records in a list; only when it cannot fail any more
are the records emitted (applied and persisted) and the timers armed — Kafka writes an operation's
records only when it succeeds. An :class:`ApiError` answers the request with its code and message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from kgroup.group.assignors import create_server_assignor
from kgroup.group.assignors.api import (
    GroupAssignment,
    MemberSpec,
    PartitionAssignorError,
    ServerAssignor,
    SubscriptionType,
    group_spec,
)
from kgroup.group.consumer.group import ConsumerGroupData, SubscriptionCount, subscription_type_of
from kgroup.group.consumer.member import ConsumerMember
from kgroup.group.consumer.metadata import MetadataImage
from kgroup.group.consumer.reconcile import FencedMemberEpoch, next_assignment, subscribed_topic_names
from kgroup.group.consumer.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
    ResolvedRegularExpression,
    TargetAssignmentMetadataValue,
    TopicAssignment,
)
from kgroup.group.consumer.regex import compile_re2
from kgroup.group.txn import Txn
from kgroup.javacompat import JavaHashSet, hashmap_iteration_order, java_integer_hash
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

__all__ = [
    "ApiError",
    "ConsumerContext",
    "fence_member_on_timer",
    "fence_members",
    "handle_consumer_heartbeat",
    "invalid_heartbeat_answer",
    "join_key",
    "rebalance_key",
    "regex_key",
    "resolve_regexes_on_timer",
    "session_key",
    "sync_key",
]

S = MemberAssignmentState

#: Kafka resolves a group's regexes at most once per this long (``GroupMetadataManager``'s 10 s floor)
REGEX_MIN_REFRESH_MS = 10_000


class ApiError(Exception):
    """An ``ApiException``: the request is answered with ``code`` and ``message``, nothing is written."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def session_key(group_id: str, member_id: str) -> tuple[str, ...]:
    """``groupSessionTimeoutKey``: the member is fenced when it fires."""
    return ("consumer-session", group_id, member_id)


def rebalance_key(group_id: str, member_id: str, member_epoch: int) -> tuple[str, ...]:
    """``groupRebalanceTimeoutKey``, with the epoch the timer was armed for (Kafka's closure keeps it)."""
    return ("consumer-rebalance", group_id, member_id, str(member_epoch))


def join_key(group_id: str, member_id: str) -> tuple[str, ...]:
    """``consumerGroupJoinKey``: a classic member that must rejoin is fenced if it does not in time."""
    return ("consumer-join", group_id, member_id)


def sync_key(group_id: str, member_id: str) -> tuple[str, ...]:
    """``consumerGroupSyncKey``: a classic member that joined is fenced if it does not sync in time."""
    return ("consumer-sync", group_id, member_id)


def regex_key(group_id: str) -> tuple[str, ...]:
    """The group's regex resolution (Kafka's ``<group>-regex`` executor task), due at once."""
    return ("consumer-regex", group_id)


@dataclass(slots=True)
class ConsumerContext:
    """What consumer-group handlers read besides the groups: the metadata image, the assignors, and
    the armed rebalance timers by member (an index the coordinator keeps from its timer records)."""

    groups: dict[str, ConsumerGroupData]
    image: MetadataImage
    #: the version of the last image that created topics (``lastMetadataImageWithNewTopics``)
    last_image_with_new_topics: int
    rebalance_timers: dict[tuple[str, str], tuple[str, ...]]
    assignors: dict[str, ServerAssignor] = field(default_factory=dict)

    def assignor(self, name: str) -> ServerAssignor:
        found = self.assignors.get(name)
        if found is None:
            found = self.assignors[name] = create_server_assignor(name)
        return found


# --- validation (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid) ------------------


def _validate(req: ConsumerGroupHeartbeatRequest, version: int, assignors: Collection[str]) -> None:
    def empty(value: str | None, message: str) -> None:
        if value is not None and not value.strip():
            raise ApiError(ErrorCode.INVALID_REQUEST, message)

    if version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        empty(req.member_id, "MemberId can't be empty.")
    empty(req.group_id, "GroupId can't be empty.")
    empty(req.instance_id, "InstanceId can't be empty.")
    empty(req.rack_id, "RackId can't be empty.")
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


def _check_regex(regex: str) -> re.Pattern[str]:
    """``Utils.throwIfRegularExpressionIsInvalid`` (INVALID_REGULAR_EXPRESSION with RE2/J's
    description; :func:`kgroup.group.consumer.regex.compile_re2`)."""
    pattern, problem = compile_re2(regex)
    if pattern is None:
        raise ApiError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {problem}.",
        )
    return pattern


def _compile_quietly(regex: str) -> re.Pattern[str] | None:
    try:
        return _check_regex(regex)
    except ApiError:
        return None


# --- one heartbeat ---------------------------------------------------------------------------------


class _Op:
    """One operation's effects, applied only when it succeeds."""

    __slots__ = ("records", "timer_ops")

    def __init__(self) -> None:
        self.records: list[ConsumerGroupRecord] = []
        self.timer_ops: list[Callable[[], None]] = []


def invalid_heartbeat_answer(
    req: ConsumerGroupHeartbeatRequest, version: int, assignors: Collection[str]
) -> ConsumerGroupHeartbeatResponse | None:
    """The answer to a heartbeat that fails ``throwIfConsumerGroupHeartbeatRequestIsInvalid``, or
    ``None``: a host that routes requests to coordinators asks this first, as Kafka's
    ``GroupCoordinatorService`` validates before the shard (an invalid request is never NOT_COORDINATOR)."""
    try:
        _validate(req, version, assignors)
    except ApiError as error:
        return ConsumerGroupHeartbeatResponse(error.code, error.message)
    return None


def handle_consumer_heartbeat(
    txn: Txn, env: Envelope, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext
) -> None:
    try:
        _validate(req, env.api_version, txn.config.consumer_assignors)
        op = _Op()
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
    for record in op.records:
        txn.emit(record)
    for timer_op in op.timer_ops:
        timer_op()
    txn.reply(env.connection, env.correlation_id, response)


def _group_or_error(ctx: ConsumerContext, group_id: str) -> ConsumerGroupData:
    group = ctx.groups.get(group_id)
    if group is None:
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return group


def _member_or_error(group: ConsumerGroupData, member_id: str) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        raise ApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
        )
    return member


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


def _check_epoch(member: ConsumerMember, received: int, owned: tuple[TopicPartitions, ...] | None) -> None:
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
) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        if not create:
            raise ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
            )
        member = ConsumerMember(member_id)
    _check_epoch(member, epoch, owned)
    return member


def _static_member(
    group: ConsumerGroupData,
    member_id: str,
    epoch: int,
    instance_id: str,
    owned: tuple[TopicPartitions, ...] | None,
    create: bool,
    op: _Op,
    txn: Txn,
    ctx: ConsumerContext,
) -> ConsumerMember:
    existing = group.static_member(instance_id)
    if create:
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if not existing.uses_classic_protocol and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise ApiError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {existing.member_id} member.",
            )
        new_member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        _replace_member(group, existing, new_member, op, txn, ctx)
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


def _remove_member_records(group_id: str, member_id: str, op: _Op) -> None:
    op.records.append(ConsumerGroupCurrentMemberAssignment(group_id, member_id, None))
    op.records.append(ConsumerGroupTargetAssignmentMember(group_id, member_id, None))
    op.records.append(ConsumerGroupMemberMetadata(group_id, member_id, None))


def _replace_member(
    group: ConsumerGroupData,
    old: ConsumerMember,
    new: ConsumerMember,
    op: _Op,
    txn: Txn,
    ctx: ConsumerContext,
) -> None:
    """``replaceMember``: a static member's new id takes the old one's place and target."""
    group_id = group.group_id
    _remove_member_records(group_id, old.member_id, op)
    op.records.append(ConsumerGroupMemberMetadata(group_id, new.member_id, new.metadata_value()))
    op.records.append(
        ConsumerGroupTargetAssignmentMember(group_id, new.member_id, group.target_of(old.member_id))
    )
    op.records.append(ConsumerGroupCurrentMemberAssignment(group_id, new.member_id, new.assignment_value()))
    op.timer_ops.append(lambda: _cancel_timers(txn, ctx, group_id, old.member_id))


def _heartbeat(
    txn: Txn, env: Envelope, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext, op: _Op
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
                if group_id in txn.groups
                else f"Consumer group {group_id} not found."
            )
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, message)
        classic = txn.groups.get(group_id)
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
        member_id = _random_uuid(txn)
    owned = req.topic_partitions
    if instance_id is None:
        member = _dynamic_member(group, member_id, req.member_epoch, owned, create)
    else:
        member = _static_member(group, member_id, req.member_epoch, instance_id, owned, create, op, txn, ctx)

    updated = member
    changes: dict[str, object] = {"client_id": env.client_id, "client_host": env.client_host}
    if instance_id is not None:
        changes["instance_id"] = instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = frozenset(req.subscribed_topic_names)
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex
    changes["classic_member_metadata"] = None
    updated = replace(member, **changes)

    names_changed = _member_subscription_changed(group_id, member, updated, op)
    regex_status = _maybe_update_regexes(txn, group, member, updated, op, ctx)
    default_assignor = config.consumer_assignors[0]
    assignor_changed = (group.preferred_server_assignor() or default_assignor) != (
        group.preferred_server_assignor(member, updated) or default_assignor
    )
    subscription_changed = names_changed or regex_status != _RegexStatus.NO_CHANGE
    group_epoch = group.group_epoch
    subscription = group.subscription_type
    bump = names_changed or regex_status == _RegexStatus.UPDATED_AND_RESOLVED or assignor_changed
    # Kafka refreshes when the member changed its subscription or the metadata of the group's topics
    # may have changed; comparing the metadata hash on every heartbeat gives the same bumps
    group_epoch, subscription = _update_subscription_metadata(group, bump, member, updated, op, ctx)

    target_epoch, target = _maybe_update_target(
        txn, group, group_epoch, member, updated, subscription, op, ctx
    )
    try:
        updated = _maybe_reconcile(
            txn, group, updated, target_epoch, target, subscription_changed, owned, op, ctx
        )
    except FencedMemberEpoch as exc:
        raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from exc
    final_member_id = updated.member_id
    op.timer_ops.append(
        lambda: txn.schedule(session_key(group_id, final_member_id), config.consumer_session_timeout_ms)
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


def response_assignment(assigned: Mapping[TopicId, Mapping[int, int]]) -> tuple[TopicPartitions, ...]:
    """``ConsumerGroupHeartbeatResponse.createAssignment``: topics and partitions in the order Kafka's
    ``HashMap``s give them."""
    topics = JavaHashSet.copy_of(lambda t: t.java_hash, assigned)
    return tuple(
        TopicPartitions(topic, tuple(JavaHashSet.copy_of(java_integer_hash, assigned[topic])))
        for topic in topics
    )


def _random_uuid(txn: Txn) -> str:
    """``Uuid.randomUuid().toString()``: 16 random bytes, URL-safe base64 without padding."""
    return str(TopicId.from_int(txn.rng.getrandbits(128)))


def _member_subscription_changed(
    group_id: str, member: ConsumerMember, updated: ConsumerMember, op: _Op
) -> bool:
    """``hasMemberSubscriptionChanged``: writes the member's metadata record when anything changed."""
    if updated != member and (
        updated.metadata_value() != member.metadata_value() or updated.member_id != member.member_id
    ):
        op.records.append(ConsumerGroupMemberMetadata(group_id, updated.member_id, updated.metadata_value()))
        return updated.subscribed_topic_names != member.subscribed_topic_names
    return False


class _RegexStatus:
    NO_CHANGE = 0
    UPDATED = 1
    UPDATED_AND_RESOLVED = 2


def _maybe_update_regexes(
    txn: Txn,
    group: ConsumerGroupData,
    member: ConsumerMember,
    updated: ConsumerMember,
    op: _Op,
    ctx: ConsumerContext,
) -> int:
    """``maybeUpdateRegularExpressions``: tombstone a regex nobody uses any more, validate a new one,
    and arm the group's resolution when a new regex, new topics or the refresh interval call for it."""
    now_ms = txn.now_ms
    group_id = group.group_id
    old_regex, new_regex = member.regex, updated.regex
    require_refresh = False
    status = _RegexStatus.NO_CHANGE
    if member.subscribed_topic_regex != updated.subscribed_topic_regex:
        status = _RegexStatus.UPDATED
        if old_regex is not None and group.num_subscribed_members(old_regex) == 1:
            op.records.append(ConsumerGroupRegularExpression(group_id, old_regex, None))
        if new_regex is not None:
            if group.num_subscribed_members(new_regex) == 0:
                _check_regex(new_regex)
                require_refresh = True
            elif new_regex in group.resolved_regexes:
                status = _RegexStatus.UPDATED_AND_RESOLVED
        elif old_regex is not None:
            status = _RegexStatus.UPDATED_AND_RESOLVED
    if not require_refresh and not group.subscribed_regexes:
        return status
    key = regex_key(group_id)
    if key in txn.armed:
        return status
    last_refresh = group.last_regex_refresh_ms()
    if last_refresh is not None and now_ms <= last_refresh + REGEX_MIN_REFRESH_MS:
        return status
    regexes = group.subscribed_regexes_with(member, updated)
    require_refresh |= len(regexes) != len(group.resolved_regexes)
    require_refresh |= group.last_regex_version() < ctx.last_image_with_new_topics
    require_refresh |= (
        last_refresh is None or now_ms > last_refresh + txn.config.consumer_regex_refresh_interval_ms
    )
    if require_refresh and regexes:
        op.timer_ops.append(lambda: txn.schedule(key, 0))
    return status


def resolve_regexes_on_timer(txn: Txn, ctx: ConsumerContext, group_id: str) -> None:
    """The group's regex resolution ran (``TopicRegexResolver`` + ``handleRegularExpressionsResult``):
    write each regex's topics and bump the group epoch if any changed."""
    group = ctx.groups.get(group_id)
    if group is None or not group.subscribed_regexes:
        return
    image = ctx.image
    resolved: dict[str, set[str]] = {}
    patterns: list[tuple[str, re.Pattern[str]]] = []
    for regex in group.subscribed_regexes:
        resolved[regex] = set()
        pattern = _compile_quietly(regex)
        if pattern is not None:
            patterns.append((regex, pattern))
    for topic in image.topics:
        for regex, pattern in patterns:
            if pattern.fullmatch(topic):
                resolved[regex].add(topic)
    records: list[ConsumerGroupRecord] = []
    names = {
        name: SubscriptionCount(c.by_name, c.by_regex) for name, c in group.subscribed_topic_names.items()
    }
    bump = False
    for regex, topics in resolved.items():
        if group.num_subscribed_members(regex) == 0:
            continue
        new = ResolvedRegularExpression(frozenset(topics), image.version, txn.now_ms)
        old = group.resolved_regexes.get(regex)
        old_topics = old.topics if old is not None else frozenset()
        if old_topics != new.topics:
            bump = True
            for topic in old_topics:
                names[topic].by_regex -= 1
            for topic in new.topics:
                names.setdefault(topic, SubscriptionCount()).by_regex += 1
        records.append(ConsumerGroupRegularExpression(group_id, regex, new))
    metadata_hash = image.group_hash(name for name, c in names.items() if c.by_name > 0 or c.by_regex > 0)
    if metadata_hash != group.metadata_hash:
        bump = True
    if bump:
        records.append(ConsumerGroupMetadata(group_id, (group.group_epoch + 1, metadata_hash)))
    for record in records:
        txn.emit(record)


def _update_subscription_metadata(
    group: ConsumerGroupData,
    bump: bool,
    member: ConsumerMember,
    updated: ConsumerMember,
    op: _Op,
    ctx: ConsumerContext,
) -> tuple[int, SubscriptionType]:
    """``updateSubscriptionMetadata``: the group epoch (bumped when the subscription or its topics'
    metadata changed) and the subscription type the new member set would have."""
    regexes = group.subscribed_regexes_with(member, updated)
    names = group.subscribed_names_with(member, updated)
    metadata_hash = ctx.image.group_hash(names)
    members = len(group.members)
    if updated.member_id not in group.members and not group.has_static_member(updated.instance_id):
        members += 1
    subscription = subscription_type_of(regexes, names, members)
    group_epoch = group.group_epoch
    if metadata_hash != group.metadata_hash:
        bump = True
    if bump:
        group_epoch += 1
        op.records.append(ConsumerGroupMetadata(group.group_id, (group_epoch, metadata_hash)))
    return group_epoch, subscription


def _member_spec(
    member: ConsumerMember, target: TopicAssignment, ctx: ConsumerContext, group: ConsumerGroupData
) -> MemberSpec:
    names = subscribed_topic_names(member, group.resolved_regexes)
    ids = []
    for name in hashmap_iteration_order(names):
        topic = ctx.image.topic(name)
        if topic is not None:
            ids.append(topic.topic_id)
    return MemberSpec(tuple(ids), target, member.instance_id, member.rack_id)


def _maybe_update_target(
    txn: Txn,
    group: ConsumerGroupData,
    group_epoch: int,
    member: ConsumerMember,
    updated: ConsumerMember,
    subscription: SubscriptionType,
    op: _Op,
    ctx: ConsumerContext,
) -> tuple[int, TopicAssignment]:
    """``maybeUpdateTargetAssignment``: run the group's assignor when the group epoch moved past the
    assignment epoch (at most once per ``group.consumer.assignment.interval.ms``)."""
    if group.assignment_epoch >= group_epoch or not _can_compute(
        group.assignment_timestamp_ms, txn.config.consumer_assignment_interval_ms, txn.now_ms
    ):
        return group.assignment_epoch, group.target_of_static(updated.member_id, updated.instance_id)
    name = group.preferred_server_assignor(member, updated) or txn.config.consumer_assignors[0]
    # the members as they will be (UpdatedMembersAndTargetAssignmentView): the updated member in its
    # place; a static member's new id takes the old id's place and target
    members: dict[str, ConsumerMember] = dict(group.members)
    targets: dict[str, TopicAssignment] = dict(group.target_assignment)
    previous_static = (
        group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
    )
    members[updated.member_id] = updated
    if previous_static is not None and previous_static != updated.member_id:
        if previous_static in targets:
            targets[updated.member_id] = targets[previous_static]
        members.pop(previous_static, None)
        targets.pop(previous_static, None)
    spec = group_spec(
        (
            (member_id, _member_spec(m, targets.get(member_id, {}), ctx, group))
            for member_id, m in members.items()
        ),
        subscription,
        group.inverted_target,
    )
    try:
        result: GroupAssignment = ctx.assignor(name).assign(spec, ctx.image)
    except PartitionAssignorError as exc:
        raise ApiError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}",
        ) from exc
    except Exception as exc:
        raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}") from exc
    group_id = group.group_id
    for member_id in spec.members:
        new = result.get(member_id, {})
        old = targets.get(member_id)
        if old is None or not _same_assignment(old, new):
            op.records.append(ConsumerGroupTargetAssignmentMember(group_id, member_id, new))
    op.records.append(
        ConsumerGroupTargetAssignmentMetadata(
            group_id, TargetAssignmentMetadataValue(group_epoch, txn.now_ms)
        )
    )
    return group_epoch, result.get(updated.member_id, {})


def _same_assignment(a: Mapping[TopicId, Iterable[int]], b: Mapping[TopicId, Iterable[int]]) -> bool:
    """``Assignment.equals``: the same partitions per topic (a topic with no partitions counts)."""
    if a.keys() != b.keys():
        return False
    return all(set(a[t]) == set(b[t]) for t in a)


def _can_compute(timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """``canComputeNextTargetAssignment``."""
    return timestamp_ms == 0 or interval_ms == 0 or now_ms >= timestamp_ms + interval_ms


def _maybe_reconcile(
    txn: Txn,
    group: ConsumerGroupData,
    member: ConsumerMember,
    target_epoch: int,
    target: TopicAssignment,
    subscription_changed: bool,
    owned: tuple[TopicPartitions, ...] | None,
    op: _Op,
    ctx: ConsumerContext,
) -> ConsumerMember:
    """``maybeReconcile``: one step toward the target; arm the rebalance timeout while the member
    holds partitions it must revoke."""
    if not subscription_changed and member.is_reconciled_to(target_epoch):
        return member
    updated = next_assignment(
        member,
        target_epoch=target_epoch,
        target=target,
        image=ctx.image,
        resolved_regexes=group.resolved_regexes,
        current_partition_epoch=group.current_partition_epoch,
        has_subscription_changed=subscription_changed,
        owned=owned,
    )
    if updated != member:
        group_id = group.group_id
        op.records.append(
            ConsumerGroupCurrentMemberAssignment(group_id, updated.member_id, updated.assignment_value())
        )
        if not updated.uses_classic_protocol:
            member_id, epoch, timeout = updated.member_id, updated.member_epoch, updated.rebalance_timeout_ms
            if updated.state is S.UNREVOKED_PARTITIONS:
                op.timer_ops.append(
                    lambda: _schedule_rebalance(txn, ctx, group_id, member_id, epoch, timeout)
                )
            else:
                op.timer_ops.append(lambda: _cancel_rebalance(txn, ctx, group_id, member_id))
    return updated


def _schedule_rebalance(
    txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str, epoch: int, timeout: int
) -> None:
    _cancel_rebalance(txn, ctx, group_id, member_id)
    txn.schedule(rebalance_key(group_id, member_id, epoch), timeout)


def _cancel_rebalance(txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str) -> None:
    key = ctx.rebalance_timers.get((group_id, member_id))
    if key is not None:
        txn.cancel(key)


def _cancel_timers(txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str) -> None:
    """``cancelTimers``: session, rebalance, and a classic member's join and sync timeouts."""
    txn.cancel(session_key(group_id, member_id))
    _cancel_rebalance(txn, ctx, group_id, member_id)
    txn.cancel(join_key(group_id, member_id))
    txn.cancel(sync_key(group_id, member_id))


# --- leaving and fencing ---------------------------------------------------------------------------------


def _leave(
    txn: Txn, req: ConsumerGroupHeartbeatRequest, ctx: ConsumerContext, op: _Op
) -> ConsumerGroupHeartbeatResponse:
    """``consumerGroupLeave``: -1 leaves for good, -2 (static members) leaves for now."""
    group = _group_or_error(ctx, req.group_id)
    response = ConsumerGroupHeartbeatResponse(ErrorCode.NONE, None, req.member_id, req.member_epoch)
    if req.instance_id is None:
        member = _member_or_error(group, req.member_id)
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


def fence_members(
    txn: Txn, group: ConsumerGroupData, members: list[ConsumerMember], op: _Op, ctx: ConsumerContext
) -> None:
    """``consumerGroupFenceMembers``: remove the members, drop regexes only they used, bump the epoch."""
    if not members:
        return
    from kgroup.group.consumer.migration import can_downgrade, downgrade

    if can_downgrade(txn, group, members):
        op.timer_ops.append(lambda: downgrade(txn, group, members, ctx))
        return
    group_id = group.group_id
    for member in members:
        _remove_member_records(group_id, member.member_id, op)
    counts: dict[str, int] = {}
    for member in members:
        if member.regex is not None:
            counts[member.regex] = counts.get(member.regex, 0) + 1
    deleted: list[str] = []
    for regex, count in counts.items():
        if group.num_subscribed_members(regex) == count:
            op.records.append(ConsumerGroupRegularExpression(group_id, regex, None))
            deleted.append(regex)
    names = group.subscribed_names_without(members, deleted)
    metadata_hash = ctx.image.group_hash(names)
    group_epoch = group.group_epoch + 1
    op.records.append(ConsumerGroupMetadata(group_id, (group_epoch, metadata_hash)))
    if len(group.members) == len(members):
        op.records.append(
            ConsumerGroupTargetAssignmentMetadata(group_id, TargetAssignmentMetadataValue(group_epoch, 0))
        )
    for member in members:
        member_id = member.member_id
        op.timer_ops.append(lambda member_id=member_id: _cancel_timers(txn, ctx, group_id, member_id))  # type: ignore[misc]


def fence_member_on_timer(txn: Txn, ctx: ConsumerContext, key: tuple[str, ...]) -> None:
    """A session or rebalance timer fired: fence the member (a rebalance timer only if the member is
    still in the epoch it was armed for)."""
    kind, group_id, member_id = key[0], key[1], key[2]
    group = ctx.groups.get(group_id)
    if group is None:
        return
    member = group.members.get(member_id)
    if member is None:
        return
    if kind == "consumer-rebalance" and member.member_epoch != int(key[3]):
        return
    op = _Op()
    fence_members(txn, group, [member], op, ctx)
    for record in op.records:
        txn.emit(record)
    for timer_op in op.timer_ops:
        timer_op()
