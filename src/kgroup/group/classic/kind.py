"""The classic group kind: what it declares to the coordinator's router (:class:`ClassicGroups`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, get_args

from kgroup.group.classic.admin import delete_group, described, listed, unload
from kgroup.group.classic.group import GroupData, GroupView
from kgroup.group.classic.join import handle_join
from kgroup.group.classic.membership import handle_heartbeat, handle_leave, handle_sync
from kgroup.group.classic.offsets import handle_offset_commit, handle_offset_fetch, handle_txn_offset_commit
from kgroup.group.classic.rebalance import (
    expire_heartbeat,
    expire_pending_sync,
    on_join_timer,
    reschedule_heartbeat,
)
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer, SyncTimer
from kgroup.group.kind import Handler, UnknownGroupError
from kgroup.group.metadata import MetadataImage
from kgroup.group.records import (
    ClassicGroupMember,
    GroupCreated,
    GroupDeleted,
    GroupRecord,
    GroupRestored,
    OffsetAndMetadata,
    OffsetCommitted,
    Record,
)
from kgroup.group.timers import TimerKey
from kgroup.group.txn import CoordinatorTask, Txn
from kgroup.messages import (
    DescribedGroup,
    Envelope,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListedGroup,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["HANDLERS", "ClassicGroups"]


#: a classic handler: the operation, the classic groups, the request
_ClassicHandler = Callable[[Txn, dict[str, GroupData], Envelope, Any], None]


#: request type -> the classic handler that answers it (read at each call, so a test may replace one)
HANDLERS: dict[type, _ClassicHandler] = {
    JoinGroupRequest: handle_join,
    SyncGroupRequest: handle_sync,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave,
    OffsetCommitRequest: handle_offset_commit,
    OffsetFetchRequest: handle_offset_fetch,
    TxnOffsetCommitRequest: handle_txn_offset_commit,
}


class ClassicGroups:
    """Every classic group of one coordinator, and what the kind serves."""

    name = "classic"
    records: frozenset[type] = frozenset({GroupCreated, GroupDeleted, GroupRestored, *get_args(GroupRecord)})
    timer_kinds: frozenset[type[TimerKey]] = frozenset({HeartbeatTimer, JoinTimer, SyncTimer})
    task_types: frozenset[type] = frozenset()
    owned_handlers: Mapping[type, Handler] = MappingProxyType({})

    def __init__(self) -> None:
        self.groups: dict[str, GroupData] = {}
        #: offsets of a group of another kind deleted to become a classic group, until it is created
        self.orphan_offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        groups = self.groups

        def bound(request_type: type) -> Handler:
            return lambda txn, env, req: HANDLERS[request_type](txn, groups, env, req)

        self.handlers: Mapping[type, Handler] = {
            request_type: bound(request_type) for request_type in HANDLERS
        }

    # --- routing ------------------------------------------------------------------------------------

    def owns(self, group_id: str) -> bool:
        return group_id in self.groups

    def group_ids(self) -> Iterable[str]:
        return self.groups

    def on_timer(self, txn: Txn, key: TimerKey) -> None:
        group = self.groups.get(key.group_id)
        if group is None:
            return
        if isinstance(key, HeartbeatTimer):
            expire_heartbeat(txn, group, key.member_id)
        elif isinstance(key, JoinTimer):
            on_join_timer(txn, group)
        elif isinstance(key, SyncTimer):
            expire_pending_sync(txn, group, key.generation)

    def complete(self, txn: Txn, task: CoordinatorTask, outcome: object) -> None:
        raise KgroupError(f"task: {type(task).__name__} is not a task of classic groups")

    def load(self, txn: Txn, group_id: str) -> None:
        """Kafka's ``GroupMetadataManager.onLoaded`` reschedules each loaded classic member's heartbeat
        (``rescheduleClassicGroupMemberHeartbeat``); only sessions that are armed are restarted."""
        group = self.groups[group_id]
        for member in group.all_members():
            if HeartbeatTimer(group_id, member.member_id) in txn.armed:
                reschedule_heartbeat(txn, group, member.member_id)

    def unload(self, txn: Txn) -> None:
        unload(txn, self.groups)

    def delete_group(self, txn: Txn, group_id: str) -> ErrorCode:
        return delete_group(txn, self.groups, group_id)

    # --- state ---------------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        if isinstance(record, GroupCreated):
            if record.group_id in self.groups:
                raise AssertionError(f"group {record.group_id} created twice")
            created = self.groups[record.group_id] = GroupData(
                record.group_id, state_timestamp_ms=record.timestamp_ms
            )
            if self.orphan_offsets:
                created.offsets.update(self.orphan_offsets.pop(record.group_id, {}))
        elif isinstance(record, GroupDeleted):
            self.groups.pop(record.group_id, None)
            self.orphan_offsets.pop(record.group_id, None)
        elif isinstance(record, GroupRestored):
            if record.group_id in self.groups:
                raise AssertionError(f"group {record.group_id} restored over an existing one")
            restored = self.groups[record.group_id] = GroupData.from_restored(record)
            if self.orphan_offsets:  # a group of another kind downgraded to this classic group
                restored.offsets.update(self.orphan_offsets.pop(record.group_id, {}))
        else:
            self.groups[record.group_id].apply(record)  # type: ignore[arg-type]

    def checkpoint(self) -> Iterator[Record]:
        """Per group a :class:`GroupRestored` and its offsets."""
        for group in self.groups.values():
            yield group.restored_record()
            group_id = group.group_id
            for partition, value in group.offsets.items():
                yield OffsetCommitted(group_id, partition, value)

    def snapshot(self) -> tuple[object, ...]:
        groups = self.groups
        return tuple(groups[g].snapshot() for g in sorted(groups))

    def listed(self, states: set[str]) -> Iterable[ListedGroup]:
        return listed(self.groups, states)

    def described(self, group_id: str, api_version: int) -> DescribedGroup:
        return described(self.groups[group_id])

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return MappingProxyType(self.groups[group_id].offsets)

    def set_metadata(self, image: MetadataImage) -> None:
        """Classic groups read no topic metadata."""

    # --- queries -------------------------------------------------------------------------------------

    def group(self, group_id: str) -> GroupView:
        """A read-only view of one group (:class:`UnknownGroupError` if there is none)."""
        group = self.groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no group {group_id!r} on this coordinator; join it first")
        return group.view()

    def members(self, group_id: str) -> tuple[ClassicGroupMember, ...]:
        """The members of one group in Kafka's iteration order (what :meth:`group` lists, without
        building the rest of the view); :class:`UnknownGroupError` if there is no such group."""
        group = self.groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no group {group_id!r} on this coordinator; join it first")
        return tuple(group.all_members())
