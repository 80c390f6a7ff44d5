"""The classic group coordinator of one broker: every group it owns, as a pure state machine.

``handle(now_ms, envelope)`` and ``on_timer(now_ms, key)`` return a :class:`CoordinatorResult`
(replies, timer effects, records); ``replay(record)`` is the only way state changes. The host keeps the
clock and the timer queue; ids come from the injected ``random.Random``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from random import Random
from types import MappingProxyType

from kgroup.group.classic.admin import delete_group, handle_describe, handle_list, not_described, unload
from kgroup.group.classic.group import GroupData, GroupSnapshot, GroupView
from kgroup.group.classic.join import handle_join
from kgroup.group.classic.membership import handle_heartbeat, handle_leave, handle_sync
from kgroup.group.classic.offsets import handle_offset_commit, handle_offset_fetch
from kgroup.group.classic.rebalance import (
    expire_heartbeat,
    expire_pending_sync,
    on_join_timer,
    reschedule_heartbeat,
)
from kgroup.group.config import CoordinatorConfig
from kgroup.group.consumer.classic_members import classic_heartbeat, classic_join, classic_leave, classic_sync
from kgroup.group.consumer.context import ConsumerContext, rebalance_key
from kgroup.group.consumer.fencing import fence_member_on_timer
from kgroup.group.consumer.group import ConsumerGroupData, ConsumerGroupSnapshot
from kgroup.group.consumer.heartbeat import handle_consumer_heartbeat
from kgroup.group.consumer.metadata import EMPTY_IMAGE, MetadataImage
from kgroup.group.consumer.requests import (
    delete_consumer_group,
    handle_consumer_describe,
    handle_consumer_offset_commit,
    handle_consumer_offset_fetch,
    listed_consumer_group,
    restart_sessions,
)
from kgroup.group.consumer.steps import RegexResolution, finish_regex_resolution, start_regex_resolution
from kgroup.group.records import (
    GroupCreated,
    GroupDeleted,
    GroupRestored,
    MemberState,
    OffsetAndMetadata,
    OffsetCommitted,
    Record,
    TimerArmed,
    TimerDisarmed,
)
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
)
from kgroup.group.timers import ScheduleTimer, TimerKey, heartbeat_key
from kgroup.group.txn import CoordinatorResult, CoordinatorTask, Txn
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["CoordinatorSnapshot", "GroupCoordinator", "UnknownGroupError"]

#: the records about timers and whole groups; every other record changes one existing group
_COORDINATOR_RECORDS = frozenset({TimerArmed, TimerDisarmed, GroupCreated, GroupDeleted, GroupRestored})
#: Kafka's consumer-group records (KIP-848), replayed as ``GroupMetadataManager.replay`` does
_CONSUMER_RECORDS = frozenset(
    {
        ConsumerGroupMetadata,
        ConsumerGroupMemberMetadata,
        ConsumerGroupTargetAssignmentMember,
        ConsumerGroupTargetAssignmentMetadata,
        ConsumerGroupCurrentMemberAssignment,
        ConsumerGroupRegularExpression,
    }
)
#: classic requests a consumer group id answers itself (the rest are offsets, describe and list)
_CLASSIC_MEMBERSHIP = (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest)


#: request type -> its handler (FindCoordinator is the host's to answer: the cluster knows the node)
_HANDLERS: dict[type, Callable[..., None]] = {
    JoinGroupRequest: handle_join,
    SyncGroupRequest: handle_sync,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave,
    OffsetCommitRequest: handle_offset_commit,
    OffsetFetchRequest: handle_offset_fetch,
    DescribeGroupsRequest: handle_describe,
    ListGroupsRequest: handle_list,
}


def _handler_of(body: object) -> Callable[..., None]:
    for request_type, handler in _HANDLERS.items():
        if isinstance(body, request_type):
            return handler
    raise KgroupError(
        f"envelope.body: {type(body).__name__} is not a group request; "
        "send one of the requests in kgroup.messages"
    )


class UnknownGroupError(KgroupError, KeyError):
    """The coordinator has no such group: a :class:`KgroupError` that ``except KeyError`` also catches."""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class CoordinatorSnapshot:
    """All of a coordinator's state as one comparable value (groups by id, then armed timers)."""

    groups: tuple[GroupSnapshot, ...]
    timers: tuple[tuple[TimerKey, int], ...]
    consumer_groups: tuple[ConsumerGroupSnapshot, ...] = ()


