"""``consumerGroupFenceMembers`` and the timers that fence: a member leaves for good, its session or
rebalance timer fires, or a group that is left with classic members only turns classic again."""

from __future__ import annotations

from kgroup.group.consumer.context import ConsumerContext, Op, cancel_timers
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.migration import can_downgrade, downgrade
from kgroup.group.consumer.steps import remove_member_records
from kgroup.group.consumer.timers import MemberTimer, RebalanceTimer
from kgroup.group.errors import timer_member
from kgroup.group.records.consumer import (
    ConsumerGroupMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMetadata,
    TargetAssignmentMetadataValue,
)
from kgroup.group.txn import Txn


def fence_members(
    txn: Txn, group: ConsumerGroupData, members: list[ConsumerGroupMember], op: Op, ctx: ConsumerContext
) -> None:
    """``consumerGroupFenceMembers``: remove the members, drop regexes only they used, bump the epoch."""
    if not members:
        return

    if can_downgrade(txn, group, members):
        op.timer_ops.append(lambda: downgrade(txn, group, members, ctx))
        return
    group_id = group.group_id
    for member in members:
        remove_member_records(group_id, member.member_id, op)
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
    metadata_hash = ctx.image.group_hash(names.names())
    group_epoch = group.group_epoch + 1
    op.records.append(ConsumerGroupMetadata(group_id, (group_epoch, metadata_hash)))
    if len(group.members) == len(members):
        op.records.append(
            ConsumerGroupTargetAssignmentMetadata(group_id, TargetAssignmentMetadataValue(group_epoch, 0))
        )
    for member in members:
        member_id = member.member_id
        op.timer_ops.append(lambda member_id=member_id: cancel_timers(txn, ctx, group_id, member_id))  # type: ignore[misc]


def fence_member_on_timer(txn: Txn, ctx: ConsumerContext, key: MemberTimer) -> None:
    """A session, rebalance or classic member's join or sync timer fired: fence the member (a
    rebalance timer only if the member is still in the epoch it was armed for)."""
    found = timer_member(ctx.groups, key.group_id, key.member_id)
    if found is None:
        return
    group, member = found
    if isinstance(key, RebalanceTimer) and member.member_epoch != key.member_epoch:
        return
    op = Op()
    fence_members(txn, group, [member], op, ctx)
    op.apply(txn)
