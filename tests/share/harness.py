"""A small host for the pure share partition in tests: a log of record batches, a timer queue that
applies the partition's lock effects, and a share coordinator store the writes go to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgroup.share import (
    AcknowledgementBatch,
    AcknowledgeResult,
    AcquiredRecords,
    AcquireResult,
    CancelLockTimer,
    FetchedBatch,
    LockKey,
    ScheduleLockTimer,
    ShareKey,
    SharePartition,
    SharePartitionConfig,
    ShareStateRecord,
    ShareStateStore,
)
from kgroup.share.codec import decode_share_record, encode_share_record

GROUP, TOPIC, PARTITION = "g", "t", 0
KEY = ShareKey(GROUP, "mUQ0Mkg0S6uUSe3pNnvU2A", PARTITION)


def batches(*ranges: tuple[int, int]) -> list[FetchedBatch]:
    """Log batches ``(base, count)``."""
    return [FetchedBatch(base, base + count - 1) for base, count in ranges]


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def ranges(acquired: Sequence[AcquiredRecords]) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in acquired]


@dataclass
class Host:
    """Owns the clock, the timers and the share coordinator's state for one share partition."""

    config: SharePartitionConfig = field(default_factory=SharePartitionConfig)
    start_offset: int = 0
    now: int = 0
    timers: dict[LockKey, int] = field(default_factory=dict)
    store: ShareStateStore = field(default_factory=ShareStateStore)
    #: the records appended to ``__share_group_state``, in order
    records: list[ShareStateRecord] = field(default_factory=list)
    sp: SharePartition = field(init=False)

    def __post_init__(self) -> None:
        # the group coordinator initialises the share partition's state (start offset −1: not yet set)
        self.records.append(self.store.initialize(KEY, 0, -1, self.now))
        self.sp = SharePartition(GROUP, TOPIC, PARTITION, self.config)
        assert self.sp.initialize(self.store.read(KEY), self.start_offset) is None

    def apply(self, effects: Sequence[object]) -> None:
        for e in effects:
            if isinstance(e, ScheduleLockTimer):
                self.timers[e.key] = e.deadline_ms
            elif isinstance(e, CancelLockTimer):
                self.timers.pop(e.key, None)
            else:  # pragma: no cover
                raise AssertionError(e)

    def persist(self, result: AcknowledgeResult) -> AcknowledgeResult:
        self.apply(result.effects)
        if result.write is not None:
            record, error = self.store.write(KEY, result.write, self.now)
            assert error == 0 and record is not None
            self.records.append(record)
        return result

    def acquire(
        self,
        member: str,
        log: Sequence[FetchedBatch],
        max_fetch: int = 500,
        fetch_offset: int | None = None,
        **kw: object,
    ) -> AcquireResult:
        offset = self.sp.next_fetch_offset() if fetch_offset is None else fetch_offset
        result = self.sp.acquire(member, self.now, offset, log, max_fetch_records=max_fetch, **kw)  # type: ignore[arg-type]
        self.apply(result.effects)
        return result

    def acknowledge(self, member: str, *acks: AcknowledgementBatch) -> AcknowledgeResult:
        return self.persist(self.sp.acknowledge(member, self.now, acks))

    def release(self, member: str) -> AcknowledgeResult:
        return self.persist(self.sp.release_acquired_records(member))

    def advance(self, ms: int) -> None:
        """Move the clock, firing due timers in deadline order (as the host's timer wheel would)."""
        self.now += ms
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= self.now)
            if not due:
                return
            _deadline, key = due[0]
            del self.timers[key]
            self.persist(self.sp.on_lock_timeout(self.now, key))

    def restart(self) -> None:
        """``kill -9``: the partition, the timers and the coordinator's soft state are gone; the records
        appended to ``__share_group_state`` stay and are replayed."""
        self.store = ShareStateStore(self.store.updates_per_snapshot)
        for record in self.records:  # through the bytes Kafka writes
            decoded = decode_share_record(*encode_share_record(record))
            assert decoded == record
            self.store.replay(record)
        records_state = self.store.read(KEY)
        self.timers.clear()
        self.sp = SharePartition(GROUP, TOPIC, PARTITION, self.config)
        assert self.sp.initialize(records_state, self.start_offset) is None
