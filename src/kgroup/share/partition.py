"""One share partition (KIP-932) as Kafka 4.4.0's broker keeps it (``kafka.server.share.SharePartition``),
pure: no I/O, no clock (every operation takes ``now_ms``), the acquisition locks as timer effects.
Where Kafka's sources and the 4.4.0 release differ, this follows the release's bytecode (``javap`` on
``kafka_2.13-4.4.0.jar`` / ``kafka-server-4.4.0.jar``); the comments say where.

The in-flight window runs from the share-partition start offset (SPSO, :attr:`start_offset`) to the end
offset (SPEO, :attr:`end_offset`). Records are cached as in-flight batches keyed by first offset; a batch
keeps one state for all its records until something (a partial acknowledgement, a partial acquisition,
the SPSO moving inside it, a throttled redelivery) needs records apart, then it keeps a state per
offset, as Kafka's ``InFlightBatch`` does.

Kafka's persister writes are asynchronous: a transition starts, the write goes to the share
coordinator, and the transition commits or rolls back when it answers. Here a write is the
:class:`StateWrite` an operation returns, and the transition commits at once (the host appends the
write before it answers the client, as ``kgroup serve`` appends before it acknowledges). A request
that fails part-way rolls back every transition it started, as Kafka's does.
"""

from __future__ import annotations

import bisect
import enum
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kgroup.share.records import (
    AbortedTransaction,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    IsolationLevel,
    PersisterStateBatch,
    RecordState,
    ShareError,
    ShareErrorCode,
)
from kgroup.share.timers import CancelLockTimer, LockKey, LockTimerEffect, ScheduleLockTimer

__all__ = [
    "EMPTY_MEMBER_ID",
    "MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT",
    "AcknowledgeResult",
    "AcknowledgementBatch",
    "AcquireResult",
    "PartitionState",
    "PersistedPartitionState",
    "SharePartition",
    "SharePartitionConfig",
    "StateWrite",
]

#: the holder of a record nobody holds (Kafka 4.4: ``SharePartition.EMPTY_MEMBER_ID``)
EMPTY_MEMBER_ID = ""
#: the least delivery count from which redeliveries are throttled (``SharePartition``)
MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2

_ACK_TO_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


_RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."


class PartitionState(enum.Enum):
    """``SharePartition.SharePartitionState``."""

    EMPTY = "EMPTY"
    INITIALIZING = "INITIALIZING"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    FENCED = "FENCED"


