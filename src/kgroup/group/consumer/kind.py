"""The consumer group kind (KIP-848): what it declares to the coordinator's router
(:class:`ConsumerGroups`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import get_args

from kgroup.group.classic.join import handle_join
from kgroup.group.classic.kind import ClassicGroups
from kgroup.group.consumer.classic_members import classic_heartbeat, classic_join, classic_leave, classic_sync
from kgroup.group.consumer.context import ConsumerContext
from kgroup.group.consumer.fencing import fence_member_on_timer
from kgroup.group.consumer.group import ConsumerGroupData, ConsumerGroupSnapshot
from kgroup.group.consumer.heartbeat import handle_consumer_heartbeat
from kgroup.group.consumer.requests import (
    delete_consumer_group,
    handle_consumer_describe,
    handle_consumer_offset_commit,
    handle_consumer_offset_fetch,
    handle_consumer_txn_offset_commit,
    restart_sessions,
)
from kgroup.group.consumer.steps import RegexResolution, finish_regex_resolution, start_regex_resolution
from kgroup.group.consumer.timers import (
    ClassicMemberJoinTimer,
    ClassicMemberSyncTimer,
    RebalanceTimer,
    RegexTimer,
    SessionTimer,
)
from kgroup.group.kind import GroupsById, Handler
from kgroup.group.metadata import EMPTY_IMAGE, MetadataImage
from kgroup.group.records import OffsetAndMetadata, OffsetCommitted, Record, TimerArmed, TimerDisarmed
from kgroup.group.records.consumer import ConsumerGroupMetadata, ConsumerGroupRecord, MemberAssignmentState
from kgroup.group.timers import TimerKey
from kgroup.group.txn import CoordinatorTask, Txn
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    Envelope,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["ConsumerGroups"]


class ConsumerGroups(GroupsById[ConsumerGroupData]):
    """Every consumer group of one coordinator, and what the kind serves. A classic group upgrades to
    a consumer group and back (:mod:`.migration`), so the kind reads and hands over the classic kind's
    groups; the classic kind knows nothing of this one."""

    name = "consumer"
    protocol_type = "consumer"
    #: its timer records too: the armed rebalance timers by member are an index its handlers read
    records: frozenset[type] = frozenset(
        {*get_args(ConsumerGroupRecord), OffsetCommitted, TimerArmed, TimerDisarmed}
    )
    timer_kinds: frozenset[type[TimerKey]] = frozenset(
        {SessionTimer, RebalanceTimer, ClassicMemberJoinTimer, ClassicMemberSyncTimer, RegexTimer}
    )
    task_types: frozenset[type] = frozenset({RegexResolution})

    def __init__(self, classic: ClassicGroups, owned_elsewhere: Callable[[str], bool] | None = None) -> None:
        self.classic = classic
        ctx = self.ctx = ConsumerContext(
            groups={}, classic=classic, image=EMPTY_IMAGE, last_image_with_new_topics=0, rebalance_timers={}
        )
        if owned_elsewhere is not None:
            ctx.owned_elsewhere = owned_elsewhere
        groups = self.groups = ctx.groups

        def with_requester(handle: Handler) -> Handler:
            def handler(txn: Txn, env: Envelope, req: object) -> None:
                txn.requester = (env.principal, env.client_host)
                handle(txn, env, req)

            return handler

        self.handlers: Mapping[type, Handler] = {
            ConsumerGroupHeartbeatRequest: with_requester(
                lambda txn, env, req: handle_consumer_heartbeat(txn, env, req, ctx)
            ),
            ConsumerGroupDescribeRequest: with_requester(
                lambda txn, env, req: handle_consumer_describe(txn, env, req, ctx)
            ),
        }
        self.owned_handlers: Mapping[type, Handler] = {
            OffsetCommitRequest: lambda txn, env, req: handle_consumer_offset_commit(
                txn, env, req, groups[req.group_id], ctx
            ),
            OffsetFetchRequest: lambda txn, env, req: handle_consumer_offset_fetch(
                txn, env, req, groups[req.group_id]
            ),
            TxnOffsetCommitRequest: lambda txn, env, req: handle_consumer_txn_offset_commit(
                txn, env, req, groups[req.group_id], ctx
            ),
            JoinGroupRequest: self._join,
            SyncGroupRequest: lambda txn, env, req: classic_sync(txn, env, req, groups[req.group_id], ctx),
            HeartbeatRequest: lambda txn, env, req: classic_heartbeat(txn, env, req, groups[req.group_id]),
            LeaveGroupRequest: lambda txn, env, req: classic_leave(txn, env, req, groups[req.group_id], ctx),
        }

    def _join(self, txn: Txn, env: Envelope, req: JoinGroupRequest) -> None:
        group = self.ctx.groups[req.group_id]
        if not group.is_empty():
            classic_join(txn, env, req, group, self.ctx)
            return
        # an empty consumer group becomes a classic group (its offsets stay)
        delete_consumer_group(txn, group, keep_offsets=True)
        handle_join(txn, self.classic.groups, env, req)

    # --- routing ------------------------------------------------------------------------------------

    def on_timer(self, txn: Txn, key: TimerKey) -> None:
        if isinstance(key, RegexTimer):
            start_regex_resolution(txn, self.ctx, key.group_id)
        else:
            fence_member_on_timer(txn, self.ctx, key)  # type: ignore[arg-type]

    def complete(self, txn: Txn, task: CoordinatorTask, outcome: object) -> None:
        if not isinstance(task, RegexResolution):
            raise KgroupError(f"task: {type(task).__name__} is not a task of consumer groups")
        finish_regex_resolution(txn, self.ctx, task, outcome)  # type: ignore[arg-type]

    def load(self, txn: Txn, group_id: str) -> None:
        """Every member's session restarts from now; a member revoking partitions gets its rebalance
        timeout again."""
        ctx = self.ctx
        group = ctx.groups[group_id]
        restart_sessions(txn, group)
        for member in group.members.values():
            if member.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
                key = ctx.rebalance_timers.get((group_id, member.member_id))
                if key is not None:
                    txn.cancel(key)
                txn.schedule(
                    RebalanceTimer(group_id, member.member_id, member.member_epoch),
                    member.rebalance_timeout_ms,
                )

    def delete_group(self, txn: Txn, group_id: str) -> ErrorCode:
        return delete_consumer_group(txn, self.ctx.groups[group_id])

    # --- state ---------------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        if isinstance(record, TimerArmed | TimerDisarmed):
            self._replay_timer(record)
        elif isinstance(record, OffsetCommitted):
            self.ctx.groups[record.group_id].apply(record)
        else:
            self._replay_consumer(record)  # type: ignore[arg-type]

    def _replay_timer(self, record: TimerArmed | TimerDisarmed) -> None:
        """The armed rebalance timers by member, an index the handlers read."""
        key = record.key
        if not isinstance(key, RebalanceTimer):
            return
        index = self.ctx.rebalance_timers
        member = (key.group_id, key.member_id)
        if isinstance(record, TimerArmed):
            index[member] = key
        elif index.get(member) == key:
            del index[member]

    def _replay_consumer(self, record: ConsumerGroupRecord) -> None:
        """``GroupMetadataManager.replay`` of a consumer-group record: a record with a value creates
        the group (an empty classic group with the same id becomes it, keeping its offsets); the
        group tombstone deletes it."""
        groups = self.ctx.groups
        group_id = record.group_id
        group = groups.get(group_id)
        if group is None:
            if record.value is None:
                return
            group = groups[group_id] = ConsumerGroupData(group_id)
            # an empty classic group becomes it, or a classic group upgraded (its members come in
            # the records that follow); its offsets stay
            classic = self.classic.groups.pop(group_id, None)
            if classic is not None:
                group.offsets.update(classic.offsets)
        if isinstance(record, ConsumerGroupMetadata) and record.value is None:
            if group.members or group.target_assignment:
                raise AssertionError(f"consumer group {group_id} deleted while it has members")
            del groups[group_id]
            # Kafka keeps offsets apart from groups: a classic group created next takes them over,
            # a GroupDeleted (DeleteGroups) drops them
            if group.offsets:
                self.classic.orphan_offsets[group_id] = group.offsets
            return
        group.apply(record)

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return MappingProxyType(self.ctx.groups[group_id].offsets)

    def set_metadata(self, image: MetadataImage) -> None:
        """Groups read ``image`` from now on; a group whose topics changed bumps its epoch at its next
        heartbeat."""
        ctx = self.ctx
        if any(name not in ctx.image.topics for name in image.topics):
            ctx.last_image_with_new_topics = image.version
        ctx.image = image

    # --- queries -------------------------------------------------------------------------------------

    def group(self, group_id: str) -> ConsumerGroupSnapshot:
        """A consumer group's state (:class:`UnknownGroupError` if there is none)."""
        return self._owned_group(group_id).snapshot()
