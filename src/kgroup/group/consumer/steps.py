"""The group steps that the consumer-protocol heartbeat, a classic member's join/sync/heartbeat in a
mixed group, and the online migrations share, as Kafka 4.4's ``GroupMetadataManager`` does them:
replacing a member, resolving regexes, the subscription metadata, the target assignment, reconciling
a member and arming its rebalance timer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kgroup.group.assignors.api import (
    MemberSpec,
    SubscriptionType,
    group_spec,
)
from kgroup.group.consumer.context import (
    ConsumerContext,
    Op,
    cancel_rebalance,
    cancel_timers,
)
from kgroup.group.consumer.group import ConsumerGroupData, subscription_type_of
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.reconcile import next_assignment, subscribed_topic_names
from kgroup.group.consumer.regex import InvalidTopicRegex, TopicRegex, compile_topic_regex, resolve
from kgroup.group.consumer.timers import RebalanceTimer, RegexTimer
from kgroup.group.errors import ApiError
from kgroup.group.metadata import MetadataImage
from kgroup.group.modern import changed_targets, new_target_assignment
from kgroup.group.records import consumer as records
from kgroup.group.txn import Txn
from kgroup.javacompat import JavaHashSet, hashmap_order_of, java_integer_hash
from kgroup.messages import (
    Envelope,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId

S = records.MemberAssignmentState


#: Kafka resolves a group's regexes at most once per this long (``GroupMetadataManager``'s 10 s floor)
REGEX_MIN_REFRESH_MS = 10_000


def check_regex(regex: str) -> TopicRegex:
    """``Utils.throwIfRegularExpressionIsInvalid`` (INVALID_REGULAR_EXPRESSION with RE2/J's
    description; :func:`kgroup.group.consumer.regex.compile_topic_regex`)."""
    try:
        return compile_topic_regex(regex)
    except InvalidTopicRegex as exc:
        raise ApiError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc.description}.",
        ) from None


def remove_member_records(group_id: str, member_id: str, op: Op) -> None:
    op.records.append(records.ConsumerGroupCurrentMemberAssignment(group_id, member_id, None))
    op.records.append(records.ConsumerGroupTargetAssignmentMember(group_id, member_id, None))
    op.records.append(records.ConsumerGroupMemberMetadata(group_id, member_id, None))


def replace_member(
    group: ConsumerGroupData,
    old: ConsumerGroupMember,
    new: ConsumerGroupMember,
    op: Op,
    txn: Txn,
    ctx: ConsumerContext,
) -> None:
    """``replaceMember``: a static member's new id takes the old one's place and target."""
    group_id = group.group_id
    remove_member_records(group_id, old.member_id, op)
    op.records.append(records.ConsumerGroupMemberMetadata(group_id, new.member_id, new.metadata_value()))
    op.records.append(
        records.ConsumerGroupTargetAssignmentMember(group_id, new.member_id, group.target_of(old.member_id))
    )
    op.records.append(
        records.ConsumerGroupCurrentMemberAssignment(group_id, new.member_id, new.assignment_value())
    )
    op.timer_ops.append(lambda: cancel_timers(txn, ctx, group_id, old.member_id))


def response_assignment(assigned: Mapping[TopicId, Mapping[int, int]]) -> tuple[TopicPartitions, ...]:
    """``ConsumerGroupHeartbeatResponse.createAssignment``: topics and partitions in the order Kafka's
    ``HashMap``s give them."""
    topics = JavaHashSet.copy_of(lambda t: t.java_hash, assigned)
    return tuple(
        TopicPartitions(topic, tuple(JavaHashSet.copy_of(java_integer_hash, assigned[topic])))
        for topic in topics
    )


def member_changes(
    env: Envelope, instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int
) -> dict[str, object]:
    """The changes every ConsumerGroupHeartbeat and every classic member's JoinGroup make to the
    member: the client it came from, and the instance id, rack and rebalance timeout it sent (none
    or -1: kept)."""
    changes: dict[str, object] = {"client_id": env.client_id, "client_host": env.client_host}
    if instance_id is not None:
        changes["instance_id"] = instance_id
    if rack_id is not None:
        changes["rack_id"] = rack_id
    if rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = rebalance_timeout_ms
    return changes


def member_subscription_changed(
    group_id: str, member: ConsumerGroupMember, updated: ConsumerGroupMember, op: Op
) -> bool:
    """``hasMemberSubscriptionChanged``: writes the member's metadata record when anything changed."""
    if updated != member and (not updated.same_metadata(member) or updated.member_id != member.member_id):
        op.records.append(
            records.ConsumerGroupMemberMetadata(group_id, updated.member_id, updated.metadata_value())
        )
        return updated.subscribed_topic_names != member.subscribed_topic_names
    return False


