"""JoinGroup (Kafka's ``classicGroupJoin`` and the functions it calls)."""

from __future__ import annotations

from kgroup.group.classic import mutate
from kgroup.group.classic.group import GroupData
from kgroup.group.classic.rebalance import (
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
    reschedule_heartbeat,
)
from kgroup.group.classic.timers import HeartbeatTimer
from kgroup.group.records import (
    ClassicGroupMember,
    GroupCreated,
    InitialDelayUpdated,
    Parked,
    PendingMemberAdded,
    StaticMemberReplaced,
)
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.messages import (
    UNKNOWN_MEMBER_ID,
    Envelope,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode
from kgroup.valuetypes import replace

__all__ = ["handle_join"]

S = GroupState

#: ``JoinGroupRequest.requiresKnownMemberId``: from v4 a new dynamic member gets MEMBER_ID_REQUIRED
_REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
#: ``JoinGroupRequest.supportsSkippingAssignment``: from v9 a returning static leader is told to keep
#: leading without running the assignor (KIP-814)
_SKIP_ASSIGNMENT_VERSION = 9


def handle_join(txn: Txn, groups: dict[str, GroupData], env: Envelope, req: JoinGroupRequest) -> None:
    def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
        txn.reply(
            env.connection, env.correlation_id, JoinGroupResponse(error_code=error, member_id=member_id)
        )

    if not req.group_id:
        return fail(ErrorCode.INVALID_GROUP_ID)
    cfg = txn.config
    if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
        return fail(ErrorCode.INVALID_SESSION_TIMEOUT)

    is_unknown_member = req.member_id == UNKNOWN_MEMBER_ID
    group = groups.get(req.group_id)
    if group is None:
        if not is_unknown_member:
            # a member id for a group that does not exist: the member must start over
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        txn.emit(GroupCreated(req.group_id, txn.now_ms))
        group = groups[req.group_id]

    if not _accept_joining_member(txn, group, req.member_id):
        if group.is_pending_member(req.member_id) or group.has_member(req.member_id):
            mutate.remove_member(txn, group, req.member_id)
        return fail(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)
    if is_unknown_member:
        _join_new_member(txn, env, req, group)
    else:
        _join_existing_member(txn, env, req, group)


def _accept_joining_member(txn: Txn, group: GroupData, member_id: str) -> bool:
    max_size = txn.config.group_max_size
    if group.in_state(S.EMPTY, S.DEAD):
        return True
    if group.in_state(S.PREPARING_REBALANCE):
        # counting members already waiting (not the group size) lets the last ones to rejoin be the
        # ones kicked out when the group is over the limit
        awaiting = group.has_member(member_id) and group.member(member_id).awaiting_join is not None
        return awaiting or group.num_awaiting_join() < max_size
    return group.has_member(member_id) or len(group.members) < max_size


def _join_new_member(txn: Txn, env: Envelope, req: JoinGroupRequest, group: GroupData) -> None:
    reply_to = (env.connection, env.correlation_id)
    if group.in_state(S.DEAD):
        txn.reply(
            *reply_to, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=UNKNOWN_MEMBER_ID)
        )
        return
    if not group.supports_protocols(req.protocol_type, req.protocols):
        txn.reply(
            *reply_to, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=UNKNOWN_MEMBER_ID)
        )
        return
    new_member_id = txn.new_member_id(env.client_id, req.group_instance_id)
    if req.group_instance_id is not None:
        existing = group.static_members.get(req.group_instance_id)
        if existing is not None:
            _update_static_member(txn, env, req, group, existing, new_member_id)
        else:
            _add_member_and_rebalance(txn, env, req, group, new_member_id)
        return
    if env.api_version < _REQUIRES_KNOWN_MEMBER_ID_VERSION:
        # before JoinGroup v4 the member cannot be asked to rejoin with an id: it is added directly
        _add_member_and_rebalance(txn, env, req, group, new_member_id)
        return
    # KIP-394: hand out an id and ask the member to come back with it
    txn.emit(PendingMemberAdded(group.group_id, new_member_id))
    txn.schedule(HeartbeatTimer(group.group_id, new_member_id), req.session_timeout_ms)
    txn.reply(*reply_to, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_member_id))


