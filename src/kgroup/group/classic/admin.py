"""A classic group in DescribeGroups and ListGroups, and the admin operations without a message type
here: deleting an empty group and unloading the coordinator (both lead to Dead)."""

from __future__ import annotations

from kgroup.group.classic import mutate
from kgroup.group.classic.group import GroupData
from kgroup.group.records import GroupDeleted
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.messages import (
    DescribedGroup,
    DescribedMember,
    JoinGroupResponse,
    ListedGroup,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode

__all__ = ["delete_group", "described", "listed", "unload"]

S = GroupState


def _describe(group: GroupData) -> DescribedGroup:
    members: list[DescribedMember] = []
    stable = group.in_state(S.STABLE)
    for m in group.all_members():
        # Kafka's describeNoMetadata outside Stable: no metadata (empty bytes), the assignment always
        metadata = m.metadata(group.protocol_name) if stable and group.protocol_name is not None else b""
        members.append(
            DescribedMember(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, metadata, m.assignment
            )
        )
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group.group_id,
        group_state=group.state.kafka_name,
        protocol_type=group.protocol_type or "",
        # Kafka fills in the protocol (and member metadata) only for a Stable group
        protocol_data=(group.protocol_name or "") if stable else "",
        members=tuple(members),
    )


def described(group: GroupData) -> DescribedGroup:
    """DescribeGroups' answer for one classic group."""
    return _describe(group)


def listed(groups: dict[str, GroupData], states: set[str]) -> list[ListedGroup]:
    """ListGroups' entries for the classic groups in one of ``states`` (lower case; every group if empty)."""
    return [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.kafka_name)
        for g in groups.values()
        if not states or g.state.kafka_name.lower() in states
    ]


def delete_group(txn: Txn, groups: dict[str, GroupData], group_id: str) -> ErrorCode:
    """DeleteGroups for one group: only an Empty group can go (NON_EMPTY_GROUP otherwise); the group
    passes through Dead and is removed with its offsets (a tombstone record)."""
    group = groups.get(group_id)  # the empty group id is a group like any other (as in Kafka)
    if group is None or group.in_state(S.DEAD):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if not group.in_state(S.EMPTY):
        return ErrorCode.NON_EMPTY_GROUP
    txn.cancel_group_timers(group_id)
    mutate.transition(txn, group, S.DEAD)
    txn.emit(GroupDeleted(group_id))
    return ErrorCode.NONE


def unload(txn: Txn, groups: dict[str, GroupData]) -> None:
    """The coordinator loses its ``__consumer_offsets`` partition: every classic group goes Dead and
    parked requests are answered NOT_COORDINATOR, so clients look for the new coordinator."""
    for group in list(groups.values()):
        before = group.state
        mutate.transition(txn, group, S.DEAD)
        if before is S.PREPARING_REBALANCE:
            for m in group.all_members():
                mutate.complete_join_future(
                    txn, group, m, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=m.member_id)
                )
        elif before in (S.COMPLETING_REBALANCE, S.STABLE):
            for m in group.all_members():
                mutate.complete_sync_future(txn, group, m, SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
