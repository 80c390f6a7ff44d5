"""The group coordinator of one broker: a router over the registered group kinds, as a pure state machine.

``handle(now_ms, envelope)`` and ``on_timer(now_ms, key)`` return a :class:`CoordinatorResult`
(replies, timer effects, records); ``replay(record)`` is the only way state changes. The host keeps the
clock and the timer queue; ids come from the injected ``random.Random``.

The router knows no kind (``kgroup.group.kinds`` lists them, :class:`~kgroup.group.kind.GroupKind`
says what each declares): a request goes to the kind that owns its group and serves its type, else to
the one kind that serves its type; a record to the kind that replays its type (a type two kinds
replay, to the owner of its group); a timer to the kind that arms its kind of key; a task to the kind
of its type. It answers itself only what spans the kinds: ListGroups, DescribeGroups, deleting,
loading and unloading groups, checkpoints and snapshots — and keeps the transactional offset commits
pending until their transactions end (:mod:`kgroup.group.txn_offsets`, ``end_transaction``), which
every operation carries (``Txn.pending_offsets``: each kind's OffsetFetch answers ``require_stable``
with them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from random import Random
from types import MappingProxyType
from typing import Any, TypeVar

from kgroup.group.admin import not_described
from kgroup.group.config import CoordinatorConfig
from kgroup.group.kind import GroupKind, Handler, UnknownGroupError
from kgroup.group.kinds import registered_kinds
from kgroup.group.metadata import EMPTY_IMAGE, MetadataImage
from kgroup.group.records import (
    GroupDeleted,
    OffsetAndMetadata,
    OffsetCommitted,
    Record,
    TimerArmed,
    TimerDisarmed,
    TxnOffsetCommitted,
    TxnOffsetsEnded,
)
from kgroup.group.timers import ScheduleTimer, TimerKey
from kgroup.group.txn import CoordinatorResult, CoordinatorTask, Txn
from kgroup.group.txn_offsets import PendingTxnOffsets
from kgroup.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition

__all__ = ["CoordinatorSnapshot", "GroupCoordinator", "UnknownGroupError"]

K = TypeVar("K", bound=GroupKind)


@dataclass(frozen=True, slots=True)
class CoordinatorSnapshot:
    """All of a coordinator's state as one comparable value: per kind (by name) its groups by id, then
    the armed timers."""

    kinds: tuple[tuple[str, tuple[object, ...]], ...]
    timers: tuple[tuple[TimerKey, int], ...]

    def of(self, kind_name: str) -> tuple[object, ...]:
        """One kind's groups (``"classic"``, ``"consumer"``)."""
        return dict(self.kinds)[kind_name]