def _join_existing_member(txn: Txn, env: Envelope, req: JoinGroupRequest, group: GroupData) -> None:
    member_id = req.member_id
    reply_to = (env.connection, env.correlation_id)
    if group.in_state(S.DEAD):
        txn.reply(*reply_to, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
        return
    if not group.supports_protocols(req.protocol_type, req.protocols):
        txn.reply(*reply_to, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        return
    if group.is_pending_member(member_id):
        if req.group_instance_id is not None:
            raise AssertionError(f"pending member {member_id} cannot rejoin with an instance id")
        _add_member_and_rebalance(txn, env, req, group, member_id)
        return
    error = group.validate_member(member_id, req.group_instance_id)
    if error is not None:
        txn.reply(*reply_to, JoinGroupResponse(error, member_id=member_id))
        return

    member = group.member(member_id)
    same_metadata = member.protocols == req.protocols
    if group.in_state(S.PREPARING_REBALANCE):
        _update_member_and_rebalance(txn, env, req, group, member)
    elif group.in_state(S.COMPLETING_REBALANCE):
        if same_metadata:
            # it probably lost the JoinGroup answer: give it again
            txn.reply(*reply_to, group.join_response(member_id))
        else:
            _update_member_and_rebalance(txn, env, req, group, member)
    elif group.in_state(S.STABLE):
        if group.is_leader(member_id) or not same_metadata:
            # the leader may rejoin to force a rebalance (e.g. topic metadata changed)
            _update_member_and_rebalance(txn, env, req, group, member)
        else:
            txn.reply(*reply_to, group.join_response(member_id, with_members=False))
    else:
        # Empty with a member id: the member must reset its generation and rejoin
        txn.reply(*reply_to, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))


def _updated(member: ClassicGroupMember, req: JoinGroupRequest, parked: Parked | None) -> ClassicGroupMember:
    return replace(
        member,
        protocols=req.protocols,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        awaiting_join=parked,
    )


def _update_member_and_rebalance(
    txn: Txn, env: Envelope, req: JoinGroupRequest, group: GroupData, member: ClassicGroupMember
) -> None:
    mutate.put_member(txn, group, _updated(member, req, Parked(env.connection, env.correlation_id)))
    maybe_prepare_rebalance_or_complete_join(txn, group)


def _add_member_and_rebalance(
    txn: Txn, env: Envelope, req: JoinGroupRequest, group: GroupData, member_id: str
) -> None:
    member = ClassicGroupMember(
        member_id=member_id,
        group_instance_id=req.group_instance_id,
        client_id=env.client_id,
        client_host=env.client_host,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=req.protocols,
        awaiting_join=Parked(env.connection, env.correlation_id),
        is_new=True,
    )
    if (
        group.in_state(S.PREPARING_REBALANCE)
        and group.previous_state is S.EMPTY
        and not group.new_member_added
    ):
        delay = group.initial_delay
        txn.emit(
            InitialDelayUpdated(
                group.group_id, True, None if delay is None else delay[0], None if delay is None else delay[1]
            )
        )
    mutate.add_member(txn, group, member)
    # A parked JoinGroup hides disconnects, so new members get a long fixed timeout instead of the
    # session timeout; a member still interested simply retries.
    reschedule_heartbeat(txn, group, member_id, txn.config.group_new_member_join_timeout_ms)
    maybe_prepare_rebalance_or_complete_join(txn, group)


def _update_static_member(
    txn: Txn, env: Envelope, req: JoinGroupRequest, group: GroupData, old_member_id: str, new_member_id: str
) -> None:
    """A static member came back with an unknown member id: it replaces (fences) its old id."""
    current_leader = group.leader
    old = group.member(old_member_id)
    # the old id's parked requests are answered FENCED_INSTANCE_ID at once
    if old.awaiting_join is not None:
        txn.answer(
            old.awaiting_join,
            JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id, leader=""),
        )
    if old.awaiting_sync is not None:
        txn.answer(old.awaiting_sync, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
    new = replace(old, member_id=new_member_id, awaiting_join=None, awaiting_sync=None, is_new=False)
    # Java removes the old id from the map and puts the new one (at its bucket's tail)
    txn.emit(StaticMemberReplaced(group.group_id, old_member_id, new))
    if current_leader == old_member_id:
        mutate.set_leader(txn, group, new_member_id)
    # the old id's session timer will fire harmlessly; the new id gets its own
    reschedule_heartbeat(txn, group, new_member_id)
    mutate.put_member(
        txn, group, _updated(group.member(new_member_id), req, Parked(env.connection, env.correlation_id))
    )

    if group.in_state(S.STABLE):
        if group.protocol_name == group.select_protocol():
            # KIP-345: the selected protocol stays, so no rebalance: hand back the current generation.
            if env.api_version >= _SKIP_ASSIGNMENT_VERSION:
                # KIP-814: a returning leader learns it leads (and gets the members) but is told to
                # skip the assignor, so it keeps watching metadata for a later rebalance
                response = group.join_response(new_member_id, skip_assignment=group.is_leader(new_member_id))
            else:
                # before v9 the old leader id is returned, so a returning leader does not run the
                # assignor again (and does not know it leads)
                response = JoinGroupResponse(
                    error_code=ErrorCode.NONE,
                    generation_id=group.generation,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=current_leader or "",
                    skip_assignment=False,
                    member_id=new_member_id,
                )
            mutate.complete_join_future(txn, group, group.member(new_member_id), response)
        else:
            maybe_prepare_rebalance_or_complete_join(txn, group)
    elif group.in_state(S.COMPLETING_REBALANCE):
        # the leader may already have been sent the old id: rebalance so the new id gets an assignment
        prepare_rebalance(txn, group)
    elif group.in_state(S.EMPTY, S.DEAD):
        raise AssertionError(
            f"group {group.group_id} cannot be {group.state} with static member {req.group_instance_id}"
        )
    else:
        maybe_complete_join_phase(txn, group)
