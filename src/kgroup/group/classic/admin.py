"""DescribeGroups, ListGroups, and the admin operations without a message type here: deleting an
empty group and unloading the coordinator (both lead to Dead).

FindCoordinator is not the coordinator's to answer: which node coordinates a group is the cluster's
knowledge, so each host answers it (the broker's ``find_coordinator`` handler, the simulator's
runner)."""

from __future__ import annotations

from kgroup.group.classic import mutate
from kgroup.group.classic.group import GroupData
from kgroup.group.records import GroupDeleted
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.messages import (
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    JoinGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode

__all__ = ["delete_group", "handle_describe", "handle_list", "not_described", "unload"]

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


#: the first DescribeGroups version that answers a group it cannot describe with GROUP_ID_NOT_FOUND
DESCRIBE_GROUP_NOT_FOUND_VERSION = 6


def not_described(group_id: str, api_version: int, message: str) -> DescribedGroup:
    """A group DescribeGroups cannot describe (none, or not a classic one): Dead with no error before
    v6, and from v6 GROUP_ID_NOT_FOUND with ``message`` (``GroupMetadataManager.describeGroups``)."""
    if api_version < DESCRIBE_GROUP_NOT_FOUND_VERSION:
        return DescribedGroup(ErrorCode.NONE, group_id, S.DEAD.kafka_name, "", "")
    return DescribedGroup(
        ErrorCode.GROUP_ID_NOT_FOUND, group_id, S.DEAD.kafka_name, "", "", error_message=message
    )


def handle_describe(txn: Txn, env: Envelope, req: DescribeGroupsRequest) -> None:
    described: list[DescribedGroup] = []
    for group_id in req.groups:
        group = txn.groups.get(group_id)
        if group is None:
            described.append(not_described(group_id, env.api_version, f"Group {group_id} not found."))
        else:
            described.append(_describe(group))
    txn.reply(env.connection, env.correlation_id, DescribeGroupsResponse(tuple(described)))


def handle_list(txn: Txn, env: Envelope, req: ListGroupsRequest) -> None:
    wanted = {s.lower() for s in req.states_filter}
    listed = [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.kafka_name)
        for g in txn.groups.values()
        if not wanted or g.state.kafka_name.lower() in wanted
    ]
    listed.sort(key=lambda g: g.group_id)
    txn.reply(env.connection, env.correlation_id, ListGroupsResponse(ErrorCode.NONE, tuple(listed)))


def delete_group(txn: Txn, group_id: str) -> ErrorCode:
    """DeleteGroups for one group: only an Empty group can go (NON_EMPTY_GROUP otherwise); the group
    passes through Dead and is removed with its offsets (a tombstone record)."""
    group = txn.groups.get(group_id)  # the empty group id is a group like any other (as in Kafka)
    if group is None or group.in_state(S.DEAD):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if not group.in_state(S.EMPTY):
        return ErrorCode.NON_EMPTY_GROUP
    for key in [k for k in txn.armed if len(k) > 1 and k[1] == group_id]:
        txn.cancel(key)
    mutate.transition(txn, group, S.DEAD)
    txn.emit(GroupDeleted(group_id))
    return ErrorCode.NONE


def unload(txn: Txn) -> None:
    """The coordinator loses its ``__consumer_offsets`` partition: every group goes Dead and parked
    requests are answered NOT_COORDINATOR, so clients look for the new coordinator."""
    for group in list(txn.groups.values()):
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
    for key in list(txn.armed):
        txn.cancel(key)