class RegexStatus:
    NO_CHANGE = 0
    UPDATED = 1
    UPDATED_AND_RESOLVED = 2


def maybe_update_regexes(
    txn: Txn,
    group: ConsumerGroupData,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    op: Op,
    ctx: ConsumerContext,
) -> int:
    """``maybeUpdateRegularExpressions``: tombstone a regex nobody uses any more, validate a new one,
    and arm the group's resolution when a new regex, new topics or the refresh interval call for it."""
    now_ms = txn.now_ms
    group_id = group.group_id
    old_regex, new_regex = member.regex, updated.regex
    require_refresh = False
    status = RegexStatus.NO_CHANGE
    if member.subscribed_topic_regex != updated.subscribed_topic_regex:
        status = RegexStatus.UPDATED
        if old_regex is not None and group.num_subscribed_members(old_regex) == 1:
            op.records.append(records.ConsumerGroupRegularExpression(group_id, old_regex, None))
        if new_regex is not None:
            if group.num_subscribed_members(new_regex) == 0:
                check_regex(new_regex)
                require_refresh = True
            elif new_regex in group.resolved_regexes:
                status = RegexStatus.UPDATED_AND_RESOLVED
        elif old_regex is not None:
            status = RegexStatus.UPDATED_AND_RESOLVED
    if not require_refresh and not group.subscribed_regexes:
        return status
    key = RegexTimer(group_id)
    if key in txn.armed or group_id in ctx.resolving:
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
        requester = txn.requester

        def schedule() -> None:
            txn.schedule(key, 0)
            ctx.regex_requesters[group_id] = requester

        op.timer_ops.append(schedule)
    return status


@dataclass(frozen=True, slots=True)
class RegexResolution:
    """The group's regex resolution (Kafka's ``<group>-regex`` executor task running
    ``TopicRegexResolver``): which topics of ``image`` each regex matches. ``run`` is the work —
    RE2 over every topic name — and runs where the host puts it (off the coordinator in the broker);
    ``started_ms`` and the image's version are what the resolved records carry."""

    group_id: str
    regexes: tuple[str, ...]
    image: MetadataImage
    started_ms: int
    #: whose heartbeat asked for it (principal, client host), ``None`` when unknown (a resolution due
    #: at a reload): a host with an authorizer keeps only the topics it may describe
    requester: tuple[str, str] | None = None

    def run(self) -> dict[str, frozenset[str]]:
        return resolve(self.regexes, self.image.topics)


def start_regex_resolution(txn: Txn, ctx: ConsumerContext, group_id: str) -> None:
    """The group's resolution is due: hand it to the host as a task (``executor.schedule``)."""
    group = ctx.groups.get(group_id)
    if group is None or not group.subscribed_regexes:
        return
    ctx.resolving.add(group_id)
    requester = ctx.regex_requesters.pop(group_id, None)
    regexes = tuple(group.subscribed_regexes)
    txn.tasks.append(RegexResolution(group_id, regexes, ctx.image, txn.now_ms, requester))


