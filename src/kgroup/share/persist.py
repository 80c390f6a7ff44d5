"""The share coordinator's durable state of share partitions, as ``__share_group_state`` keeps it
(Kafka 4.4.0's ``ShareCoordinatorShard``, ``PersisterStateBatchCombiner``), pure.

:meth:`ShareStateStore.initialize` writes a partition's first :class:`ShareSnapshot`
(``InitializeShareGroupState``); a share partition's :class:`~kgroup.share.partition.StateWrite` then
becomes one record: a :class:`ShareSnapshot` (the whole state) once
``share.coordinator.snapshot.update.records.per.snapshot`` updates have followed the last snapshot,
else a :class:`ShareUpdate` (the write's batches, a delta). Replaying the records in order rebuilds
every partition's state (:meth:`ShareStateStore.replay`), which :meth:`ShareStateStore.read` hands
to :meth:`SharePartition.initialize <kgroup.share.partition.SharePartition.initialize>` after a
restart. Acquired records are never written, so they come back Available (or, never written at all,
as a gap the partition refetches); acknowledged and archived records come back as they were.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgroup.share.partition import PersistedPartitionState, StateWrite
from kgroup.share.records import PersisterStateBatch

__all__ = [
    "FENCED_LEADER_EPOCH",
    "FENCED_STATE_EPOCH",
    "INVALID_REQUEST",
    "SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT",
    "ShareKey",
    "ShareSnapshot",
    "ShareStateRecord",
    "ShareStateStore",
    "ShareUpdate",
    "combine_state_batches",
]

#: ``share.coordinator.snapshot.update.records.per.snapshot``'s default
SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500
#: Kafka's error codes: a write to a partition never initialised, from an old leader, an old state epoch
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
FENCED_STATE_EPOCH = 124


@dataclass(frozen=True, slots=True, order=True)
class ShareKey:
    """``ShareSnapshotKey`` / ``ShareUpdateKey``: ``{GroupId, TopicId, Partition}``."""

    group_id: str
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """``ShareSnapshotValue`` (coordinator record type 0): the whole state of one share partition."""

    key: ShareKey
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[PersisterStateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    """``ShareUpdateValue`` (coordinator record type 1): a delta on the last snapshot."""

    key: ShareKey
    snapshot_epoch: int
    leader_epoch: int
    #: −1: the start offset is not updated
    start_offset: int
    delivery_complete_count: int
    batches: tuple[PersisterStateBatch, ...]


ShareStateRecord = ShareSnapshot | ShareUpdate


@dataclass(slots=True)
class _Offsets:
    """``ShareGroupOffset``: one partition's state as the coordinator holds it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[PersisterStateBatch, ...]