class GroupCoordinator:
    """All the classic groups of one coordinator (one broker)."""

    def __init__(
        self,
        config: CoordinatorConfig = CoordinatorConfig(),  # noqa: B008 - frozen, so sharing is safe
        *,
        rng: Random,
    ) -> None:
        self.config = config
        self._rng = rng
        self._groups: dict[str, GroupData] = {}
        self._armed: dict[TimerKey, int] = {}
        #: offsets of a consumer group deleted to become a classic group, until that group is created
        self._orphan_offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self._consumer = ConsumerContext(
            groups={}, image=EMPTY_IMAGE, last_image_with_new_topics=0, rebalance_timers={}
        )
        self._last_txn: Txn | None = None

    # --- driving it -----------------------------------------------------------------------------

    def _txn(self, now_ms: int) -> Txn:
        txn = self._last_txn = Txn(
            now_ms=now_ms,
            config=self.config,
            rng=self._rng,
            groups=self._groups,
            armed=self._armed,
            replay=self.replay,
        )
        return txn

    def failed_call_applied(self) -> bool:
        """After a call raised: whether it had applied records before it did (records replay as they
        are emitted on the classic path), so the host must rebuild from its log to undo them."""
        txn = self._last_txn
        return txn is not None and bool(txn.records)

    def handle(self, now_ms: int, envelope: Envelope) -> CoordinatorResult:
        """Process one request; its answer is in ``replies`` unless the request is parked."""
        body = envelope.body
        consumer = self._consumer
        if isinstance(body, ConsumerGroupHeartbeatRequest | ConsumerGroupDescribeRequest):
            txn = self._txn(now_ms)
            txn.requester = (envelope.principal, envelope.client_host)
            if isinstance(body, ConsumerGroupHeartbeatRequest):
                handle_consumer_heartbeat(txn, envelope, body, consumer)
            else:
                handle_consumer_describe(txn, envelope, body, consumer)
            return txn.result()
        consumer_group = consumer.groups.get(getattr(body, "group_id", None)) if consumer.groups else None  # type: ignore[arg-type]
        if consumer_group is not None:
            txn = self._txn(now_ms)
            if isinstance(body, OffsetCommitRequest):
                handle_consumer_offset_commit(txn, envelope, body, consumer_group, consumer)
            elif isinstance(body, OffsetFetchRequest):
                handle_consumer_offset_fetch(txn, envelope, body, consumer_group)
            elif isinstance(body, JoinGroupRequest):
                if not consumer_group.is_empty():
                    classic_join(txn, envelope, body, consumer_group, consumer)
                    return txn.result()
                # an empty consumer group becomes a classic group (its offsets stay)
                delete_consumer_group(txn, consumer_group, keep_offsets=True)
                handle_join(txn, envelope, body)
            elif isinstance(body, SyncGroupRequest):
                classic_sync(txn, envelope, body, consumer_group, consumer)
            elif isinstance(body, HeartbeatRequest):
                classic_heartbeat(txn, envelope, body, consumer_group)
            elif isinstance(body, LeaveGroupRequest):
                classic_leave(txn, envelope, body, consumer_group, consumer)
            else:
                raise AssertionError(f"{type(body).__name__} is not answered by a consumer group")
            return txn.result()
        handler = _HANDLERS.get(type(body))
        if handler is None:
            handler = _handler_of(body)  # a subclass of a request type
        txn = self._txn(now_ms)
        handler(txn, envelope, body)
        if isinstance(body, ListGroupsRequest) and (consumer.groups or body.types_filter):
            return self._with_consumer_groups(txn.result(), body)
        if isinstance(body, DescribeGroupsRequest) and consumer.groups:
            return self._not_classic(txn.result(), envelope.api_version)
        return txn.result()

    def _not_classic(self, result: CoordinatorResult, api_version: int) -> CoordinatorResult:
        """DescribeGroups describes classic groups only: a consumer group is one it cannot describe
        (``GroupMetadataManager.classicGroup``: "Group g is not a classic group.")."""
        (reply,) = result.replies
        answer = reply.body
        assert isinstance(answer, DescribeGroupsResponse)
        groups = self._consumer.groups
        described = tuple(
            not_described(g.group_id, api_version, f"Group {g.group_id} is not a classic group.")
            if g.group_id in groups
            else g
            for g in answer.groups
        )
        body = DescribeGroupsResponse(described)
        return CoordinatorResult(
            (type(reply)(reply.connection, reply.correlation_id, body),), result.timers, result.records
        )

    def _with_consumer_groups(self, result: CoordinatorResult, req: ListGroupsRequest) -> CoordinatorResult:
        """ListGroups: the classic answer, then the consumer groups (filtered by state and type)."""
        (reply,) = result.replies
        answer = reply.body
        assert isinstance(answer, ListGroupsResponse)
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        classic = answer.groups if not types or "classic" in types else ()
        listed = [
            listed_consumer_group(g)
            for g in self._consumer.groups.values()
            if (not states or g.state.kafka_name.lower() in states) and (not types or "consumer" in types)
        ]
        body = ListGroupsResponse(
            answer.error_code, tuple(sorted((*classic, *listed), key=lambda g: g.group_id))
        )
        return CoordinatorResult(
            (type(reply)(reply.connection, reply.correlation_id, body),), result.timers, result.records
        )

    # --- consumer groups (KIP-848) ---------------------------------------------------------------------

    def set_metadata(self, image: MetadataImage) -> None:
        """The cluster's topics changed (Kafka's ``onMetadataUpdate``): consumer groups read ``image``
        from now on; a group whose topics changed bumps its epoch at its next heartbeat."""
        consumer = self._consumer
        if any(name not in consumer.image.topics for name in image.topics):
            consumer.last_image_with_new_topics = image.version
        consumer.image = image

    @property
    def metadata(self) -> MetadataImage:
        return self._consumer.image

    def consumer_group(self, group_id: str) -> ConsumerGroupSnapshot:
        """A consumer group's state (:class:`UnknownGroupError` if there is none)."""
        group = self._consumer.groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no consumer group {group_id!r} on this coordinator")
        return group.snapshot()

    def consumer_group_ids(self) -> list[str]:
        return sorted(self._consumer.groups)

    def on_timer(self, now_ms: int, key: TimerKey) -> CoordinatorResult:
        """A scheduled deadline passed. Keys not armed (cancelled, replaced, stale) do nothing."""
        deadline = self._armed.get(key)
        if deadline is None or deadline > now_ms:
            return CoordinatorResult()
        txn = self._txn(now_ms)
        txn.emit(TimerDisarmed(key))
        kind, group_id = key[0], key[1]
        if kind.startswith("consumer-"):
            if kind == "consumer-regex":
                start_regex_resolution(txn, self._consumer, group_id)
            else:
                fence_member_on_timer(txn, self._consumer, key)
            return txn.result()
        group = self._groups.get(group_id)
        if group is not None:
            if kind == "heartbeat":
                expire_heartbeat(txn, group, key[2])
            elif kind == "join":
                on_join_timer(txn, group)
            elif kind == "sync":
                expire_pending_sync(txn, group, int(key[2]))
        return txn.result()

    def complete(self, now_ms: int, task: CoordinatorTask, outcome: object) -> CoordinatorResult:
        """A task of an earlier result ran; ``outcome`` is what its ``run()`` returned."""
        txn = self._txn(now_ms)
        if isinstance(task, RegexResolution):
            finish_regex_resolution(txn, self._consumer, task, outcome)  # type: ignore[arg-type]
        else:
            raise KgroupError(f"task: {type(task).__name__} is not a task of this coordinator")
        return txn.result()

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, CoordinatorResult]:
        """DeleteGroups for one group (only Empty groups; NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND otherwise)."""
        txn = self._txn(now_ms)
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:
            return delete_consumer_group(txn, consumer_group), txn.result()
        error = delete_group(txn, group_id)
        return error, txn.result()

    def unload(self, now_ms: int) -> CoordinatorResult:
        """Lose coordinatorship: every group goes Dead, parked requests get NOT_COORDINATOR."""
        txn = self._txn(now_ms)
        unload(txn)
        return txn.result()

    def load(self, now_ms: int, group_ids: Iterable[str]) -> CoordinatorResult:
        """This coordinator has just taken over ``group_ids`` (a failover, or a start on old data):
        every member's session starts again from ``now_ms``, as Kafka's ``GroupMetadataManager.onLoaded``
        reschedules each loaded classic member's heartbeat (``rescheduleClassicGroupMemberHeartbeat``)
        — a member is not expired for the time its group had no coordinator. Only sessions that are
        armed are restarted."""
        txn = self._txn(now_ms)
        for group_id in group_ids:
            consumer_group = self._consumer.groups.get(group_id)
            if consumer_group is not None:
                restart_sessions(txn, consumer_group)
                for consumer_member in consumer_group.members.values():
                    if consumer_member.state is MemberAssignmentState.UNREVOKED_PARTITIONS:
                        key = self._consumer.rebalance_timers.get((group_id, consumer_member.member_id))
                        if key is not None:
                            txn.cancel(key)
                        txn.schedule(
                            rebalance_key(group_id, consumer_member.member_id, consumer_member.member_epoch),
                            consumer_member.rebalance_timeout_ms,
                        )
                continue
            group = self._groups.get(group_id)
            if group is None:
                continue
            for member in group.all_members():
                if heartbeat_key(group_id, member.member_id) in self._armed:
                    reschedule_heartbeat(txn, group, member.member_id)
        return txn.result()

    def armed_timers(self) -> tuple[ScheduleTimer, ...]:
        """Every timer the coordinator expects, e.g. to re-arm a host's queue after a rebuild by replay."""
        return tuple(ScheduleTimer(key, deadline) for key, deadline in self._armed.items())

    # --- state ------------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """Apply one record: the only way the coordinator's state changes."""
        kind = type(record)
        if kind in _CONSUMER_RECORDS:
            self._replay_consumer(record)  # type: ignore[arg-type]
        elif kind not in _COORDINATOR_RECORDS:
            group_id = record.group_id  # type: ignore[union-attr]
            consumer_group = self._consumer.groups.get(group_id) if self._consumer.groups else None
            if consumer_group is not None:
                consumer_group.apply(record)  # type: ignore[arg-type]
            else:
                self._groups[group_id].apply(record)  # type: ignore[arg-type]
        elif isinstance(record, TimerArmed):
            self._armed[record.key] = record.deadline_ms
            if record.key[0] == "consumer-rebalance":
                self._consumer.rebalance_timers[(record.key[1], record.key[2])] = record.key
        elif isinstance(record, TimerDisarmed):
            self._armed.pop(record.key, None)
            if record.key[0] == "consumer-rebalance":
                index = self._consumer.rebalance_timers
                if index.get((record.key[1], record.key[2])) == record.key:
                    del index[(record.key[1], record.key[2])]
        elif isinstance(record, GroupCreated):
            if record.group_id in self._groups:
                raise AssertionError(f"group {record.group_id} created twice")
            created = GroupData(record.group_id, state_timestamp_ms=record.timestamp_ms)
            self._groups[record.group_id] = created
            if self._orphan_offsets:
                created.offsets.update(self._orphan_offsets.pop(record.group_id, {}))
        elif isinstance(record, GroupDeleted):
            self._groups.pop(record.group_id, None)
            self._orphan_offsets.pop(record.group_id, None)
        elif isinstance(record, GroupRestored):
            if record.group_id in self._groups:
                raise AssertionError(f"group {record.group_id} restored over an existing one")
            restored = self._groups[record.group_id] = GroupData.from_restored(record)
            if self._orphan_offsets:  # a consumer group downgraded to this classic group
                restored.offsets.update(self._orphan_offsets.pop(record.group_id, {}))

    def _replay_consumer(self, record: ConsumerGroupRecord) -> None:
        """``GroupMetadataManager.replay`` of a consumer-group record: a record with a value creates
        the group (an empty classic group with the same id becomes it, keeping its offsets); the
        group tombstone deletes it."""
        groups = self._consumer.groups
        group_id = record.group_id
        group = groups.get(group_id)
        if group is None:
            if record.value is None:
                return
            group = groups[group_id] = ConsumerGroupData(group_id)
            # an empty classic group becomes it, or a classic group upgraded (its members come in
            # the records that follow); its offsets stay
            classic = self._groups.pop(group_id, None)
            if classic is not None:
                group.offsets.update(classic.offsets)
        if isinstance(record, ConsumerGroupMetadata) and record.value is None:
            if group.members or group.target_assignment:
                raise AssertionError(f"consumer group {group_id} deleted while it has members")
            del groups[group_id]
            # Kafka keeps offsets apart from groups: a classic group created next takes them over,
            # a GroupDeleted (DeleteGroups) drops them
            if group.offsets:
                self._orphan_offsets[group_id] = group.offsets
            return
        group.apply(record)

    def checkpoint(self) -> Iterator[Record]:
        """Records that rebuild this coordinator's state exactly when replayed into an empty one: per
        group a :class:`GroupRestored` and its offsets, then the armed timers (in arming order). A
        host compacts its log with them: the records written after the checkpoint replay onto its
        state as they did onto the original's."""
        for group in self._groups.values():
            yield group.restored_record()
            group_id = group.group_id
            for partition, value in group.offsets.items():
                yield OffsetCommitted(group_id, partition, value)
        for consumer_group in self._consumer.groups.values():
            yield from consumer_group.checkpoint_records()
        for key, deadline in self._armed.items():
            yield TimerArmed(key, deadline)

    def group(self, group_id: str) -> GroupView:
        """A read-only view of one group (:class:`UnknownGroupError` if the coordinator has none)."""
        group = self._groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no group {group_id!r} on this coordinator; join it first")
        return group.view()

    def group_members(self, group_id: str) -> tuple[MemberState, ...]:
        """The members of one group in Kafka's iteration order (what :meth:`group` lists, without
        building the rest of the view); :class:`UnknownGroupError` if the coordinator has no such group."""
        group = self._groups.get(group_id)
        if group is None:
            raise UnknownGroupError(f"group_id: no group {group_id!r} on this coordinator; join it first")
        return tuple(group.all_members())

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """The offsets committed in one group (a read-only view; empty if there is no such group)."""
        group = self._groups.get(group_id) or self._consumer.groups.get(group_id)
        return MappingProxyType(group.offsets) if group is not None else MappingProxyType({})

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups or group_id in self._consumer.groups

    def group_ids(self) -> list[str]:
        """Every group's id, classic and consumer."""
        return sorted((*self._groups, *self._consumer.groups))

    def snapshot(self) -> CoordinatorSnapshot:
        consumer_groups = self._consumer.groups
        return CoordinatorSnapshot(
            groups=tuple(self._groups[g].snapshot() for g in sorted(self._groups)),
            timers=tuple(sorted(self._armed.items())),
            consumer_groups=tuple(consumer_groups[g].snapshot() for g in sorted(consumer_groups)),
        )