def finish_regex_resolution(
    txn: Txn, ctx: ConsumerContext, task: RegexResolution, resolved: Mapping[str, frozenset[str]] | None
) -> None:
    """``handleRegularExpressionsResult``: write each regex the group still uses with its topics, and
    bump the group epoch if any changed or the subscribed topics' metadata did. A resolution that
    failed (``None``) writes nothing, as Kafka's logs its exception."""
    ctx.resolving.discard(task.group_id)
    group_id = task.group_id
    group = ctx.groups.get(group_id)
    if group is None or resolved is None:
        return
    image = ctx.image
    emitted: list[records.ConsumerGroupRecord] = []
    names = group.subscribed_topic_names.copy()
    bump = False
    for regex, topics in resolved.items():
        if group.num_subscribed_members(regex) == 0:
            continue
        new = records.ResolvedRegularExpression(topics, task.image.version, task.started_ms)
        old = group.resolved_regexes.get(regex)
        old_topics = old.topics if old is not None else frozenset()
        if old_topics != new.topics:
            bump = True
            names.change_regex(old_topics, -1)
            names.change_regex(new.topics, 1)
        emitted.append(records.ConsumerGroupRegularExpression(group_id, regex, new))
    metadata_hash = image.group_hash(names.names())
    if metadata_hash != group.metadata_hash:
        bump = True
    if bump:
        emitted.append(records.ConsumerGroupMetadata(group_id, (group.group_epoch + 1, metadata_hash)))
    for record in emitted:
        txn.emit(record)


def update_subscription_metadata(
    group: ConsumerGroupData,
    bump: bool,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    op: Op,
    ctx: ConsumerContext,
) -> tuple[int, SubscriptionType]:
    """``updateSubscriptionMetadata``: the group epoch (bumped when the subscription or its topics'
    metadata changed) and the subscription type the new member set would have."""
    regexes = group.subscribed_regexes_with(member, updated)
    names = group.subscribed_names_with(member, updated)
    metadata_hash = ctx.image.group_hash(names.names())
    members = len(group.members)
    if updated.member_id not in group.members and not group.has_static_member(updated.instance_id):
        members += 1
    subscription = subscription_type_of(regexes, names, members)
    group_epoch = group.group_epoch
    if metadata_hash != group.metadata_hash:
        bump = True
    if bump:
        group_epoch += 1
        op.records.append(records.ConsumerGroupMetadata(group.group_id, (group_epoch, metadata_hash)))
    return group_epoch, subscription


#: the target of a member without one (shared: a spec's identity then holds from call to call)
_NO_TARGET: records.TopicAssignment = {}


def member_spec(
    member: ConsumerGroupMember,
    target: records.TopicAssignment,
    ctx: ConsumerContext,
    group: ConsumerGroupData,
) -> MemberSpec:
    names = subscribed_topic_names(member, group.resolved_regexes)
    topics = ctx.image.topics
    # the subscribed names that are topics, in the order the member's HashSet of names lists them
    present = hashmap_order_of(topics.keys() & names, len(names), names)
    ids = tuple(topics[name].topic_id for name in present)
    return MemberSpec(ids, target, member.instance_id, member.rack_id)


def member_specs(
    members: Mapping[str, ConsumerGroupMember],
    targets: Mapping[str, records.TopicAssignment],
    ctx: ConsumerContext,
    group: ConsumerGroupData,
) -> Iterator[tuple[str, MemberSpec]]:
    """Each member's :func:`member_spec`, the one built for the last assignment where the member, its
    target and the metadata image are still the very same objects (all three are replaced, never
    changed, and a spec depends on nothing else unless the member subscribes by regex, whose
    resolution can change on its own: those are built every time). Only the members handed now are
    kept for the next assignment (``group.member_specs``). The specs an assignor is handed are then
    the same objects as on its last call for every member that did not change, which is what lets it
    recognise them (:mod:`kgroup.group.assignors.fast.reuse`)."""
    known = group.member_specs
    kept: dict[str, tuple[ConsumerGroupMember, records.TopicAssignment, MetadataImage, MemberSpec]] = {}
    image = ctx.image
    for member_id, member in members.items():
        target = targets.get(member_id, _NO_TARGET)
        cached = known.get(member_id)
        if cached is not None and cached[0] is member and cached[1] is target and cached[2] is image:
            spec = cached[3]
        else:
            spec = member_spec(member, target, ctx, group)
        if member.regex is None:
            kept[member_id] = (member, target, image, spec)
        yield member_id, spec
    group.member_specs = kept