class _Ops(enum.Enum):
    INCREASE = 1
    DECREASE = -1
    NO_OP = 0


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """The limits one share partition runs under (the group's ``share.*`` configs, Kafka's defaults)."""

    #: ``share.partition.max.record.locks``
    max_in_flight_records: int = 2000
    #: ``share.delivery.count.limit``
    max_delivery_count: int = 5
    #: ``share.record.lock.duration.ms``
    record_lock_duration_ms: int = 30000
    #: ``share.renew.acknowledge.enable`` (KIP-1222): RENEW is refused when off
    renew_acknowledge_enabled: bool = True

    def __post_init__(self) -> None:
        for name in (
            "max_in_flight_records",
            "max_delivery_count",
            "record_lock_duration_ms",
        ):  # not the flag
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @property
    def throttle_records_delivery_limit(self) -> int:
        """Records delivered this often are redelivered in ever smaller batches (KAFKA-17541)."""
        half = -(-self.max_delivery_count // 2)
        return max(MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, half)


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One acknowledgement batch of ShareFetch / ShareAcknowledge: one type for the whole range, or
    one type per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StateWrite:
    """What the share partition asks its share coordinator to persist (``WriteShareGroupState``)."""

    start_offset: int
    delivery_complete_count: int
    state_epoch: int
    leader_epoch: int
    batches: tuple[PersisterStateBatch, ...]


@dataclass(frozen=True, slots=True)
class PersistedPartitionState:
    """What ``ReadShareGroupState`` returns: the SPSO (−1: never initialised) and the state batches."""

    start_offset: int = -1
    state_epoch: int = 0
    batches: tuple[PersisterStateBatch, ...] = ()


@dataclass(slots=True)
class AcquireResult:
    """The records one fetch acquired, their count, and the lock timers to arm. ``error`` is set when
    Kafka's acquisition throws part-way (read_committed finding an aborted batch it has not cached):
    what was acquired stays acquired, under its locks, and nothing is delivered."""

    acquired: list[AcquiredRecords] = field(default_factory=list)
    count: int = 0
    effects: list[LockTimerEffect] = field(default_factory=list)
    error: ShareError | None = None


@dataclass(slots=True)
class AcknowledgeResult:
    """``error`` is ``None`` when every batch was applied; else nothing was. ``write`` is what to
    persist (``None``: nothing)."""

    error: ShareError | None = None
    write: StateWrite | None = None
    effects: list[LockTimerEffect] = field(default_factory=list)


class _Lock:
    __slots__ = ("deadline_ms", "first", "key", "last", "member", "refs")

    def __init__(self, key: LockKey, member: str, deadline_ms: int) -> None:
        self.key = key
        self.member = member
        self.deadline_ms = deadline_ms
        self.refs = 0
        self.first = -1
        self.last = -1


class _State:
    """``InFlightState``: a record's (or a whole batch's) state, delivery count, holder and lock."""

    __slots__ = ("count", "lock", "member", "state", "terminal")

    def __init__(self, state: RecordState, count: int, member: str) -> None:
        self.state = state
        self.count = count
        self.member = member
        self.lock: _Lock | None = None
        #: archived for good (SPSO moved, aborted transaction): a rollback does not bring it back
        self.terminal = False

    def __repr__(self) -> str:
        return f"({self.state.name}, {self.count}, {self.member!r})"


class _Batch:
    """``InFlightBatch``: one cached batch, its state whole (``whole``) or per offset (``offsets``)."""

    __slots__ = ("first", "last", "offsets", "whole")

    def __init__(self, first: int, last: int, whole: _State) -> None:
        self.first = first
        self.last = last
        self.whole: _State | None = whole
        self.offsets: dict[int, _State] | None = None

    def __repr__(self) -> str:
        inner = self.whole if self.offsets is None else self.offsets
        return f"[{self.first}-{self.last} {inner}]"


@dataclass(slots=True)
class _GapWindow:
    end_offset: int
    gap_start_offset: int


class SharePartition:
    """One share partition of one share group. Build it, :meth:`initialize` it from the persisted
    state, then :meth:`acquire`, :meth:`acknowledge`, :meth:`release_acquired_records` and
    :meth:`on_lock_timeout` as the host's requests and timers arrive."""

    def __init__(
        self,
        group_id: str,
        topic: str,
        partition: int,
        config: SharePartitionConfig | None = None,
        *,
        leader_epoch: int = 0,
    ) -> None:
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.config = config or SharePartitionConfig()
        self.leader_epoch = leader_epoch
        self.state = PartitionState.EMPTY
        self.state_epoch = 0
        self.start_offset = 0
        self.end_offset = 0
        self._keys: list[int] = []
        self._batches: dict[int, _Batch] = {}
        self._find_next_fetch_offset = False
        self._gap_window: _GapWindow | None = None
        self._locks: dict[int, _Lock] = {}
        self._next_lock_id = 0
        self._effects: list[LockTimerEffect] = []
        self._journal: dict[int, tuple[_State, RecordState, int, str]] = {}
        self._now_ms = 0

    # ------------------------------------------------------------------ initialisation

    def initialize(self, persisted: PersistedPartitionState, reset_start_offset: int) -> ShareError | None:
        """Load the persisted state (``maybeInitialize``). ``reset_start_offset`` is the SPSO
        ``share.auto.offset.reset`` gives (:func:`kgroup.share.reset.initial_start_offset`), used only
        when the partition was never initialised. Answers ``None``, or why it failed (FAILED state)."""
        if self.state is not PartitionState.EMPTY:
            raise AssertionError(f"initialize on a share partition in state {self.state.name}")
        start = persisted.start_offset if persisted.start_offset != -1 else reset_start_offset
        self.start_offset = start
        self.state_epoch = persisted.state_epoch
        gap_start = -1
        previous_last = start - 1
        for b in persisted.batches:
            if b.first_offset < start:
                self.state = PartitionState.FAILED
                self._keys.clear()
                self._batches.clear()
                return ShareError(
                    ShareErrorCode.INVALID_RECORD_STATE,
                    f"Failed to initialize the share partition {self.group_id}-{self.topic}-{self.partition}",
                )
            if gap_start == -1 and b.first_offset > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = b.last_offset
            self._put(
                _Batch(
                    b.first_offset,
                    b.last_offset,
                    _State(RecordState(b.delivery_state), b.delivery_count, EMPTY_MEMBER_ID),
                )
            )
        if self._keys:
            self._find_next_fetch_offset = True
            self.end_offset = self._batches[self._keys[-1]].last
            if gap_start != -1:
                self._gap_window = _GapWindow(self.end_offset, gap_start)
            self._maybe_update_cached_state_and_offsets()
        else:
            self.end_offset = start
        self.state = PartitionState.ACTIVE
        return None

    # ------------------------------------------------------------------ views

    @property
    def in_flight_records(self) -> int:
        """``numInFlightRecords``: SPEO − SPSO + 1 while anything is cached."""
        return self.end_offset - self.start_offset + 1 if self._keys else 0

    def delivery_complete_count(self) -> int:
        """Terminal (acknowledged or archived) records at or past the SPSO (persisted since 4.2)."""
        return sum(_count_terminal(self._batches[k], self.start_offset) for k in self._keys)

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """``(state, delivery count, holder)`` of a cached offset, or ``None`` if it is not cached."""
        k = self._floor_key(offset)
        if k is None:
            return None
        b = self._batches[k]
        if offset > b.last:
            return None
        st = b.whole if b.offsets is None else b.offsets[offset]
        assert st is not None
        return st.state, st.count, st.member

    def cached_batches(self) -> list[tuple[int, int, list[tuple[int, RecordState, int, str]] | None]]:
        """The cache for tests and views: ``(first, last, per-offset states or None)`` per batch,
        per-offset states as ``(offset, state, delivery count, holder)``."""
        out: list[tuple[int, int, list[tuple[int, RecordState, int, str]] | None]] = []
        for k in self._keys:
            b = self._batches[k]
            if b.offsets is None:
                out.append((b.first, b.last, None))
            else:
                out.append((b.first, b.last, [(o, s.state, s.count, s.member) for o, s in b.offsets.items()]))
        return out

    def batch_state(self, first_offset: int) -> tuple[RecordState, int, str] | None:
        """The whole-batch state of the batch keyed ``first_offset`` (``None``: not whole or absent)."""
        b = self._batches.get(first_offset)
        if b is None or b.whole is None:
            return None
        return b.whole.state, b.whole.count, b.whole.member

    def locks(self) -> dict[LockKey, int]:
        """The live acquisition locks and their deadlines."""
        return {lock.key: lock.deadline_ms for lock in self._locks.values()}

    # ------------------------------------------------------------------ next fetch offset

    def next_fetch_offset(self) -> int:
        """``nextFetchOffset``: where the next read of the log starts."""
        if not self._find_next_fetch_offset:
            if not self._keys or self.start_offset > self._batches[self._keys[-1]].last:
                return self.end_offset
            return self.end_offset + 1
        if not self._keys or self.start_offset > self._batches[self._keys[-1]].last:
            self._find_next_fetch_offset = False
            return self.end_offset
        next_offset = -1
        gap_start = self._gap_window.gap_start_offset if self._gap_window is not None else -1
        for k in self._keys:
            b = self._batches[k]
            if self._gap_window_active():
                if k > gap_start:
                    next_offset = gap_start
                    break
                gap_start = max(b.last + 1, gap_start)
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is RecordState.AVAILABLE and not self._ongoing(b.whole):
                    next_offset = b.first
                    break
            else:
                for o, st in b.offsets.items():
                    if st.state is RecordState.AVAILABLE and not self._ongoing(st):
                        next_offset = o
                        break
                if next_offset != -1:
                    break
        if next_offset == -1:
            self._find_next_fetch_offset = False
            next_offset = self.end_offset + 1
        return next_offset

    def can_acquire_records(self) -> bool:
        """``canAcquireRecords``: below the in-flight cap, or something inside the window to refetch."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_records < self.config.max_in_flight_records

    # ------------------------------------------------------------------ acquire

    def acquire(
        self,
        member_id: str,
        now_ms: int,
        fetch_offset: int,
        batches: Sequence[FetchedBatch],
        *,
        max_fetch_records: int,
        batch_size: int | None = None,
        record_limit: bool = False,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        aborted_transactions: Sequence[AbortedTransaction] | None = None,
    ) -> AcquireResult:
        """Acquire records of ``batches`` (the log read from ``fetch_offset``) for ``member_id``
        (``SharePartition.acquire``). ``max_fetch_records`` is a soft limit in the default
        batch-optimised mode (whole log batches are acquired) and exact in record-limit mode
        (ShareFetch v2's ``ShareAcquireMode.RECORD_LIMIT``). ``batch_size`` splits the acquired range
        into batches of about that many records (default: ``max_fetch_records``)."""
        self._effects = []
        result = self._acquire(
            member_id,
            now_ms,
            fetch_offset,
            batches,
            max_fetch_records,
            batch_size if batch_size is not None else max_fetch_records,
            record_limit,
            isolation,
            aborted_transactions,
        )
        result.effects = self._effects
        self._effects = []
        return result

    def _acquire(
        self,
        member_id: str,
        now_ms: int,
        fetch_offset: int,
        batches: Sequence[FetchedBatch],
        max_fetch_records: int,
        batch_size: int,
        record_limit: bool,
        isolation: IsolationLevel,
        aborted: Sequence[AbortedTransaction] | None,
    ) -> AcquireResult:
        if self.state is not PartitionState.ACTIVE or max_fetch_records <= 0 or not batches:
            return AcquireResult()
        last_batch = batches[-1]
        if last_batch.last_offset < self.start_offset:
            return AcquireResult()
        last_to_acquire, max_records = self._last_offset_and_max_records(
            fetch_offset, max_fetch_records, last_batch.last_offset
        )
        if max_records <= 0:
            return AcquireResult()
        first_batch = batches[0]
        base_offset = first_batch.base_offset
        self._maybe_archive_stale_batches(fetch_offset, base_offset)
        floor = self._floor_key(base_offset)
        if floor is None:
            if base_offset < self.start_offset:
                base_offset = self.start_offset
        elif self._batches[floor].last >= base_offset:
            base_offset = floor
        # Kafka 4.4.0 (the jar; the sources indexed before it lack it): the cached batches from the lower
        # of the log batch's base and the adjusted base take part, and a new batch starts at the
        # adjusted base, so a log batch starting before the SPSO is never cached again from its base.
        sub = self._sub_keys(min(first_batch.base_offset, base_offset), last_to_acquire)
        if not sub:
            acquired, count = self._acquire_new_batch_records(
                member_id,
                now_ms,
                batches,
                record_limit,
                base_offset,
                last_to_acquire,
                batch_size,
                max_records,
            )
            return self._maybe_filter_aborted(batches, isolation, aborted, acquired, count)

        result: list[AcquiredRecords] = []
        acquired_count = 0
        maybe_gap_start = base_offset
        for k in sub:
            if acquired_count >= max_records:
                break
            b = self._batches[k]
            if self._gap_window_active():
                if maybe_gap_start < k:
                    new, n = self._acquire_new_batch_records(
                        member_id,
                        now_ms,
                        batches,
                        record_limit,
                        maybe_gap_start,
                        k - 1,
                        batch_size,
                        max_records - acquired_count,
                    )
                    result.extend(new)
                    acquired_count += n
                maybe_gap_start = b.last + 1
                if acquired_count >= max_records:
                    break
            full_match = b.first >= first_batch.base_offset and b.last <= last_to_acquire
            remaining = max_records - acquired_count
            record_limit_subset = record_limit and (b.last - b.first + 1) > remaining
            throttle = self._should_throttle(b, first_batch.base_offset, last_to_acquire)
            if throttle and acquired_count > 0:
                max_records = 0
                break
            if not full_match or b.offsets is not None or record_limit_subset or throttle:
                if b.offsets is None:
                    assert b.whole is not None
                    if b.whole.state is not RecordState.AVAILABLE or self._ongoing(b.whole):
                        continue
                    self._split(b)
                n = self._acquire_subset(
                    member_id,
                    now_ms,
                    record_limit,
                    remaining,
                    first_batch.base_offset,
                    last_to_acquire,
                    b,
                    result,
                )
                acquired_count += n
                if throttle and n > 0:
                    max_records = 0
                    break
                continue
            assert b.whole is not None
            if b.whole.state is not RecordState.AVAILABLE or self._ongoing(b.whole):
                continue
            if not self._try_update(b.whole, RecordState.ACQUIRED, _Ops.INCREASE, member_id):
                continue
            lock = self._new_lock(member_id, now_ms)
            self._attach(b.whole, lock, b.first, b.last)
            result.append(AcquiredRecords(b.first, b.last, b.whole.count))
            acquired_count += b.last - b.first + 1

        last_cached = self._batches[sub[-1]].last
        if acquired_count < max_records and last_cached < last_to_acquire:
            new, n = self._acquire_new_batch_records(
                member_id,
                now_ms,
                batches,
                record_limit,
                last_cached + 1,
                last_to_acquire,
                batch_size,
                max_records - acquired_count,
            )
            result.extend(new)
            acquired_count += n
        if result:
            self._maybe_update_gap_window_start(result[-1].last_offset + 1)
            return self._maybe_filter_aborted(batches, isolation, aborted, result, acquired_count)
        return AcquireResult(result, acquired_count)

    def _maybe_archive_stale_batches(self, fetch_offset: int, base_offset: int) -> None:
        """``maybeArchiveStaleBatches``: the log read from ``fetch_offset`` starts later, at
        ``base_offset`` (compaction removed what lay between): the Available records cached there are
        archived, so the SPSO and the next fetch offset can move past them."""
        if not self._keys or fetch_offset >= base_offset:
            return
        floor_offset = fetch_offset
        floor = self._floor_key(fetch_offset)
        if floor is not None and self._batches[floor].last >= fetch_offset:
            floor_offset = floor
        keys = [k for k in self._sub_keys(floor_offset, base_offset) if k < base_offset]
        if keys and self._archive_records(fetch_offset, base_offset, keys, RecordState.AVAILABLE):
            self._find_next_fetch_offset = True

    def _last_offset_and_max_records(
        self, fetch_offset: int, max_fetch: int, last_offset: int
    ) -> tuple[int, int]:
        max_records = min(max_fetch, self.config.max_in_flight_records - self.in_flight_records)
        last_to_acquire = last_offset
        if max_records <= 0 and fetch_offset <= self.end_offset:
            max_records = min(max_fetch, self.end_offset - fetch_offset + 1)
            last_to_acquire = min(last_offset, self.end_offset)
        return last_to_acquire, max_records

    def _acquire_new_batch_records(
        self,
        member_id: str,
        now_ms: int,
        batches: Sequence[FetchedBatch],
        record_limit: bool,
        first_offset: int,
        last_offset: int,
        batch_size: int,
        max_fetch: int,
    ) -> tuple[list[AcquiredRecords], int]:
        first_acquired = first_offset
        if not self._keys and self.end_offset > first_acquired:
            first_acquired = self.end_offset
        last_acquired = last_offset
        if max_fetch < last_acquired - first_acquired + 1:
            last_acquired = _last_offset_of_batch_with(batches, first_acquired + max_fetch - 1)
            if self._gap_window_active() and last_acquired > last_offset:
                last_acquired = last_offset
        acquired = self._create_batches(
            member_id, now_ms, batches, record_limit, max_fetch, first_acquired, last_acquired, batch_size
        )
        if self._keys and self._keys[0] == first_acquired:
            self.start_offset = first_acquired
        if last_acquired > self.end_offset:
            self.end_offset = last_acquired
        if record_limit:
            last_acquired = acquired[0].last_offset
        self._maybe_update_gap_window_start(last_acquired + 1)
        return acquired, last_acquired - first_acquired + 1

    def _create_batches(
        self,
        member_id: str,
        now_ms: int,
        batches: Sequence[FetchedBatch],
        record_limit: bool,
        max_fetch: int,
        first_acquired: int,
        last_acquired: int,
        batch_size: int,
    ) -> list[AcquiredRecords]:
        ranges: list[tuple[int, int]] = []
        current_first = first_acquired
        if not record_limit and last_acquired - first_acquired + 1 > batch_size:
            for fb in batches:
                if fb.base_offset > last_acquired:
                    break
                if fb.base_offset - current_first >= batch_size:
                    ranges.append((current_first, fb.base_offset - 1))
                    current_first = fb.base_offset
        ranges.append((current_first, last_acquired))
        if record_limit:
            first, last = ranges[0]
            if last - first + 1 > max_fetch:
                # The batch is cached whole; only its first max_fetch records are acquired, the rest
                # stay available (``maybeInitializeOffsetStateUpdate(lastOffset, delayMs)``).
                target = first + max_fetch - 1
                b = _Batch(first, last, _State(RecordState.ACQUIRED, 1, member_id))
                b.whole = None
                b.offsets = {}
                for o in range(first, last + 1):
                    if o <= target:
                        st = _State(RecordState.ACQUIRED, 1, member_id)
                        self._attach(st, self._new_lock(member_id, now_ms), o, o)
                    else:
                        st = _State(RecordState.AVAILABLE, 0, EMPTY_MEMBER_ID)
                    b.offsets[o] = st
                self._find_next_fetch_offset = True
                self._put(b)
                return [AcquiredRecords(first, target, 1)]
        out: list[AcquiredRecords] = []
        for first, last in ranges:
            st = _State(RecordState.ACQUIRED, 1, member_id)
            lock = self._new_lock(member_id, now_ms)
            self._attach(st, lock, first, last)
            self._put(_Batch(first, last, st))
            out.append(AcquiredRecords(first, last, 1))
        return out

    def _acquire_subset(
        self,
        member_id: str,
        now_ms: int,
        record_limit: bool,
        max_fetch: int,
        request_first: int,
        request_last: int,
        b: _Batch,
        result: list[AcquiredRecords],
    ) -> int:
        assert b.offsets is not None
        max_deliveries = self.config.max_delivery_count
        throttle_limit = self.config.throttle_records_delivery_limit
        acquired = 0
        throttled_max = -1
        has_throttled = False
        local: list[AcquiredRecords] = []
        for o, st in b.offsets.items():
            if o < request_first:
                continue
            if o > request_last:
                break
            if st.state is not RecordState.AVAILABLE or self._ongoing(st):
                continue
            if max_deliveries > 2 and st.count == max_deliveries - 1 and acquired > 0:
                break
            if st.count >= throttle_limit and throttled_max < 0:
                throttled_max = max(1, len(b.offsets) >> (st.count - throttle_limit + 1))
                has_throttled = True
            if not self._try_update(st, RecordState.ACQUIRED, _Ops.INCREASE, member_id):
                continue
            self._attach(st, self._new_lock(member_id, now_ms), o, o)
            local.append(AcquiredRecords(o, o, st.count))
            acquired += 1
            if st.count == max_deliveries and max_deliveries > 2:
                break
            if record_limit and acquired == max_fetch:
                break
            if has_throttled and acquired == throttled_max:
                break
        _accumulate(local, result)
        return acquired

    def _should_throttle(self, b: _Batch, request_first: int, request_last: int) -> bool:
        limit = self.config.throttle_records_delivery_limit
        if b.offsets is None:
            # Kafka 4.4.0: only an Available batch is throttled (older sources read any batch's count)
            st = b.whole
            assert st is not None
            return st.state is RecordState.AVAILABLE and not self._ongoing(st) and st.count >= limit
        top = 0
        for o, st in b.offsets.items():
            if (
                request_first <= o <= request_last
                and st.state is RecordState.AVAILABLE
                and not self._ongoing(st)
            ):
                top = max(top, st.count)
        return top >= limit

    # ------------------------------------------------------------------ read_committed

    def _maybe_filter_aborted(
        self,
        batches: Sequence[FetchedBatch],
        isolation: IsolationLevel,
        aborted: Sequence[AbortedTransaction] | None,
        acquired: list[AcquiredRecords],
        count: int,
    ) -> AcquireResult:
        if isolation is not IsolationLevel.READ_COMMITTED or not aborted:
            return AcquireResult(acquired, count)
        to_archive = _aborted_batches(batches, aborted)
        for fb in to_archive:
            floor = self._floor_key(fb.base_offset)
            if floor is None:
                # Kafka 4.4.0's fetchSubMap throws here (IllegalStateException, answered as
                # UNKNOWN_SERVER_ERROR); the batches archived before it stay archived.
                return AcquireResult(
                    error=ShareError(
                        ShareErrorCode.UNKNOWN_SERVER_ERROR,
                        "Batch record not found. The request batch offsets are not found in the cache.",
                    )
                )
            self._archive_records(
                fb.base_offset,
                fb.last_offset + 1,
                self._sub_keys(floor, fb.last_offset),
                RecordState.ACQUIRED,
            )
        filtered = _filter_batches(acquired, to_archive)
        return AcquireResult(filtered, sum(r.count for r in filtered))

    # ------------------------------------------------------------------ acknowledge

    def acknowledge(
        self, member_id: str, now_ms: int, batches: Sequence[AcknowledgementBatch]
    ) -> AcknowledgeResult:
        """Apply ``member_id``'s acknowledgements (``SharePartition.acknowledge``): all or nothing,
        except RENEW, which re-arms its locks at once (as Kafka's does, even in a request that fails)."""
        self._now_ms = now_ms
        self._effects = []
        self._journal = {}
        writes: list[tuple[_State, PersisterStateBatch]] = []
        error: ShareError | None = None
        for ack in batches:
            error = _validate_ack(ack)
            if error is not None:
                break
            if ack.last_offset < self.start_offset:
                continue
            sub, error = self._sub_for_ack(ack)
            if error is not None:
                break
            error = self._acknowledge_batch(member_id, ack, sub, writes)
            if error is not None:
                break
        return self._finish(error, writes)

    def _sub_for_ack(self, ack: AcknowledgementBatch) -> tuple[list[int], ShareError | None]:
        floor = self._floor_key(ack.first_offset)
        if floor is None:
            if not ack.first_offset < self.start_offset <= ack.last_offset:
                return [], ShareError(
                    ShareErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.",
                )
            floor = self._floor_key(self.start_offset)
            if floor is None:
                # Kafka 4.4.0 dereferences the missing floor entry here (a NullPointerException the
                # broker answers as UNKNOWN_SERVER_ERROR): nothing cached at or before the SPSO.
                return [], ShareError(
                    ShareErrorCode.UNKNOWN_SERVER_ERROR, "Unexpected error: no cached batch at the SPSO"
                )
        sub = self._sub_keys(floor, ack.last_offset)
        last = self._batches[sub[-1]].last
        if last < ack.first_offset:
            return [], ShareError(
                ShareErrorCode.INVALID_REQUEST,
                "Batch record not found. The first offset in request is past acquired records.",
            )
        if ack.last_offset > last:
            return [], ShareError(
                ShareErrorCode.INVALID_REQUEST,
                "Batch record not found. The last offset in request is past acquired records.",
            )
        return sub, None

    def _acknowledge_batch(
        self,
        member_id: str,
        ack: AcknowledgementBatch,
        sub: list[int],
        writes: list[tuple[_State, PersisterStateBatch]],
    ) -> ShareError | None:
        for k in sub:
            b = self._batches[k]
            if b.last < self.start_offset:
                continue
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.member == EMPTY_MEMBER_ID:
                    return _invalid_state(
                        "The batch cannot be acknowledged. The batch is not in the acquired state."
                    )
                if b.whole.member != member_id:
                    return _invalid_state("Member is not the owner of batch record")
                if self._ongoing(b.whole):
                    return _invalid_state(
                        "The record state is invalid. The acknowledgement of delivery could not be completed."
                    )
            full_match = b.first >= ack.first_offset and b.last <= ack.last_offset
            per_offset_ack = len(ack.acknowledge_types) > 1
            start_moved = b.first < self.start_offset <= b.last
            if not full_match or b.offsets is not None or per_offset_ack or start_moved:
                if b.offsets is None:
                    assert b.whole is not None
                    if b.whole.state is not RecordState.ACQUIRED:
                        return _invalid_state(
                            "The batch cannot be acknowledged. The subset batch is not in the acquired state."
                        )
                    self._split(b)
                error = self._acknowledge_per_offset(member_id, ack, b, writes)
            else:
                error = self._acknowledge_whole(member_id, ack, b, writes)
            if error is not None:
                return error
        return None

    def _acknowledge_per_offset(
        self,
        member_id: str,
        ack: AcknowledgementBatch,
        b: _Batch,
        writes: list[tuple[_State, PersisterStateBatch]],
    ) -> ShareError | None:
        assert b.offsets is not None
        for o, st in b.offsets.items():
            if o < ack.first_offset or o < self.start_offset:
                continue
            if o > ack.last_offset:
                break
            if st.state is not RecordState.ACQUIRED:
                return _invalid_state("The offset cannot be acknowledged. The offset is not acquired.")
            if self._ongoing(st):
                return _invalid_state(
                    "The record state is invalid. The acknowledgement of delivery could not be completed."
                )
            if st.member != member_id:
                return _invalid_state("Member is not the owner of offset")
            types = ack.acknowledge_types
            ack_type = types[o - ack.first_offset] if len(types) > 1 else types[0]
            if ack_type == AcknowledgeType.RENEW:
                if not self.config.renew_acknowledge_enabled:
                    return _invalid_state(_RENEW_DISABLED)
                self._detach(st)
                self._attach(st, self._renewal_lock(member_id), o, o)
                continue
            if not self._start_transition(
                st, _ACK_TO_STATE[AcknowledgeType(ack_type)], _Ops.NO_OP, EMPTY_MEMBER_ID
            ):
                return ShareError(
                    ShareErrorCode.INVALID_RECORD_STATE, "Unable to acknowledge records for the batch"
                )
            writes.append((st, PersisterStateBatch(o, o, int(st.state), st.count)))
        return None

    def _acknowledge_whole(
        self,
        member_id: str,
        ack: AcknowledgementBatch,
        b: _Batch,
        writes: list[tuple[_State, PersisterStateBatch]],
    ) -> ShareError | None:
        st = b.whole
        assert st is not None
        if st.state is not RecordState.ACQUIRED:
            return _invalid_state("The batch cannot be acknowledged. The batch is not in the acquired state.")
        ack_type = ack.acknowledge_types[0]
        if ack_type == AcknowledgeType.RENEW:
            if not self.config.renew_acknowledge_enabled:
                return _invalid_state(_RENEW_DISABLED)
            lock = self._renewal_lock(member_id)
            self._detach(st)
            self._attach(st, lock, b.first, b.last)
            return None
        if not self._start_transition(
            st, _ACK_TO_STATE[AcknowledgeType(ack_type)], _Ops.NO_OP, EMPTY_MEMBER_ID
        ):
            return ShareError(
                ShareErrorCode.INVALID_RECORD_STATE, "Unable to acknowledge records for the batch"
            )
        writes.append((st, PersisterStateBatch(b.first, b.last, int(st.state), st.count)))
        return None

    # ------------------------------------------------------------------ release on leave

    def release_acquired_records(self, member_id: str) -> AcknowledgeResult:
        """Release what ``member_id`` holds as it leaves (``releaseAcquiredRecords``): its records go
        back to Available (Archived at the delivery-count limit, or behind the SPSO), their delivery
        counted (Kafka 4.4.0: ``DeliveryCountOps.NO_OP``; later sources uncount it)."""
        self._effects = []
        self._journal = {}
        writes: list[tuple[_State, PersisterStateBatch]] = []
        for k in list(self._keys):
            b = self._batches[k]
            if (
                b.offsets is None
                and b.whole is not None
                and b.whole.state is RecordState.ACQUIRED
                and b.whole.member == member_id
                and b.first < self.start_offset <= b.last
            ):
                self._split(b)
            if b.offsets is not None:
                for o, st in b.offsets.items():
                    if st.member not in (member_id, EMPTY_MEMBER_ID):
                        continue  # Kafka 4.4.0 skips another member's offset (older sources stopped there)
                    if st.state is RecordState.ACQUIRED:
                        target = RecordState.ARCHIVED if o < self.start_offset else RecordState.AVAILABLE
                        if self._start_transition(st, target, _Ops.NO_OP, EMPTY_MEMBER_ID):
                            writes.append((st, PersisterStateBatch(o, o, int(st.state), st.count)))
                continue
            whole = b.whole
            assert whole is not None
            if whole.member not in (member_id, EMPTY_MEMBER_ID):
                continue
            if whole.state is RecordState.ACQUIRED:
                target = RecordState.ARCHIVED if b.last < self.start_offset else RecordState.AVAILABLE
                if self._start_transition(whole, target, _Ops.NO_OP, EMPTY_MEMBER_ID):
                    writes.append(
                        (whole, PersisterStateBatch(b.first, b.last, int(whole.state), whole.count))
                    )
        return self._finish(None, writes)

    # ------------------------------------------------------------------ lock timeout

    def on_lock_timeout(self, now_ms: int, key: LockKey) -> AcknowledgeResult:
        """The host's timer for ``key`` fired: the records its lock still holds go back to Available,
        or to Archived at the delivery-count limit (or behind the SPSO). A stale or early firing does
        nothing."""
        self._effects = []
        lock = self._locks.get(key.lock_id)
        if lock is None or lock.key != key or now_ms < lock.deadline_ms:
            return AcknowledgeResult()
        del self._locks[key.lock_id]
        floor = self._floor_key(lock.first)
        batches: list[PersisterStateBatch] = []
        if floor is not None:
            for k in self._sub_keys(floor, lock.last):
                b = self._batches[k]
                if (
                    b.offsets is None
                    and b.whole is not None
                    and b.whole.state is RecordState.ACQUIRED
                    and b.whole.lock is lock
                    and b.first < self.start_offset <= b.last
                ):
                    self._split(b)
                if b.offsets is None:
                    st = b.whole
                    assert st is not None
                    if st.state is RecordState.ACQUIRED and st.lock is lock:
                        target = RecordState.ARCHIVED if b.last < self.start_offset else RecordState.AVAILABLE
                        self._timeout_one(st, target, b.first, b.last, batches)
                    continue
                for o, st in b.offsets.items():
                    if o < lock.first:
                        continue
                    if o > lock.last:
                        break
                    if st.state is RecordState.ACQUIRED and st.lock is lock:
                        target = RecordState.ARCHIVED if o < self.start_offset else RecordState.AVAILABLE
                        self._timeout_one(st, target, o, o, batches)
        result = AcknowledgeResult(effects=self._effects)
        if batches:
            result.write = self._state_write(batches)
            self._maybe_update_cached_state_and_offsets()
        self._effects = []
        return result

    def _timeout_one(
        self, st: _State, target: RecordState, first: int, last: int, out: list[PersisterStateBatch]
    ) -> None:
        if not self._try_update(st, target, _Ops.NO_OP, EMPTY_MEMBER_ID):
            return
        out.append(PersisterStateBatch(first, last, int(st.state), st.count))
        self._detach(st)
        if st.state is not RecordState.ARCHIVED:
            self._find_next_fetch_offset = True

    # ------------------------------------------------------------------ log start offset

    def update_log_start_offset(self, log_start_offset: int) -> None:
        """The log's start offset moved (retention, DeleteRecords): Available records before it are
        archived and the SPSO jumps to it (``updateCacheAndOffsets``; persisted lazily with the next
        write). Acquired records before it are archived when their lock ends."""
        if log_start_offset <= self.start_offset:
            return
        if not self._keys:
            self.start_offset = log_start_offset
            self.end_offset = log_start_offset
            return
        if self._archive_records(
            self.start_offset, log_start_offset, list(self._keys), RecordState.AVAILABLE
        ):
            self._find_next_fetch_offset = True
        self.start_offset = log_start_offset
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    def _archive_records(self, start: int, end: int, keys: Iterable[int], initial: RecordState) -> bool:
        """``archiveRecords``: archive the records of ``keys``' batches in ``[start, end)`` that are in
        ``initial``, for good."""
        any_archived = False
        for k in keys:
            if k >= end:
                break
            b = self._batches[k]
            full_match = b.first >= start and b.last <= end - 1
            if not full_match or b.offsets is not None:
                if b.offsets is None:
                    assert b.whole is not None
                    if b.whole.state is not initial:
                        continue
                    self._split(b)
                assert b.offsets is not None
                for o, st in b.offsets.items():
                    if o < start:
                        continue
                    if o > end - 1:
                        break
                    if st.state is not initial:
                        continue
                    self._archive(st)
                    any_archived = True
                continue
            assert b.whole is not None
            if b.whole.state is initial:
                self._archive(b.whole)
                any_archived = True
        return any_archived

    def _archive(self, st: _State) -> None:
        st.terminal = True
        st.state = RecordState.ARCHIVED
        st.member = EMPTY_MEMBER_ID
        self._detach(st)

    # ------------------------------------------------------------------ commit, rollback, SPSO

    def _finish(
        self, error: ShareError | None, writes: list[tuple[_State, PersisterStateBatch]]
    ) -> AcknowledgeResult:
        journal = self._journal
        self._journal = {}
        if error is not None:
            for st, state, count, member in journal.values():
                if not st.terminal:
                    st.state, st.count, st.member = state, count, member
                if st.state is RecordState.AVAILABLE:
                    self._find_next_fetch_offset = True
            effects, self._effects = self._effects, []
            return AcknowledgeResult(error=error, effects=effects)
        if not writes:
            effects, self._effects = self._effects, []
            return AcknowledgeResult(effects=effects)
        write = self._state_write([batch for _, batch in writes])
        for st, _, _, _ in journal.values():
            self._detach(st)
            if st.state is RecordState.AVAILABLE:
                self._find_next_fetch_offset = True
        self._maybe_update_cached_state_and_offsets()
        effects, self._effects = self._effects, []
        return AcknowledgeResult(write=write, effects=effects)

    def _state_write(self, batches: list[PersisterStateBatch]) -> StateWrite:
        return StateWrite(
            start_offset=self.start_offset,
            delivery_complete_count=self.delivery_complete_count(),
            state_epoch=self.state_epoch,
            leader_epoch=self.leader_epoch,
            batches=tuple(batches),
        )

    def _maybe_update_cached_state_and_offsets(self) -> bool:
        if not self._can_move_start_offset():
            return False
        last_acked = self._find_last_offset_acknowledged()
        if last_acked == -1:
            return False
        last_cached = self._batches[self._keys[-1]].last
        if last_acked == last_cached:
            self.start_offset = last_cached + 1
            self.end_offset = last_cached + 1
            for k in self._keys:
                self._release_locks_of(self._batches[k])
            self._keys.clear()
            self._batches.clear()
            return True
        first_to_remove = self._keys[0]
        floor = self._floor_key(last_acked)
        assert floor is not None
        entry = self._batches[floor]
        if last_acked == entry.last:
            higher = self._keys[bisect.bisect_right(self._keys, last_acked)]
            if higher > self.start_offset:
                self.start_offset = higher
            if self._gap_window_active():
                assert self._gap_window is not None
                self.start_offset = min(self._gap_window.gap_start_offset, self.start_offset)
            last_to_remove = floor
        else:
            if last_acked + 1 > self.start_offset:
                self.start_offset = last_acked + 1
            if floor == self._keys[0]:
                last_to_remove = -1
            else:
                last_to_remove = self._keys[bisect.bisect_left(self._keys, floor) - 1]
        if last_to_remove != -1:
            hi = bisect.bisect_right(self._keys, last_to_remove)
            lo = bisect.bisect_left(self._keys, first_to_remove)
            for k in self._keys[lo:hi]:
                self._release_locks_of(self._batches.pop(k))
            del self._keys[lo:hi]
        return True

    def _release_locks_of(self, b: _Batch) -> None:
        for st in [b.whole] if b.offsets is None else list(b.offsets.values()):
            if st is not None and st.lock is not None:
                self._detach(st)

    def _can_move_start_offset(self) -> bool:
        if not self._keys:
            return False
        floor = self._floor_key(self.start_offset)
        if floor is None:
            return False
        b = self._batches[floor]
        if b.offsets is None:
            st = b.whole  # Kafka reads the batch's state even when the SPSO lies past the batch
        else:
            st = b.offsets.get(self.start_offset)
            if st is None:  # past a per-offset batch (Kafka would throw here)
                return False
        assert st is not None
        if self._ongoing(st):
            return False
        return st.state.terminal

    def _find_last_offset_acknowledged(self) -> int:
        last_acked = -1
        for k in self._keys:
            b = self._batches[k]
            if self._gap_window_active():
                assert self._gap_window is not None
                if b.last >= self._gap_window.gap_start_offset:
                    return last_acked
            if b.offsets is None:
                assert b.whole is not None
                if self._ongoing(b.whole) or not b.whole.state.terminal:
                    return last_acked
                last_acked = b.last
            else:
                for o, st in b.offsets.items():
                    if self._ongoing(st) or not st.state.terminal:
                        return last_acked
                    last_acked = o
        return last_acked

    # ------------------------------------------------------------------ gap window

    def _gap_window_active(self) -> bool:
        return self._gap_window is not None and self._gap_window.end_offset == self.end_offset

    def _maybe_update_gap_window_start(self, offset: int) -> None:
        w = self._gap_window
        if w is None:
            return
        if w.end_offset == self.end_offset and offset <= w.end_offset:
            w.gap_start_offset = offset
        else:
            self._gap_window = None

    # ------------------------------------------------------------------ states and locks

    def _ongoing(self, st: _State) -> bool:
        return id(st) in self._journal

    def _try_update(self, st: _State, new: RecordState, ops: _Ops, member: str) -> bool:
        """``InFlightState.tryUpdateState``."""
        if self._ongoing(st):
            return False
        return self._apply(st, new, ops, member)

    def _apply(self, st: _State, new: RecordState, ops: _Ops, member: str) -> bool:
        if (
            new is RecordState.AVAILABLE
            and ops is not _Ops.DECREASE
            and st.count >= self.config.max_delivery_count
        ):
            new = RecordState.ARCHIVED
        if st.state is new or st.state.terminal:
            return False
        if st.state is RecordState.AVAILABLE and new is not RecordState.ACQUIRED:
            return False
        st.state = new
        if new is not RecordState.ARCHIVED:
            st.count += ops.value
        st.member = member
        return True

    def _start_transition(self, st: _State, new: RecordState, ops: _Ops, member: str) -> bool:
        """``InFlightState.startStateTransition``: journaled, committed or rolled back by :meth:`_finish`."""
        if self._ongoing(st):
            return False
        before = (st, st.state, st.count, st.member)
        if not self._apply(st, new, ops, member):
            return False
        self._journal[id(st)] = before
        return True

    def _split(self, b: _Batch) -> None:
        """``maybeInitializeOffsetStateUpdate()``: track the batch's records one by one; an acquired
        batch's lock becomes one lock per record with the same deadline (Kafka's per-offset timer tasks:
        each fires, and persists, on its own)."""
        if b.offsets is not None:
            return
        whole = b.whole
        assert whole is not None
        offsets: dict[int, _State] = {}
        for o in range(b.first, b.last + 1):
            st = _State(whole.state, whole.count, whole.member)
            if whole.lock is not None:
                self._attach(st, self._new_lock_until(whole.member, whole.lock.deadline_ms), o, o)
            offsets[o] = st
        b.offsets = offsets
        if whole.lock is not None:
            self._detach(whole)
        b.whole = None

    def _new_lock(self, member: str, now_ms: int) -> _Lock:
        return self._new_lock_until(member, now_ms + self.config.record_lock_duration_ms)

    def _new_lock_until(self, member: str, deadline_ms: int) -> _Lock:
        key = LockKey(self.group_id, self.topic, self.partition, self._next_lock_id)
        self._next_lock_id += 1
        lock = _Lock(key, member, deadline_ms)
        self._locks[key.lock_id] = lock
        self._effects.append(ScheduleLockTimer(key, lock.deadline_ms))
        return lock

    def _renewal_lock(self, member: str) -> _Lock:
        return self._new_lock(member, self._now_ms)

    def _attach(self, st: _State, lock: _Lock, first: int, last: int) -> None:
        st.lock = lock
        lock.refs += 1
        lock.first = first if lock.first < 0 else min(lock.first, first)
        lock.last = max(lock.last, last)

    def _detach(self, st: _State) -> None:
        lock = st.lock
        if lock is None:
            return
        st.lock = None
        lock.refs -= 1
        if lock.refs == 0 and self._locks.get(lock.key.lock_id) is lock:
            del self._locks[lock.key.lock_id]
            self._effects.append(CancelLockTimer(lock.key))

    # ------------------------------------------------------------------ the cache

    def _floor_key(self, offset: int) -> int | None:
        i = bisect.bisect_right(self._keys, offset) - 1
        return self._keys[i] if i >= 0 else None

    def _sub_keys(self, lo: int, hi: int) -> list[int]:
        return self._keys[bisect.bisect_left(self._keys, lo) : bisect.bisect_right(self._keys, hi)]

    def _put(self, b: _Batch) -> None:
        if b.first not in self._batches:
            bisect.insort(self._keys, b.first)
        self._batches[b.first] = b


def _count_terminal(b: _Batch, start: int) -> int:
    if b.offsets is None:
        assert b.whole is not None
        if not b.whole.state.terminal:
            return 0
        return max(0, b.last - max(b.first, start) + 1)
    return sum(1 for o, st in b.offsets.items() if o >= start and st.state.terminal)


def _accumulate(acquired: list[AcquiredRecords], into: list[AcquiredRecords]) -> None:
    """``ShareFetchUtils.accumulateAcquiredRecords`` (4.4.0): records acquired one by one, contiguous
    and delivered as often, are answered as one range."""
    run: AcquiredRecords | None = None
    for r in acquired:
        if (
            run is not None
            and run.last_offset + 1 == r.first_offset
            and run.delivery_count == r.delivery_count
        ):
            run = AcquiredRecords(run.first_offset, r.last_offset, run.delivery_count)
            continue
        if run is not None:
            into.append(run)
        run = r
    if run is not None:
        into.append(run)


def _invalid_state(message: str) -> ShareError:
    return ShareError(ShareErrorCode.INVALID_RECORD_STATE, message)


def _validate_ack(ack: AcknowledgementBatch) -> ShareError | None:
    types = ack.acknowledge_types
    if ack.first_offset > ack.last_offset:
        return ShareError(
            ShareErrorCode.INVALID_REQUEST,
            f"Invalid acknowledgement batch: first offset {ack.first_offset} is past last offset "
            f"{ack.last_offset}",
        )
    if len(types) != 1 and len(types) != ack.last_offset - ack.first_offset + 1:
        return ShareError(
            ShareErrorCode.INVALID_REQUEST,
            f"Invalid acknowledge types: {len(types)} types for "
            f"{ack.last_offset - ack.first_offset + 1} offsets",
        )
    if any(t not in AcknowledgeType.__members__.values() for t in types):
        return ShareError(ShareErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
    return None


def _last_offset_of_batch_with(batches: Sequence[FetchedBatch], offset: int) -> int:
    """``lastOffsetFromBatchWithRequestOffset``: acquisition ends on a log batch's boundary."""
    previous: FetchedBatch | None = None
    for fb in batches:
        if offset >= fb.base_offset:
            previous = fb
            continue
        break
    if previous is not None and offset <= previous.last_offset:
        return previous.last_offset
    return offset


def _aborted_batches(
    batches: Sequence[FetchedBatch], aborted: Sequence[AbortedTransaction]
) -> list[FetchedBatch]:
    """``fetchAbortedTransactionRecordBatches``: the transactional batches of aborted transactions."""
    queue = [(a.first_offset, i, a.producer_id) for i, a in enumerate(aborted)]
    heapq.heapify(queue)
    aborted_producers: set[int] = set()
    out: list[FetchedBatch] = []
    for fb in batches:
        if fb.producer_id < 0:
            continue
        while queue and queue[0][0] <= fb.last_offset:
            aborted_producers.add(heapq.heappop(queue)[2])
        if fb.control and fb.abort_marker:
            aborted_producers.discard(fb.producer_id)
        elif fb.transactional and fb.producer_id in aborted_producers:
            out.append(fb)
    return out


def _filter_batches(acquired: list[AcquiredRecords], to_archive: list[FetchedBatch]) -> list[AcquiredRecords]:
    """``filterRecordBatchesFromAcquiredRecords``: cut the archived batches out of the acquired ranges."""
    if not to_archive:
        return acquired
    out: list[AcquiredRecords] = []
    archive_iter = iter(to_archive)
    current: FetchedBatch | None = next(archive_iter)
    pending: AcquiredRecords | None = None
    acquired_iter = iter(acquired)
    while True:
        if pending is None:
            pending = next(acquired_iter, None)
            if pending is None:
                break
        first, last, count = pending.first_offset, pending.last_offset, pending.delivery_count
        if current is None:
            out.append(pending)
            pending = None
            continue
        if last < current.base_offset:
            out.append(pending)
            pending = None
        if first <= current.last_offset and last >= current.base_offset:
            pending = None
            if first < current.base_offset:
                out.append(AcquiredRecords(first, current.base_offset - 1, count))
            if last > current.last_offset:
                pending = AcquiredRecords(current.last_offset + 1, last, count)
        if last > current.last_offset:
            current = next(archive_iter, None)
    return out
