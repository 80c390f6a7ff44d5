"""The rebalance machinery shared by every request: prepare, complete the join, propagate assignments,
expire sessions and syncs (the classic parts of Kafka's ``GroupMetadataManager``)."""

from __future__ import annotations

from kgroup.group.classic import mutate
from kgroup.group.classic.group import GroupData
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer, SyncTimer
from kgroup.group.records import (
    ClassicGroupMember,
    GenerationStarted,
    InitialDelayUpdated,
    PendingMemberRemoved,
    PendingSyncMemberRemoved,
)
from kgroup.group.states import ALLOWED_PREVIOUS_STATES, GroupState
from kgroup.group.txn import Txn
from kgroup.messages import UNKNOWN_MEMBER_ID, JoinGroupResponse, SyncGroupResponse
from kgroup.model import ErrorCode
from kgroup.valuetypes import replace

__all__ = [
    "can_rebalance",
    "complete_join",
    "expire_heartbeat",
    "expire_pending_sync",
    "maybe_complete_join_phase",
    "maybe_prepare_rebalance_or_complete_join",
    "on_join_timer",
    "prepare_rebalance",
    "remove_pending_sync_member",
    "reschedule_heartbeat",
    "set_and_propagate_assignment",
]

S = GroupState


def can_rebalance(group: GroupData) -> bool:
    return group.state in ALLOWED_PREVIOUS_STATES[S.PREPARING_REBALANCE]


def reschedule_heartbeat(txn: Txn, group: GroupData, member_id: str, timeout_ms: int | None = None) -> None:
    """(Re)arm the member's session expiry: its session timeout, or ``timeout_ms`` if given."""
    txn.schedule(
        HeartbeatTimer(group.group_id, member_id),
        group.members[member_id].session_timeout_ms if timeout_ms is None else timeout_ms,
    )


def _set_initial_delay(
    txn: Txn, group: GroupData, new_member_added: bool, delay: tuple[int, int] | None
) -> None:
    if (new_member_added, delay) != (group.new_member_added, group.initial_delay):
        txn.emit(
            InitialDelayUpdated(
                group.group_id,
                new_member_added,
                None if delay is None else delay[0],
                None if delay is None else delay[1],
            )
        )


def _schedule_join(txn: Txn, group: GroupData, delay_ms: int, initial: tuple[int, int] | None) -> None:
    _set_initial_delay(txn, group, group.new_member_added, initial)
    txn.schedule(JoinTimer(group.group_id), delay_ms)


def prepare_rebalance(txn: Txn, group: GroupData) -> None:
    """Enter PreparingRebalance: parked syncs get REBALANCE_IN_PROGRESS; an empty group waits the
    initial delay, any other group completes the join now if everyone is already in, else waits
    for the rebalance timeout."""
    if group.in_state(S.COMPLETING_REBALANCE):
        _reset_and_propagate_assignment_with_error(txn, group, ErrorCode.REBALANCE_IN_PROGRESS)
    _remove_sync_expiration(txn, group)
    initial = group.in_state(S.EMPTY)
    if initial:
        delay = txn.config.group_initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        _schedule_join(txn, group, delay, (delay, remaining))
    mutate.transition(txn, group, S.PREPARING_REBALANCE)
    if not initial:
        _maybe_complete_join_else_schedule(txn, group)


def _maybe_complete_join_else_schedule(txn: Txn, group: GroupData) -> None:
    if group.has_all_members_joined():
        complete_join(txn, group)
    else:
        _schedule_join(txn, group, group.rebalance_timeout_ms(), None)


def maybe_prepare_rebalance_or_complete_join(txn: Txn, group: GroupData) -> None:
    if can_rebalance(group):
        prepare_rebalance(txn, group)
    else:
        maybe_complete_join_phase(txn, group)


def maybe_complete_join_phase(txn: Txn, group: GroupData) -> None:
    """Complete the join now if every member is in, unless this is the initial (delayed) rebalance."""
    if not group.in_state(S.PREPARING_REBALANCE):
        return
    if group.previous_state is S.EMPTY:
        return
    if not group.has_all_members_joined():
        return
    complete_join(txn, group)


def on_join_timer(txn: Txn, group: GroupData) -> None:
    """The join timer fired: extend the initial delay while members keep arriving, else complete."""
    if group.initial_delay is None:
        complete_join(txn, group)
        return
    delay_ms, remaining_ms = group.initial_delay
    if group.new_member_added and remaining_ms != 0:
        new_delay = min(txn.config.group_initial_rebalance_delay_ms, remaining_ms)
        new_remaining = max(remaining_ms - delay_ms, 0)
        _set_initial_delay(txn, group, False, (new_delay, new_remaining))
        txn.schedule(JoinTimer(group.group_id), new_delay)
    else:
        complete_join(txn, group)


