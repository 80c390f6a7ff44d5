"""One handler invocation: collects replies, timer effects and records, and applies each record at once.

Every group kind's handlers work in one: they never touch state themselves but emit records, which the
coordinator's ``replay`` applies before the next line of the handler reads the group again (the classic
group's mutators are :mod:`kgroup.group.classic.mutate`).
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Generic, Protocol, TypeVar

from kgroup.group.config import CoordinatorConfig
from kgroup.group.records import OffsetCommitted, Parked, Record, TimerArmed, TimerDisarmed
from kgroup.group.timers import CancelTimer, ScheduleTimer, TimerEffect, TimerKey
from kgroup.messages import Reply, Response
from kgroup.model import TopicPartition
from kgroup.valuetypes import value_type

__all__ = ["CoordinatorResult", "CoordinatorTask", "Operation", "PendingOffsets", "Txn"]

_R = TypeVar("_R", bound=Record)


class AppliesCommits(Protocol):
    """A group that replays its own offset commits (every kind's group does)."""

    def apply(self, record: OffsetCommitted) -> None: ...

    def apply_commits(self, records: list[OffsetCommitted]) -> None:
        """:meth:`apply` for each of ``records``, in order."""


class PendingOffsets(Protocol):
    """The transactional offset commits pending on the coordinator until their transactions end
    (:class:`~kgroup.group.txn_offsets.PendingTxnOffsets`), as the handlers of every kind see them."""

    def __bool__(self) -> bool:
        """Whether any transaction holds an offset."""

    def has_pending(self, group_id: str, partition: TopicPartition) -> bool: ...

    def observe_commit(self, group_id: str, partition: TopicPartition) -> None:
        """A plain offset commit of the partition: every offset pending for it is older."""


class CoordinatorTask(Protocol):
    """Work the coordinator hands its host to run apart from everything else (Kafka's
    ``CoordinatorExecutor``: regex resolution runs on an executor, never on the threads that serve
    requests). ``run()`` is a pure function of the task; the host then hands what it returned to
    :meth:`GroupCoordinator.complete <kgroup.group.GroupCoordinator.complete>` — at once (the
    simulator), or from another thread when the work is done (the broker)."""

    @property
    def group_id(self) -> str: ...

    def run(self) -> object: ...


@value_type
class CoordinatorResult:
    """What one ``handle`` / ``on_timer`` call produced."""

    #: responses that can be given now (including parked requests completed by this call)
    replies: tuple[Reply, ...] = ()
    #: timers to schedule or cancel, in order (a later entry for the same key wins)
    timers: tuple[ScheduleTimer | CancelTimer, ...] = ()
    #: what to persist, in order (already applied to the coordinator through ``replay``)
    records: tuple[Record, ...] = ()
    #: work to run apart, each then handed back to ``GroupCoordinator.complete``
    tasks: tuple[CoordinatorTask, ...] = ()


class Txn:
    """The context a handler works in: the clock, the armed timers, and the effects it collects."""

    __slots__ = (
        "_replay",
        "armed",
        "config",
        "now_ms",
        "pending_offsets",
        "records",
        "replies",
        "requester",
        "rng",
        "tasks",
        "timers",
    )

    def __init__(
        self,
        *,
        now_ms: int,
        config: CoordinatorConfig,
        rng: Random,
        armed: dict[TimerKey, int],
        replay: Callable[[Record], None],
        pending_offsets: PendingOffsets | None = None,
    ) -> None:
        self.now_ms = now_ms
        #: the coordinator's pending transactional offsets (OffsetFetch's ``require_stable`` reads them)
        self.pending_offsets = pending_offsets
        self.config = config
        self.rng = rng
        self.armed = armed
        self._replay = replay
        self.records: list[Record] = []
        self.replies: list[Reply] = []
        self.timers: list[TimerEffect] = []
        self.tasks: list[CoordinatorTask] = []
        #: who asked (principal, client host): the request's, none for a timer
        self.requester: tuple[str, str] | None = None

    # --- effects ----------------------------------------------------------------------------------

    def emit(self, record: Record) -> None:
        self.records.append(record)  # counted first: a record that fails part-way is seen as applied
        self._replay(record)

    def emit_all_to(self, group: AppliesCommits, records: list[OffsetCommitted]) -> None:
        """:meth:`emit` for each of ``records`` of ``group`` (which exists), in order: the group
        replays them, exactly as the coordinator's ``replay`` would hand them over (commits)."""
        self.records.extend(records)  # counted first: a failure part-way is seen as applied
        pending = self.pending_offsets
        if pending:  # pending offsets of these partitions are older than these commits
            for record in records:
                pending.observe_commit(record.group_id, record.partition)
        group.apply_commits(records)

    def reply(self, connection: str, correlation_id: int, body: Response) -> None:
        self.replies.append(Reply(connection, correlation_id, body))

    def answer(self, parked: Parked, body: Response) -> None:
        self.replies.append(Reply(parked.connection, parked.correlation_id, body))

    def schedule(self, key: TimerKey, delay_ms: int) -> None:
        deadline = self.now_ms + delay_ms
        self.emit(TimerArmed(key, deadline))
        self.timers.append(ScheduleTimer(key, deadline))

    def cancel(self, key: TimerKey) -> None:
        if key in self.armed:
            self.emit(TimerDisarmed(key))
            self.timers.append(CancelTimer(key))

    def cancel_group_timers(self, group_id: str) -> None:
        """:meth:`cancel` every timer armed for ``group_id`` (DeleteGroups of any kind)."""
        for key in [k for k in self.armed if k.group_id == group_id]:
            self.cancel(key)

    def result(self) -> CoordinatorResult:
        return CoordinatorResult(
            tuple(self.replies), tuple(self.timers), tuple(self.records), tuple(self.tasks)
        )

    # --- member ids -------------------------------------------------------------------------------

    def new_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        """``prefix + "-" + UUID``: the prefix is the instance id for static members, else the client id."""
        bits = self.rng.getrandbits(128)
        bits = (bits & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
        bits = (bits & ~(0xC000 << 48)) | (0x8000 << 48)  # IETF variant
        h = f"{bits:032x}"
        uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid}"


class Operation(Generic[_R]):
    """One operation's records and timer effects, collected by a handler and applied only when the whole
    operation succeeds (a KIP-848 or share heartbeat, a classic member joining a consumer group)."""

    __slots__ = ("records", "timer_ops")

    def __init__(self) -> None:
        self.records: list[_R] = []
        self.timer_ops: list[Callable[[], None]] = []

    def apply(self, txn: Txn) -> None:
        """The operation succeeded: its records are emitted (replayed) in order, then its timers set."""
        for record in self.records:
            txn.emit(record)
        for timer_op in self.timer_ops:
            timer_op()