def maybe_update_target(
    txn: Txn,
    group: ConsumerGroupData,
    group_epoch: int,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    subscription: SubscriptionType,
    op: Op,
    ctx: ConsumerContext,
) -> tuple[int, records.TopicAssignment]:
    """``maybeUpdateTargetAssignment``: run the group's assignor when the group epoch moved past the
    assignment epoch (at most once per ``group.consumer.assignment.interval.ms``)."""
    if group.assignment_epoch >= group_epoch or not can_compute(
        group.assignment_timestamp_ms, txn.config.consumer_assignment_interval_ms, txn.now_ms
    ):
        return group.assignment_epoch, group.target_of_static(updated.member_id, updated.instance_id)
    name = group.preferred_server_assignor(member, updated) or txn.config.consumer_assignors[0]
    # the members as they will be (UpdatedMembersAndTargetAssignmentView's OverlayMap over the group's
    # TimelineHashMap, iterated in that map's order): the updated member in its place, a new one after
    # them all; a static member's new id takes the old id's place and target
    members: dict[str, ConsumerGroupMember] = {m: group.members[m] for m in group.member_ids_in_kafka_order()}
    targets: dict[str, records.TopicAssignment] = dict(group.target_assignment)
    previous_static = (
        group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
    )
    members[updated.member_id] = updated
    if previous_static is not None and previous_static != updated.member_id:
        if previous_static in targets:
            targets[updated.member_id] = targets[previous_static]
        members.pop(previous_static, None)
        targets.pop(previous_static, None)
    spec = group_spec(member_specs(members, targets, ctx, group), subscription, group.inverted_target)
    result = new_target_assignment(ctx.assignor(name), spec, ctx.image, group_epoch, any_failure=True)
    group_id = group.group_id
    for member_id, new in changed_targets(spec.members, result, targets):
        op.records.append(records.ConsumerGroupTargetAssignmentMember(group_id, member_id, new))
    op.records.append(
        records.ConsumerGroupTargetAssignmentMetadata(
            group_id, records.TargetAssignmentMetadataValue(group_epoch, txn.now_ms)
        )
    )
    return group_epoch, result.get(updated.member_id, {})


def can_compute(timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """``canComputeNextTargetAssignment``."""
    return timestamp_ms == 0 or interval_ms == 0 or now_ms >= timestamp_ms + interval_ms


def maybe_reconcile(
    txn: Txn,
    group: ConsumerGroupData,
    member: ConsumerGroupMember,
    target_epoch: int,
    target: records.TopicAssignment,
    subscription_changed: bool,
    owned: tuple[TopicPartitions, ...] | None,
    op: Op,
    ctx: ConsumerContext,
) -> ConsumerGroupMember:
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
            records.ConsumerGroupCurrentMemberAssignment(
                group_id, updated.member_id, updated.assignment_value()
            )
        )
        if not updated.uses_classic_protocol:
            member_id, epoch, timeout = updated.member_id, updated.member_epoch, updated.rebalance_timeout_ms
            if updated.state is S.UNREVOKED_PARTITIONS:
                op.timer_ops.append(lambda: schedule_rebalance(txn, ctx, group_id, member_id, epoch, timeout))
            else:
                op.timer_ops.append(lambda: cancel_rebalance(txn, ctx, group_id, member_id))
    return updated


def schedule_rebalance(
    txn: Txn, ctx: ConsumerContext, group_id: str, member_id: str, epoch: int, timeout: int
) -> None:
    cancel_rebalance(txn, ctx, group_id, member_id)
    txn.schedule(RebalanceTimer(group_id, member_id, epoch), timeout)