@dataclass(slots=True)
class ShareStateStore:
    """The share coordinator's soft state over ``__share_group_state``: write, replay, read."""

    updates_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT
    _state: dict[ShareKey, _Offsets] = field(default_factory=dict)
    _update_count: dict[ShareKey, int] = field(default_factory=dict)

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int, now_ms: int) -> ShareSnapshot:
        """``InitializeShareGroupState`` (the group coordinator initialises a share partition before
        anything is written for it): a snapshot with no batches, the next snapshot epoch, leader epoch
        0, the delivery-complete count 0 (−1 while the start offset is −1: set at the first read)."""
        current = self._state.get(key)
        record = ShareSnapshot(
            key=key,
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            state_epoch=state_epoch,
            leader_epoch=0,
            start_offset=start_offset,
            delivery_complete_count=-1 if start_offset == -1 else 0,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
            batches=(),
        )
        self.replay(record)
        return record

    def write(self, key: ShareKey, write: StateWrite, now_ms: int) -> tuple[ShareStateRecord | None, int]:
        """``writeState``: the record to append (already replayed here) and the error code (0: none;
        a refused write gets its error and no record)."""
        current = self._state.get(key)
        if current is None:
            # "Write operation on uninitialized share partition not allowed."
            return None, INVALID_REQUEST
        if write.leader_epoch != -1 and write.leader_epoch < current.leader_epoch:
            return None, FENCED_LEADER_EPOCH
        if write.state_epoch < current.state_epoch:
            return None, FENCED_STATE_EPOCH
        record = self._record_for(key, current, write, now_ms)
        self.replay(record)
        return record, 0

    def _record_for(
        self, key: ShareKey, current: _Offsets, write: StateWrite, now_ms: int
    ) -> ShareStateRecord:
        leader_epoch = write.leader_epoch if write.leader_epoch != -1 else current.leader_epoch
        # Kafka 4.4.0 (the jar): the start offset never goes back, and the delivery-complete count
        # follows the start offset the write was made at.
        start = max(write.start_offset, current.start_offset)
        if write.start_offset == current.start_offset:
            complete = max(write.delivery_complete_count, current.delivery_complete_count)
        elif write.start_offset < current.start_offset:
            complete = current.delivery_complete_count
        else:
            complete = write.delivery_complete_count
        if self._update_count.get(key, 0) >= self.updates_per_snapshot:
            return ShareSnapshot(
                key=key,
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=leader_epoch,
                start_offset=start,
                delivery_complete_count=complete,
                create_timestamp=now_ms,
                write_timestamp=now_ms,
                batches=combine_state_batches((*current.batches, *write.batches), start),
            )
        return ShareUpdate(
            key=key,
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start,
            delivery_complete_count=complete,
            batches=combine_state_batches(write.batches, start),
        )

    def replay(self, record: ShareStateRecord) -> None:
        """Apply one record of ``__share_group_state`` (``ShareCoordinatorShard.replay``)."""
        key = record.key
        if isinstance(record, ShareSnapshot):
            self._state[key] = _Offsets(
                record.snapshot_epoch,
                record.state_epoch,
                record.leader_epoch,
                record.start_offset,
                record.delivery_complete_count,
                record.batches,
            )
            if self._update_count.get(key, 0) >= self.updates_per_snapshot:
                self._update_count[key] = 0
            return
        current = self._state.get(key)
        if current is None:
            self._state[key] = _Offsets(
                record.snapshot_epoch,
                0,
                record.leader_epoch,
                record.start_offset,
                record.delivery_complete_count,
                record.batches,
            )
        else:
            start = current.start_offset if record.start_offset == -1 else record.start_offset
            current.batches = combine_state_batches((*current.batches, *record.batches), start)
            current.start_offset = start
            if record.leader_epoch != -1:
                current.leader_epoch = record.leader_epoch
            current.delivery_complete_count = record.delivery_complete_count
        self._update_count[key] = self._update_count.get(key, 0) + 1  # 4.4.0: the first counts 1

    def replay_tombstone(self, key: ShareKey) -> None:
        """A null value for ``key`` (``DeleteShareGroupState``): the partition's state is gone."""
        self._state.pop(key, None)
        self._update_count.pop(key, None)

    def replay_all(self, records: Iterable[ShareStateRecord]) -> None:
        for record in records:
            self.replay(record)

    def read(self, key: ShareKey) -> PersistedPartitionState:
        """``readState``: what a share partition loads (start offset −1: never initialised)."""
        current = self._state.get(key)
        if current is None:
            return PersistedPartitionState()
        return PersistedPartitionState(current.start_offset, current.state_epoch, current.batches)

    def summary(self, key: ShareKey) -> tuple[int, int, int] | None:
        """``readStateSummary``: (start offset, delivery-complete count, leader epoch), or ``None`` for
        a partition with no state."""
        current = self._state.get(key)
        if current is None:
            return None
        return current.start_offset, current.delivery_complete_count, current.leader_epoch

    def keys(self) -> list[ShareKey]:
        return sorted(self._state)

    def has(self, key: ShareKey) -> bool:
        """Whether the partition has state (was initialised), whatever its start offset."""
        return key in self._state


def combine_state_batches(
    batches: Iterable[PersisterStateBatch], start_offset: int
) -> tuple[PersisterStateBatch, ...]:
    """``PersisterStateBatchCombiner``: drop what lies before ``start_offset`` (−1: keep all), resolve
    overlaps (the higher delivery count wins, then the higher state: a later state of the same
    delivery), and merge neighbours with the same state and count. The result is sorted and disjoint."""
    items: list[PersisterStateBatch] = []
    for b in batches:
        if start_offset != -1:
            if b.last_offset < start_offset:
                continue
            if b.first_offset < start_offset:
                b = PersisterStateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        items.append(b)
    if not items:
        return ()
    bounds = sorted({b.first_offset for b in items} | {b.last_offset + 1 for b in items})
    pieces: list[PersisterStateBatch] = []
    for lo, hi in itertools.pairwise(bounds):
        covering = [b for b in items if b.first_offset <= lo and b.last_offset >= hi - 1]
        best = max(covering, key=lambda b: (b.delivery_count, b.delivery_state), default=None)
        if best is None:
            continue
        piece = PersisterStateBatch(lo, hi - 1, best.delivery_state, best.delivery_count)
        if (
            pieces
            and pieces[-1].last_offset + 1 == lo
            and pieces[-1].delivery_state == piece.delivery_state
            and pieces[-1].delivery_count == piece.delivery_count
        ):
            prev = pieces[-1]
            pieces[-1] = PersisterStateBatch(
                prev.first_offset, piece.last_offset, prev.delivery_state, prev.delivery_count
            )
        else:
            pieces.append(piece)
    return tuple(pieces)