class GroupCoordinator:
    """All the groups of one coordinator (one broker), of every registered kind."""

    def __init__(
        self,
        config: CoordinatorConfig = CoordinatorConfig(),  # noqa: B008 - frozen, so sharing is safe
        *,
        rng: Random,
    ) -> None:
        self.config = config
        self._rng = rng
        self._armed: dict[TimerKey, int] = {}
        self._image = EMPTY_IMAGE
        self._last_txn: Txn | None = None
        kinds = self._kinds = registered_kinds()
        #: request type -> the one handler for a group no kind owns through its owned handlers
        self._handlers: dict[type, Handler] = {
            DescribeGroupsRequest: self._describe_groups,
            ListGroupsRequest: self._list_groups,
        }
        record_kinds: dict[type, list[GroupKind]] = {}
        #: request type -> (owns, handler) of each kind that answers it for its own groups
        self._owned: dict[type, list[tuple[Callable[[str], bool], Handler]]] = {}
        self._timer_kinds: dict[type[TimerKey], GroupKind] = {}
        #: timer key type -> its kind, for the kinds that replay their timer records (keep an index)
        self._timer_followers: dict[type[TimerKey], GroupKind] = {}
        self._task_kinds: dict[type, GroupKind] = {}
        for kind in kinds:
            for request_type, handler in kind.handlers.items():
                if self._handlers.setdefault(request_type, handler) is not handler:
                    raise AssertionError(f"{request_type.__name__} is served by two kinds")
            for request_type, handler in kind.owned_handlers.items():
                self._owned.setdefault(request_type, []).append((kind.owns, handler))
            for record_type in kind.records:
                record_kinds.setdefault(record_type, []).append(kind)
            for timer_kind in kind.timer_kinds:
                if self._timer_kinds.setdefault(timer_kind, kind) is not kind:
                    raise AssertionError(f"{timer_kind.__name__} is armed by two kinds")
                if TimerArmed in kind.records:
                    self._timer_followers[timer_kind] = kind
            for task_type in kind.task_types:
                self._task_kinds[task_type] = kind
        #: record type -> what replays it: the one kind's replay, or its group's owner's among several
        self._replayers: dict[type, Callable[[Any], None]] = {
            TimerArmed: self._replay_armed,
            TimerDisarmed: self._replay_disarmed,
        }
        for record_type, replaying in record_kinds.items():
            if record_type not in self._replayers:
                self._replayers[record_type] = (
                    replaying[0].replay if len(replaying) == 1 else partial(self._replay_by_owner, replaying)
                )
        #: transactional offset commits until their transactions end (kgroup.group.txn_offsets)
        self.pending_offsets = pending = PendingTxnOffsets()
        replay_commit = self._replayers[OffsetCommitted]
        replay_deleted = self._replayers[GroupDeleted]

        def replay_offset_commit(record: OffsetCommitted) -> None:
            if pending:
                pending.observe_commit(record.group_id, record.partition)
            replay_commit(record)

        def replay_group_deleted(record: GroupDeleted) -> None:
            replay_deleted(record)
            if pending:
                pending.drop_group(record.group_id)

        def materialise(record: OffsetCommitted) -> None:
            if self._owner(record.group_id) is not None:
                replay_offset_commit(record)

        self._replayers[OffsetCommitted] = replay_offset_commit
        self._replayers[GroupDeleted] = replay_group_deleted
        self._replayers[TxnOffsetCommitted] = pending.replay_pending
        self._replayers[TxnOffsetsEnded] = partial(pending.replay_ended, materialise=materialise)

    def kind(self, kind_type: type[K]) -> K:
        """The registered kind of ``kind_type`` (e.g. ``ClassicGroups``), to ask about its groups."""
        for kind in self._kinds:
            if isinstance(kind, kind_type):
                return kind
        raise KgroupError(f"kind_type: {kind_type.__name__} is not a registered group kind")

    def _owner(self, group_id: str) -> GroupKind | None:
        for kind in self._kinds:
            if kind.owns(group_id):
                return kind
        return None

    # --- driving it -----------------------------------------------------------------------------

    def _txn(self, now_ms: int) -> Txn:
        txn = self._last_txn = Txn(
            now_ms=now_ms,
            config=self.config,
            rng=self._rng,
            armed=self._armed,
            replay=self.replay,
            pending_offsets=self.pending_offsets,
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
        handler = self._handler_of(body)
        txn = self._txn(now_ms)
        handler(txn, envelope, body)
        return txn.result()

    def end_transaction(
        self, now_ms: int, producer_id: int, committed: bool, in_partition: Callable[[str], bool]
    ) -> CoordinatorResult:
        """A transaction's marker reached an ``__consumer_offsets`` partition (``in_partition`` says
        which groups it holds): each of its groups holding offsets of ``producer_id`` gets a
        :class:`TxnOffsetsEnded` (Kafka's ``replayEndTransactionMarker``)."""
        txn = self._txn(now_ms)
        for group_id in self.pending_offsets.groups_of(producer_id):
            if in_partition(group_id):
                txn.emit(TxnOffsetsEnded(group_id, producer_id, committed))
        return txn.result()

    def _handler_of(self, body: object) -> Handler:
        request_type = type(body)
        owned = self._owned.get(request_type)
        if owned is not None:
            group_id: str = body.group_id  # type: ignore[attr-defined]  # a type served per group has one
            for owns, owned_handler in owned:
                if owns(group_id):
                    return owned_handler
        handler = self._handlers.get(request_type)
        if handler is None:
            for base in request_type.__mro__[1:]:  # a subclass of a request type
                handler = self._handlers.get(base)
                if handler is not None:
                    return handler
            raise KgroupError(
                f"envelope.body: {request_type.__name__} is not a group request; "
                "send one of the requests in kgroup.messages"
            )
        return handler

    def _describe_groups(self, txn: Txn, env: Envelope, req: DescribeGroupsRequest) -> None:
        """DescribeGroups: each group described by its kind (a kind that is not classic answers that it
        cannot describe it), a group no kind has not found."""
        described = []
        for group_id in req.groups:
            owner = self._owner(group_id)
            if owner is None:
                described.append(not_described(group_id, env.api_version, f"Group {group_id} not found."))
            else:
                described.append(owner.described(group_id, env.api_version))
        txn.reply(env.connection, env.correlation_id, DescribeGroupsResponse(tuple(described)))

    def _list_groups(self, txn: Txn, env: Envelope, req: ListGroupsRequest) -> None:
        """ListGroups: every kind's groups (filtered by state and by kind), by group id."""
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        listed = [
            group for kind in self._kinds if not types or kind.name in types for group in kind.listed(states)
        ]
        listed.sort(key=lambda g: g.group_id)
        txn.reply(env.connection, env.correlation_id, ListGroupsResponse(ErrorCode.NONE, tuple(listed)))

    def set_metadata(self, image: MetadataImage) -> None:
        """The cluster's topics changed (Kafka's ``onMetadataUpdate``): every kind reads ``image``
        from now on."""
        self._image = image
        for kind in self._kinds:
            kind.set_metadata(image)

    @property
    def metadata(self) -> MetadataImage:
        return self._image

    def on_timer(self, now_ms: int, key: TimerKey) -> CoordinatorResult:
        """A scheduled deadline passed. Keys not armed (cancelled, replaced, stale) do nothing."""
        deadline = self._armed.get(key)
        if deadline is None or deadline > now_ms:
            return CoordinatorResult()
        txn = self._txn(now_ms)
        txn.emit(TimerDisarmed(key))
        self._timer_kinds[type(key)].on_timer(txn, key)
        return txn.result()

    def complete(self, now_ms: int, task: CoordinatorTask, outcome: object) -> CoordinatorResult:
        """A task of an earlier result ran; ``outcome`` is what its ``run()`` returned."""
        kind = self._task_kinds.get(type(task))
        if kind is None:
            raise KgroupError(f"task: {type(task).__name__} is not a task of this coordinator")
        txn = self._txn(now_ms)
        kind.complete(txn, task, outcome)
        return txn.result()

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, CoordinatorResult]:
        """DeleteGroups for one group (only Empty groups; NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND otherwise)."""
        txn = self._txn(now_ms)
        owner = self._owner(group_id)
        error = ErrorCode.GROUP_ID_NOT_FOUND if owner is None else owner.delete_group(txn, group_id)
        return error, txn.result()

    def unload(self, now_ms: int) -> CoordinatorResult:
        """Lose coordinatorship: every group goes Dead, parked requests get NOT_COORDINATOR, no timer
        stays armed."""
        txn = self._txn(now_ms)
        for kind in self._kinds:
            kind.unload(txn)
        for key in list(self._armed):
            txn.cancel(key)
        return txn.result()

    def load(self, now_ms: int, group_ids: Iterable[str]) -> CoordinatorResult:
        """This coordinator has just taken over ``group_ids`` (a failover, or a start on old data):
        every member's session starts again from ``now_ms``, as Kafka's ``GroupMetadataManager.onLoaded``
        does — a member is not expired for the time its group had no coordinator. Only sessions that
        are armed are restarted."""
        txn = self._txn(now_ms)
        for group_id in group_ids:
            owner = self._owner(group_id)
            if owner is not None:
                owner.load(txn, group_id)
        return txn.result()

    def armed_timers(self) -> tuple[ScheduleTimer, ...]:
        """Every timer the coordinator expects, e.g. to re-arm a host's queue after a rebuild by replay."""
        return tuple(ScheduleTimer(key, deadline) for key, deadline in self._armed.items())

    # --- state ------------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """Apply one record: the only way the coordinator's state changes."""
        self._replayers[type(record)](record)

    def _replay_armed(self, record: TimerArmed) -> None:
        self._armed[record.key] = record.deadline_ms
        follower = self._timer_followers.get(type(record.key))
        if follower is not None:
            follower.replay(record)

    def _replay_disarmed(self, record: TimerDisarmed) -> None:
        self._armed.pop(record.key, None)
        follower = self._timer_followers.get(type(record.key))
        if follower is not None:
            follower.replay(record)

    @staticmethod
    def _replay_by_owner(kinds: list[GroupKind], record: Any) -> None:
        """A record more than one kind replays (an offset commit): its group's owner's (else the first's)."""
        group_id = record.group_id
        next((kind for kind in kinds if kind.owns(group_id)), kinds[0]).replay(record)

    def checkpoint(self) -> Iterator[Record]:
        """Records that rebuild this coordinator's state exactly when replayed into an empty one: each
        kind's (for a classic group a :class:`GroupRestored` and its offsets) between the open
        transactions' pending offsets a later commit superseded (before) and the others (after), then
        the armed timers (in arming order). A host compacts its log with them: the records written
        after the checkpoint replay onto its state as they did onto the original's."""
        yield from self.pending_offsets.checkpoint_superseded()
        for kind in self._kinds:
            yield from kind.checkpoint()
        yield from self.pending_offsets.checkpoint_live()
        for key, deadline in self._armed.items():
            yield TimerArmed(key, deadline)

    def committed_offsets(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """The offsets committed in one group (a read-only view; empty if there is no such group)."""
        owner = self._owner(group_id)
        return owner.committed_offsets(group_id) if owner is not None else MappingProxyType({})

    def has_group(self, group_id: str) -> bool:
        return self._owner(group_id) is not None

    def group_ids(self) -> list[str]:
        """Every group's id, of every kind."""
        return sorted(group_id for kind in self._kinds for group_id in kind.group_ids())

    def snapshot(self) -> CoordinatorSnapshot:
        return CoordinatorSnapshot(
            kinds=(
                *((kind.name, kind.snapshot()) for kind in self._kinds),
                ("pending_offsets", self.pending_offsets.snapshot()),
            ),
            timers=tuple(sorted(self._armed.items())),
        )
