"""The share group kind (KIP-932): what it declares to the coordinator's router (:class:`ShareGroups`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import get_args

from kgroup.group.kind import GroupsById, Handler
from kgroup.group.metadata import EMPTY_IMAGE, MetadataImage
from kgroup.group.records import OffsetAndMetadata, Record
from kgroup.group.records.share import ShareGroupMetadata, ShareGroupRecord
from kgroup.group.share.group import ShareGroupData
from kgroup.group.share.heartbeat import (
    InitializeShareState,
    ShareContext,
    fence_on_timer,
    finish_initialize,
    handle_share_heartbeat,
)
from kgroup.group.share.offsets import (
    AlterShareOffsets,
    DeleteShareOffsets,
    ShareInitializedPartitions,
    ShareOffsetsDeleted,
    ShareOffsetsInitialized,
    handle_alter_share_offsets,
    handle_delete_share_offsets,
    handle_initialized_partitions,
    handle_share_offsets_deleted,
    handle_share_offsets_initialized,
)
from kgroup.group.share.requests import (
    SHARE_PROTOCOL_TYPE,
    delete_share_group,
    handle_share_describe,
    restart_sessions,
)
from kgroup.group.share.timers import ShareSessionTimer
from kgroup.group.timers import TimerKey
from kgroup.group.txn import CoordinatorTask, Txn
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["ShareGroups"]

_NO_OFFSETS: Mapping[TopicPartition, OffsetAndMetadata] = MappingProxyType({})


class ShareGroups(GroupsById[ShareGroupData]):
    """Every share group of one coordinator. ``owned_elsewhere`` says whether another kind has a group
    id (its share heartbeats and describes are answered ``Group … is not a share group.``)."""

    name = "share"
    protocol_type = SHARE_PROTOCOL_TYPE
    records: frozenset[type] = frozenset(get_args(ShareGroupRecord))
    timer_kinds: frozenset[type[TimerKey]] = frozenset({ShareSessionTimer})
    task_types: frozenset[type] = frozenset({InitializeShareState})

    def __init__(self, owned_elsewhere: Callable[[str], bool]) -> None:
        ctx = self.ctx = ShareContext(groups={}, image=EMPTY_IMAGE, owned_elsewhere=owned_elsewhere)
        self.groups = ctx.groups
        self.handlers: Mapping[type, Handler] = {
            ShareGroupHeartbeatRequest: lambda txn, env, req: handle_share_heartbeat(txn, env, req, ctx),
            ShareGroupDescribeRequest: lambda txn, env, req: handle_share_describe(txn, env, req, ctx),
            # Alter/Delete/DescribeShareGroupOffsets' coordinator parts (kgroup.group.share.offsets)
            AlterShareOffsets: lambda txn, env, req: handle_alter_share_offsets(txn, env, req, ctx),
            ShareOffsetsInitialized: lambda txn, env, req: handle_share_offsets_initialized(
                txn, env, req, ctx
            ),
            DeleteShareOffsets: lambda txn, env, req: handle_delete_share_offsets(txn, env, req, ctx),
            ShareOffsetsDeleted: lambda txn, env, req: handle_share_offsets_deleted(txn, env, req, ctx),
            ShareInitializedPartitions: lambda txn, env, req: handle_initialized_partitions(
                txn, env, req, ctx
            ),
        }
        # a share group's id in the other kinds' requests, as Kafka answers them (the other kinds
        # would create a group of their own; SyncGroup, Heartbeat, LeaveGroup and OffsetFetch already
        # answer as Kafka does: no such member, no offsets)
        self.owned_handlers: Mapping[type, Handler] = {
            JoinGroupRequest: lambda txn, env, req: txn.reply(
                env.connection, env.correlation_id, JoinGroupResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            ),
            ConsumerGroupHeartbeatRequest: lambda txn, env, req: txn.reply(
                env.connection,
                env.correlation_id,
                ConsumerGroupHeartbeatResponse(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group."
                ),
            ),
            OffsetCommitRequest: lambda txn, env, req: txn.reply(
                env.connection,
                env.correlation_id,
                OffsetCommitResponse(tuple((p.partition, ErrorCode.GROUP_ID_NOT_FOUND) for p in req.offsets)),
            ),
            # ShareGroup.validateOffsetCommit: "Group … is not a consumer group." at every version
            TxnOffsetCommitRequest: lambda txn, env, req: txn.reply(
                env.connection,
                env.correlation_id,
                TxnOffsetCommitResponse(
                    tuple((p.partition, ErrorCode.GROUP_ID_NOT_FOUND) for p in req.offsets)
                ),
            ),
        }

    # --- routing ------------------------------------------------------------------------------------

    def on_timer(self, txn: Txn, key: TimerKey) -> None:
        fence_on_timer(txn, self.ctx, key)  # type: ignore[arg-type]

    def complete(self, txn: Txn, task: CoordinatorTask, outcome: object) -> None:
        if not isinstance(task, InitializeShareState):
            raise KgroupError(f"task: {type(task).__name__} is not a task of share groups")
        finish_initialize(txn, self.ctx, task, outcome)

    def load(self, txn: Txn, group_id: str) -> None:
        """Every member's session restarts from now."""
        restart_sessions(txn, self.ctx.groups[group_id])

    def delete_group(self, txn: Txn, group_id: str) -> ErrorCode:
        return delete_share_group(txn, self.ctx.groups[group_id])

    # --- state ---------------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """``GroupMetadataManager.replay`` of a share-group record: a record with a value creates the
        group; the group tombstone deletes it."""
        groups = self.ctx.groups
        group_id = record.group_id
        group = groups.get(group_id)
        if group is None:
            if getattr(record, "value", None) is None:
                return
            group = groups[group_id] = ShareGroupData(group_id)
        if isinstance(record, ShareGroupMetadata) and record.value is None:
            if group.members:
                raise AssertionError(f"share group {group_id} deleted while it has members")
            del groups[group_id]
            return
        group.apply(record)  # type: ignore[arg-type]

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """A share group commits no offsets to ``__consumer_offsets`` (its state is the share
        partitions')."""
        return _NO_OFFSETS

    def set_metadata(self, image: MetadataImage) -> None:
        self.ctx.image = image

    # --- queries -------------------------------------------------------------------------------------

    def group(self, group_id: str) -> ShareGroupData:
        """A share group's state (:class:`UnknownGroupError` if there is none); read it, never change it."""
        return self._owned_group(group_id)
