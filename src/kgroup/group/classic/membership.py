"""SyncGroup, Heartbeat and LeaveGroup (Kafka's ``classicGroupSync``, ``classicGroupHeartbeat``,
``classicGroupLeave``)."""

from __future__ import annotations

from kgroup.group.classic import mutate
from kgroup.group.classic.group import GroupData
from kgroup.group.classic.rebalance import (
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    remove_pending_sync_member,
    reschedule_heartbeat,
    set_and_propagate_assignment,
)
from kgroup.group.classic.timers import HeartbeatTimer
from kgroup.group.records import Parked, PendingMemberRemoved
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.messages import (
    UNKNOWN_MEMBER_ID,
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode
from kgroup.valuetypes import replace

__all__ = ["handle_heartbeat", "handle_leave", "handle_sync"]

S = GroupState

#: SyncGroup v5 added the protocol type and name the coordinator checks (INCONSISTENT_GROUP_PROTOCOL)
_SYNC_PROTOCOL_FIELDS_VERSION = 5


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def _validate_sync(group: GroupData, req: SyncGroupRequest, api_version: int) -> ErrorCode | None:
    error = group.validate_generation(req.member_id, req.group_instance_id, req.generation_id)
    if error is not None:
        return error
    if api_version < _SYNC_PROTOCOL_FIELDS_VERSION:
        return None  # the request has no protocol type or name before v5
    if _inconsistent(req.protocol_type, group.protocol_type) or _inconsistent(
        req.protocol_name, group.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def handle_sync(txn: Txn, groups: dict[str, GroupData], env: Envelope, req: SyncGroupRequest) -> None:
    def answer(error: ErrorCode) -> None:
        txn.reply(env.connection, env.correlation_id, SyncGroupResponse(error))

    if not req.group_id:
        return answer(ErrorCode.INVALID_GROUP_ID)
    group = groups.get(req.group_id)
    if group is None or group.in_state(S.EMPTY):
        return answer(ErrorCode.UNKNOWN_MEMBER_ID)
    error = _validate_sync(group, req, env.api_version)
    if error is not None:
        return answer(error)
    if group.in_state(S.PREPARING_REBALANCE):
        return answer(ErrorCode.REBALANCE_IN_PROGRESS)
    if group.in_state(S.COMPLETING_REBALANCE):
        member = group.member(req.member_id)
        mutate.put_member(
            txn, group, replace(member, awaiting_sync=Parked(env.connection, env.correlation_id))
        )
        remove_pending_sync_member(txn, group, req.member_id)
        if group.is_leader(req.member_id):
            # the leader's assignment; a later entry for the same member wins, as in Java's HashMap,
            # and members the leader left out get an empty assignment
            assignment: dict[str, bytes] = {}
            for entry in req.assignments:
                assignment[entry.member_id] = entry.assignment
            set_and_propagate_assignment(txn, group, assignment)
            mutate.transition(txn, group, S.STABLE)
        return None
    # Stable: the member's current assignment
    remove_pending_sync_member(txn, group, req.member_id)
    member = group.member(req.member_id)
    txn.reply(
        env.connection,
        env.correlation_id,
        SyncGroupResponse(
            ErrorCode.NONE,
            member.assignment,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
        ),
    )
    return None


#: the answers are values: one of each kind serves every heartbeat
_HEARTBEAT_ANSWERS = {error: HeartbeatResponse(error) for error in ErrorCode}


def handle_heartbeat(txn: Txn, groups: dict[str, GroupData], env: Envelope, req: HeartbeatRequest) -> None:
    txn.reply(
        env.connection, env.correlation_id, _HEARTBEAT_ANSWERS[_heartbeat(txn, groups.get(req.group_id), req)]
    )


def _heartbeat(txn: Txn, group: GroupData | None, req: HeartbeatRequest) -> ErrorCode:
    if not req.group_id:
        return ErrorCode.INVALID_GROUP_ID
    if group is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    error = group.validate_generation(req.member_id, req.group_instance_id, req.generation_id)
    if error is not None:
        return error
    state = group.state
    if state is S.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    reschedule_heartbeat(txn, group, req.member_id)
    if state is S.PREPARING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def _remove_current_member(txn: Txn, group: GroupData, member_id: str) -> None:
    txn.cancel(HeartbeatTimer(group.group_id, member_id))
    member = group.member(member_id)
    mutate.complete_join_future(
        txn, group, member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID)
    )
    mutate.remove_member(txn, group, member_id)


def handle_leave(txn: Txn, groups: dict[str, GroupData], env: Envelope, req: LeaveGroupRequest) -> None:
    if not req.group_id:
        txn.reply(env.connection, env.correlation_id, LeaveGroupResponse(ErrorCode.INVALID_GROUP_ID))
        return
    group = groups.get(req.group_id)
    if group is None:
        # Kafka's service answers a group it does not know with no error and each member unknown
        # (before v3 the one member's error becomes the answer's, in the wire layer)
        unknown = tuple(
            LeaveGroupMemberResponse(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
            for m in req.members
        )
        txn.reply(env.connection, env.correlation_id, LeaveGroupResponse(ErrorCode.NONE, unknown))
        return
    if group.in_state(S.DEAD):
        txn.reply(env.connection, env.correlation_id, LeaveGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return
    responses: list[LeaveGroupMemberResponse] = []
    for identity in req.members:
        error: ErrorCode | None
        if identity.member_id == UNKNOWN_MEMBER_ID:
            # an admin may remove a static member by instance id alone
            instance = identity.group_instance_id
            if instance is not None and instance in group.static_members:
                _remove_current_member(txn, group, group.static_members[instance])
                error = None
            else:
                error = ErrorCode.UNKNOWN_MEMBER_ID
        elif group.is_pending_member(identity.member_id):
            txn.emit(PendingMemberRemoved(group.group_id, identity.member_id))
            txn.cancel(HeartbeatTimer(group.group_id, identity.member_id))
            error = None
        else:
            error = group.validate_member(identity.member_id, identity.group_instance_id)
            if error is None:
                _remove_current_member(txn, group, identity.member_id)
        responses.append(
            LeaveGroupMemberResponse(identity.member_id, identity.group_instance_id, error or ErrorCode.NONE)
        )

    if any(r.error_code is ErrorCode.NONE for r in responses):
        if group.in_state(S.STABLE, S.COMPLETING_REBALANCE):
            maybe_prepare_rebalance_or_complete_join(txn, group)
        elif group.in_state(S.PREPARING_REBALANCE):
            maybe_complete_join_phase(txn, group)
    txn.reply(env.connection, env.correlation_id, LeaveGroupResponse(ErrorCode.NONE, tuple(responses)))
