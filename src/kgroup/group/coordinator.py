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

from kgroup.group.admin import delete_group, handle_describe, handle_find_coordinator, handle_list, unload
from kgroup.group.config import CoordinatorConfig
from kgroup.group.group import GroupData, GroupSnapshot, GroupView
from kgroup.group.join import handle_join
from kgroup.group.membership import handle_heartbeat, handle_leave, handle_sync
from kgroup.group.offsets import handle_offset_commit, handle_offset_fetch
from kgroup.group.rebalance import expire_heartbeat, expire_pending_sync, on_join_timer, reschedule_heartbeat
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
from kgroup.group.timers import ScheduleTimer, TimerKey, heartbeat_key
from kgroup.group.txn import CoordinatorResult, Txn
from kgroup.messages import (
    DescribeGroupsRequest,
    Envelope,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["CoordinatorSnapshot", "GroupCoordinator", "UnknownGroupError"]

#: the records about timers and whole groups; every other record changes one existing group
_COORDINATOR_RECORDS = frozenset({TimerArmed, TimerDisarmed, GroupCreated, GroupDeleted, GroupRestored})


#: request type -> its handler (``handle_find_coordinator`` also takes the coordinator's node)
_HANDLERS: dict[type, Callable[..., None]] = {
    JoinGroupRequest: handle_join,
    SyncGroupRequest: handle_sync,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave,
    OffsetCommitRequest: handle_offset_commit,
    OffsetFetchRequest: handle_offset_fetch,
    DescribeGroupsRequest: handle_describe,
    ListGroupsRequest: handle_list,
    FindCoordinatorRequest: handle_find_coordinator,
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


class GroupCoordinator:
    """All the classic groups of one coordinator (one broker)."""

    def __init__(
        self,
        config: CoordinatorConfig = CoordinatorConfig(),  # noqa: B008 - frozen, so sharing is safe
        *,
        rng: Random,
        node_id: int = 0,
        host: str = "127.0.0.1",
        port: int = 9092,
    ) -> None:
        self.config = config
        self._rng = rng
        self.node = (node_id, host, port)
        self._groups: dict[str, GroupData] = {}
        self._armed: dict[TimerKey, int] = {}

    # --- driving it -----------------------------------------------------------------------------

    def _txn(self, now_ms: int) -> Txn:
        return Txn(
            now_ms=now_ms,
            config=self.config,
            rng=self._rng,
            groups=self._groups,
            armed=self._armed,
            replay=self.replay,
        )

    def handle(self, now_ms: int, envelope: Envelope) -> CoordinatorResult:
        """Process one request; its answer is in ``replies`` unless the request is parked."""
        body = envelope.body
        handler = _HANDLERS.get(type(body))
        if handler is None:
            handler = _handler_of(body)  # a subclass of a request type
        txn = self._txn(now_ms)
        if handler is handle_find_coordinator:
            handle_find_coordinator(txn, envelope, body, self.node)  # type: ignore[arg-type]
        else:
            handler(txn, envelope, body)
        return txn.result()

    def on_timer(self, now_ms: int, key: TimerKey) -> CoordinatorResult:
        """A scheduled deadline passed. Keys not armed (cancelled, replaced, stale) do nothing."""
        deadline = self._armed.get(key)
        if deadline is None or deadline > now_ms:
            return CoordinatorResult()
        txn = self._txn(now_ms)
        txn.emit(TimerDisarmed(key))
        kind, group_id = key[0], key[1]
        group = self._groups.get(group_id)
        if group is not None:
            if kind == "heartbeat":
                expire_heartbeat(txn, group, key[2])
            elif kind == "join":
                on_join_timer(txn, group)
            elif kind == "sync":
                expire_pending_sync(txn, group, int(key[2]))
        return txn.result()

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, CoordinatorResult]:
        """DeleteGroups for one group (only Empty groups; NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND otherwise)."""
        txn = self._txn(now_ms)
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
        if type(record) not in _COORDINATOR_RECORDS:
            self._groups[record.group_id].apply(record)  # type: ignore[union-attr, arg-type]
        elif isinstance(record, TimerArmed):
            self._armed[record.key] = record.deadline_ms
        elif isinstance(record, TimerDisarmed):
            self._armed.pop(record.key, None)
        elif isinstance(record, GroupCreated):
            if record.group_id in self._groups:
                raise AssertionError(f"group {record.group_id} created twice")
            self._groups[record.group_id] = GroupData(record.group_id, state_timestamp_ms=record.timestamp_ms)
        elif isinstance(record, GroupDeleted):
            self._groups.pop(record.group_id, None)
        elif isinstance(record, GroupRestored):
            if record.group_id in self._groups:
                raise AssertionError(f"group {record.group_id} restored over an existing one")
            self._groups[record.group_id] = GroupData.from_restored(record)

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
        group = self._groups.get(group_id)
        return MappingProxyType(group.offsets) if group is not None else MappingProxyType({})

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups

    def group_ids(self) -> list[str]:
        return sorted(self._groups)

    def snapshot(self) -> CoordinatorSnapshot:
        return CoordinatorSnapshot(
            groups=tuple(self._groups[g].snapshot() for g in sorted(self._groups)),
            timers=tuple(sorted(self._armed.items())),
        )
