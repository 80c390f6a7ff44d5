"""The classic group's mutators: ``ClassicGroup``'s mutating methods (``add``, ``remove``,
``transitionTo``, ``completeJoinFuture`` …) as records.

None touches state: each emits a record through the operation's :class:`~kgroup.group.txn.Txn`, and
the coordinator's ``replay`` applies it before the handler reads the group again.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgroup.group.classic.group import GroupData
from kgroup.group.records import (
    ClassicGroupMember,
    GroupLeaderChanged,
    GroupProtocolTypeChanged,
    GroupStateChanged,
    MemberRemoved,
    MemberUpserted,
    Parked,
    PendingSyncMembersSet,
)
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.messages import JoinGroupResponse, Response, SyncGroupResponse
from kgroup.valuetypes import replace

__all__ = [
    "add_member",
    "complete_join_future",
    "complete_sync_future",
    "put_member",
    "remove_member",
    "set_leader",
    "set_pending_sync",
    "transition",
]


def transition(txn: Txn, group: GroupData, state: GroupState) -> None:
    txn.emit(GroupStateChanged(group.group_id, state, txn.now_ms))


def put_member(txn: Txn, group: GroupData, member: ClassicGroupMember) -> None:
    txn.emit(MemberUpserted(group.group_id, member))


def add_member(txn: Txn, group: GroupData, member: ClassicGroupMember) -> None:
    """``ClassicGroup.add``: the first member sets the protocol type, the first with no leader leads."""
    if member.group_instance_id is not None and member.group_instance_id in group.static_members:
        raise AssertionError(f"static member {member.group_instance_id} is already in {group.group_id}")
    if not group.members:
        txn.emit(GroupProtocolTypeChanged(group.group_id, member.protocol_type))
    if group.protocol_type != member.protocol_type:
        raise AssertionError("the group and member's protocol type must be the same")
    if group.leader is None:
        txn.emit(GroupLeaderChanged(group.group_id, member.member_id))
    put_member(txn, group, member)


def remove_member(txn: Txn, group: GroupData, member_id: str) -> None:
    """``ClassicGroup.remove``: a removed leader is replaced by the first member in map order."""
    txn.emit(MemberRemoved(group.group_id, member_id))
    if group.is_leader(member_id):
        remaining = group.order.order()
        txn.emit(GroupLeaderChanged(group.group_id, remaining[0] if remaining else None))


def set_leader(txn: Txn, group: GroupData, leader: str | None) -> None:
    txn.emit(GroupLeaderChanged(group.group_id, leader))


def _answer_parked(
    txn: Txn, group: GroupData, parked: Parked | None, unparked: ClassicGroupMember, response: Response
) -> bool:
    """Answer ``parked`` (if there is one) with ``response``, its member now ``unparked``."""
    if parked is None:
        return False
    put_member(txn, group, unparked)
    txn.answer(parked, response)
    return True


def complete_join_future(
    txn: Txn, group: GroupData, member: ClassicGroupMember, response: JoinGroupResponse
) -> bool:
    """Answer the member's parked JoinGroup, if any (``completeJoinFuture``)."""
    current = group.members[member.member_id]
    return _answer_parked(txn, group, current.awaiting_join, replace(current, awaiting_join=None), response)


def complete_sync_future(
    txn: Txn, group: GroupData, member: ClassicGroupMember, response: SyncGroupResponse
) -> bool:
    """Answer the member's parked SyncGroup, if any (``completeSyncFuture``)."""
    current = group.members[member.member_id]
    return _answer_parked(txn, group, current.awaiting_sync, replace(current, awaiting_sync=None), response)


def set_pending_sync(txn: Txn, group: GroupData, member_ids: Sequence[str]) -> None:
    txn.emit(PendingSyncMembersSet(group.group_id, tuple(member_ids)))