def complete_join(txn: Txn, group: GroupData) -> None:
    """End the join phase: drop dynamic members that did not rejoin, start the next generation and
    answer every parked JoinGroup (the leader's answer lists all members in map order)."""
    txn.cancel(JoinTimer(group.group_id))
    _set_initial_delay(txn, group, group.new_member_added, None)
    for member in group.all_members():
        if member.awaiting_join is None and member.group_instance_id is None:
            mutate.remove_member(txn, group, member.member_id)
            txn.cancel(HeartbeatTimer(group.group_id, member.member_id))

    if group.in_state(S.DEAD):
        return
    if not _maybe_elect_new_joined_leader(txn, group) and group.members:
        # Nobody rejoined (only static members that did not come back): wait another rebalance
        # timeout for their sessions to expire.
        txn.schedule(JoinTimer(group.group_id), group.rebalance_timeout_ms())
        return

    generation = group.generation + 1
    if group.members:
        txn.emit(GenerationStarted(group.group_id, generation, group.select_protocol()))
        mutate.transition(txn, group, S.COMPLETING_REBALANCE)
    else:
        txn.emit(GenerationStarted(group.group_id, generation, None))
        mutate.transition(txn, group, S.EMPTY)
    mutate.set_pending_sync(txn, group, [])
    if group.in_state(S.EMPTY):
        return

    for member in group.all_members():
        mutate.complete_join_future(txn, group, member, group.join_response(member.member_id))
        reschedule_heartbeat(txn, group, member.member_id)
        current = group.member(member.member_id)
        if current.is_new:
            mutate.put_member(txn, group, replace(current, is_new=False))
    mutate.set_pending_sync(txn, group, group.order.order())
    txn.schedule(SyncTimer(group.group_id, group.generation), group.rebalance_timeout_ms())


def _maybe_elect_new_joined_leader(txn: Txn, group: GroupData) -> bool:
    """Keep the leader if it rejoined, else pick the first rejoined member; False if nobody rejoined."""
    if group.leader is None:
        return False
    if group.member(group.leader).awaiting_join is not None:
        return True
    for member in group.all_members():
        if member.awaiting_join is not None:
            mutate.set_leader(txn, group, member.member_id)
            return True
    return False


def _reset_and_propagate_assignment_with_error(txn: Txn, group: GroupData, error: ErrorCode) -> None:
    if not group.in_state(S.COMPLETING_REBALANCE):
        raise AssertionError(f"group {group.group_id} must be CompletingRebalance, is {group.state}")
    for member in group.all_members():
        if member.assignment:
            mutate.put_member(txn, group, replace(member, assignment=b""))
    _propagate_assignment(txn, group, error)


def set_and_propagate_assignment(txn: Txn, group: GroupData, assignment: dict[str, bytes]) -> None:
    if not group.in_state(S.COMPLETING_REBALANCE):
        raise AssertionError("the group must be CompletingRebalance to set and propagate an assignment")
    for member in group.all_members():
        new = assignment.get(member.member_id, b"")
        if member.assignment != new:
            mutate.put_member(txn, group, replace(member, assignment=new))
    _propagate_assignment(txn, group, ErrorCode.NONE)


def _propagate_assignment(txn: Txn, group: GroupData, error: ErrorCode) -> None:
    ok = error is ErrorCode.NONE
    for member in group.all_members():
        response = SyncGroupResponse(
            error_code=error,
            assignment=member.assignment,
            protocol_type=group.protocol_type if ok else None,
            protocol_name=group.protocol_name if ok else None,
        )
        if mutate.complete_sync_future(txn, group, member, response):
            # a session that expired while the member waited for the leader was ignored; restart it
            reschedule_heartbeat(txn, group, member.member_id)


def _remove_sync_expiration(txn: Txn, group: GroupData) -> None:
    if group.pending_sync:
        mutate.set_pending_sync(txn, group, [])
    txn.cancel(SyncTimer(group.group_id, group.generation))


def remove_pending_sync_member(txn: Txn, group: GroupData, member_id: str) -> None:
    if member_id in group.pending_sync:
        txn.emit(PendingSyncMemberRemoved(group.group_id, member_id))
    key = SyncTimer(group.group_id, group.generation)
    if group.in_state(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync:
        txn.cancel(key)


def expire_pending_sync(txn: Txn, group: GroupData, generation: int) -> None:
    """The sync deadline passed: members that never sent SyncGroup are removed and the group rebalances."""
    if generation != group.generation:
        return
    if not group.in_state(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
        return
    for member_id in [m for m in group.order.order() if m in group.pending_sync]:
        mutate.remove_member(txn, group, member_id)
        txn.cancel(HeartbeatTimer(group.group_id, member_id))
    prepare_rebalance(txn, group)


def _satisfied_heartbeat(member: ClassicGroupMember) -> bool:
    """A new member may expire even while waiting; others waiting in a rebalance count as alive."""
    if member.is_new:
        return False
    return member.awaiting_join is not None or member.awaiting_sync is not None


def expire_heartbeat(txn: Txn, group: GroupData, member_id: str) -> None:
    """A member's (or pending member's) session expired."""
    if group.in_state(S.DEAD):
        return
    if group.is_pending_member(member_id):
        txn.emit(PendingMemberRemoved(group.group_id, member_id))
        if group.in_state(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            complete_join(txn, group)
        return
    if not group.has_member(member_id):
        return
    member = group.member(member_id)
    if _satisfied_heartbeat(member):
        return
    remove_member_and_update_group(txn, group, member)


def remove_member_and_update_group(txn: Txn, group: GroupData, member: ClassicGroupMember) -> None:
    """Remove a failed member (its parked JoinGroup gets UNKNOWN_MEMBER_ID) and move the group on."""
    mutate.complete_join_future(
        txn,
        group,
        member,
        JoinGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID),
    )
    mutate.remove_member(txn, group, member.member_id)
    if group.in_state(S.STABLE, S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(txn, group)
    elif group.in_state(S.PREPARING_REBALANCE) and group.has_all_members_joined():
        complete_join(txn, group)
