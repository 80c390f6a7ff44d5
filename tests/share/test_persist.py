"""The share coordinator's records (``__share_group_state``'s snapshots and updates), their replay, and
a share partition rebuilt from them after a ``kill -9``: acknowledged and archived records, the SPSO
and the persisted delivery counts come back; acquired records come back Available, never lost."""

from __future__ import annotations

from pathlib import Path

from tests.share.harness import KEY, Host, ack, batches, ranges

from kgroup.share import (
    PersisterStateBatch,
    RecordState,
    ShareSnapshot,
    ShareStateRecord,
    ShareStateStore,
    ShareUpdate,
    StateWrite,
    combine_state_batches,
)
from kgroup.share.persist import FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST

A, Q, K, X = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ACCEPT, RELEASE, REJECT = 1, 2, 3
M1, M2 = "member-1", "member-2"


def write(
    start: int, *b: tuple[int, int, int, int], leader_epoch: int = 0, state_epoch: int = 0
) -> StateWrite:
    return StateWrite(start, 0, state_epoch, leader_epoch, tuple(PersisterStateBatch(*x) for x in b))


def test_initialize_then_updates_until_the_limit_then_a_snapshot() -> None:
    """ShareCoordinatorShard: InitializeShareGroupState writes the first snapshot; each write is then an
    update until ``updates_per_snapshot`` updates followed the snapshot, then a snapshot with the next
    snapshot epoch (Kafka 4.4.0 counts the first update 1; the older sources counted it 0)."""
    store = ShareStateStore(updates_per_snapshot=2)
    assert store.write(KEY, write(0), 0) == (None, INVALID_REQUEST)
    first = store.initialize(KEY, state_epoch=0, start_offset=-1, now_ms=0)
    assert (first.snapshot_epoch, first.start_offset, first.delivery_complete_count, first.batches) == (
        0,
        -1,
        -1,
        (),
    )
    kinds = []
    for i in range(6):
        record, error = store.write(KEY, write(i, (i, i, 2, 1)), now_ms=i)
        assert error == 0 and record is not None
        kinds.append((type(record).__name__, record.snapshot_epoch))
    assert kinds == [
        ("ShareUpdate", 0),
        ("ShareUpdate", 0),
        ("ShareSnapshot", 1),
        ("ShareUpdate", 1),
        ("ShareUpdate", 1),
        ("ShareSnapshot", 2),
    ]
    state = store.read(KEY)
    assert state.start_offset == 5 and state.batches == (PersisterStateBatch(5, 5, 2, 1),)


def test_snapshot_folds_the_updates() -> None:
    store = ShareStateStore(updates_per_snapshot=1)
    store.initialize(KEY, 0, 0, 0)
    writes = (write(0, (0, 9, 0, 1)), write(0, (3, 4, 2, 1)), write(0, (0, 2, 4, 2)))
    records = [store.write(KEY, w, 0)[0] for w in writes]
    assert [type(r) for r in records] == [ShareUpdate, ShareSnapshot, ShareUpdate]
    snap = records[1]
    assert isinstance(snap, ShareSnapshot) and snap.snapshot_epoch == 1
    assert snap.batches == (
        PersisterStateBatch(0, 2, 0, 1),
        PersisterStateBatch(3, 4, 2, 1),
        PersisterStateBatch(5, 9, 0, 1),
    )
    assert store.read(KEY).batches == (
        PersisterStateBatch(0, 2, 4, 2),
        PersisterStateBatch(3, 4, 2, 1),
        PersisterStateBatch(5, 9, 0, 1),
    )


def test_tombstone_deletes_the_state() -> None:
    store = ShareStateStore()
    store.initialize(KEY, 0, 0, 0)
    store.write(KEY, write(0, (0, 4, 2, 1)), 0)
    store.replay_tombstone(KEY)
    assert store.read(KEY).start_offset == -1
    assert store.write(KEY, write(0), 0) == (None, INVALID_REQUEST)


def test_start_offset_never_goes_back() -> None:
    """Kafka 4.4.0: a write made at an older start offset keeps the newer one (and its count)."""
    store = ShareStateStore()
    store.initialize(KEY, 0, 0, 0)
    store.write(KEY, StateWrite(10, 3, 0, 0, ()), 0)
    record, _ = store.write(KEY, StateWrite(5, 1, 0, 0, (PersisterStateBatch(5, 12, 2, 1),)), 0)
    assert (
        isinstance(record, ShareUpdate) and record.start_offset == 10 and record.delivery_complete_count == 3
    )
    assert record.batches == (PersisterStateBatch(10, 12, 2, 1),)
    assert store.read(KEY).start_offset == 10


def test_replay_rebuilds_the_same_state() -> None:
    store = ShareStateStore(updates_per_snapshot=3)
    records: list[ShareStateRecord] = [store.initialize(KEY, 0, 0, 0)]
    for i in range(10):
        record, _ = store.write(KEY, write(i, (i, i + 3, (0, 2, 4)[i % 3], 1 + i % 2)), i)
        assert record is not None
        records.append(record)
    again = ShareStateStore(updates_per_snapshot=3)
    again.replay_all(records)
    assert again.read(KEY) == store.read(KEY)


def test_fenced_writes_are_refused() -> None:
    store = ShareStateStore()
    store.initialize(KEY, 2, 0, 0)
    store.write(KEY, write(0, leader_epoch=5, state_epoch=2), 0)
    assert store.write(KEY, write(0, leader_epoch=4, state_epoch=2), 0) == (None, FENCED_LEADER_EPOCH)
    assert store.write(KEY, write(0, leader_epoch=5, state_epoch=1), 0) == (None, FENCED_STATE_EPOCH)


def test_combine_prunes_resolves_overlaps_and_merges() -> None:
    """PersisterStateBatchCombiner: before the start offset dropped (a straddling batch cut), on an
    overlap the higher delivery count wins, then the later state; equal neighbours merged."""
    out = combine_state_batches(
        [
            PersisterStateBatch(0, 9, 0, 1),
            PersisterStateBatch(2, 3, 2, 1),
            PersisterStateBatch(3, 6, 0, 2),
            PersisterStateBatch(7, 9, 0, 1),
            PersisterStateBatch(12, 14, 4, 1),
        ],
        start_offset=1,
    )
    assert out == (
        PersisterStateBatch(1, 1, 0, 1),
        PersisterStateBatch(2, 2, 2, 1),
        PersisterStateBatch(3, 6, 0, 2),
        PersisterStateBatch(7, 9, 0, 1),
        PersisterStateBatch(12, 14, 4, 1),
    )
    assert combine_state_batches([PersisterStateBatch(0, 4, 2, 1)], start_offset=5) == ()


def test_restart_keeps_acknowledgements_and_brings_acquired_back_available() -> None:
    h = Host()
    h.acquire(M1, batches((0, 10)))
    h.acquire(M2, batches((10, 5)))
    h.acknowledge(M1, ack(0, 4, *([ACCEPT] * 5)))
    assert h.sp.start_offset == 5
    h.restart()
    assert h.sp.start_offset == 5 and h.sp.next_fetch_offset() == 5
    r = h.acquire(M2, batches((0, 10), (10, 5)), fetch_offset=5)
    # what was acquired and never written comes back (its delivery was never persisted)
    assert ranges(r.acquired) == [(5, 14, 1)]


def test_restart_refetches_an_unwritten_gap_before_acknowledged_records() -> None:
    """testMaybeInitialize with a gap: 0-4 acquired (unwritten), 5-9 accepted; after the restart 0-4
    are fetched again, 5-9 never."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acquire(M2, batches((5, 5)))
    h.acknowledge(M2, ack(5, 9, ACCEPT))
    h.restart()
    assert (h.sp.start_offset, h.sp.end_offset, h.sp.next_fetch_offset()) == (0, 9, 0)
    r = h.acquire(M1, batches((0, 5), (5, 5), (10, 5)))
    assert ranges(r.acquired) == [(0, 4, 1), (10, 14, 1)]
    assert h.acknowledge(M1, ack(0, 4, ACCEPT), ack(10, 14, ACCEPT)).error is None
    assert h.sp.start_offset == 15


def test_restart_keeps_delivery_counts_and_archives() -> None:
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 4, RELEASE, RELEASE, REJECT, RELEASE, RELEASE))
    h.acquire(M1, batches((0, 5)))
    h.advance(30000)
    h.restart()
    assert [h.sp.record_state(o) for o in range(5)] == [(A, 2, "")] * 2 + [(X, 1, "")] + [(A, 2, "")] * 2
    r = h.acquire(M2, batches((0, 5)))
    # the persisted batches are the cache's batches now: 0-1 and 3-4 go whole
    assert ranges(r.acquired) == [(0, 1, 3), (3, 4, 3)]


def test_stale_member_cannot_acknowledge_after_restart() -> None:
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 1, ACCEPT))
    h.restart()
    res = h.acknowledge(M1, ack(2, 4, ACCEPT))
    assert res.error is not None
    assert ranges(h.acquire(M2, batches((0, 5))).acquired) == [(2, 4, 1)]


def test_restored_batch_holding_the_spso_is_not_cached_again() -> None:
    """After a restart the cache holds 3-4 with 3 acknowledged and the SPSO at 4; the fetch from 4
    returns the log batch 1-4. Kafka 4.4.0's ``acquire`` looks at the cached batches from the log
    batch's base, so 4 alone is acquired (the sources before 4.4 cached 1-4 anew: the SPSO back to 1
    and 1-3 delivered again; the property test found it against them)."""
    from kgroup.share import FetchedBatch, SharePartitionConfig

    log = [FetchedBatch(0, 0), FetchedBatch(1, 4)]
    h = Host(
        SharePartitionConfig(max_in_flight_records=5, max_delivery_count=3, record_lock_duration_ms=15000)
    )
    h.acquire("a", log, max_fetch=3, record_limit=True)  # 0-2 acquired, 3-4 cached available
    h.acquire("b", log[1:], max_fetch=1)  # 3-4
    h.acknowledge("a", ack(2, 2, ACCEPT))
    h.advance(15000)
    h.restart()
    assert [b[:2] for b in h.sp.cached_batches()] == [(0, 1), (2, 2), (3, 4)]
    got = h.acquire("a", log)
    assert ranges(got.acquired) == [(0, 1, 2), (3, 4, 2)]
    h.advance(15000)
    h.acquire("d", log)
    h.acknowledge("d", ack(0, 0, ACCEPT))
    h.acquire("d", log)  # 1
    h.acknowledge("d", ack(1, 1, ACCEPT))
    assert ranges(h.acquire("d", log[1:]).acquired) == [(3, 3, 3)]
    h.acknowledge("d", ack(3, 3, ACCEPT))
    assert h.sp.start_offset == 4
    assert ranges(h.acquire("d", log[1:], fetch_offset=4).acquired) == [(4, 4, 3)]
    assert h.sp.start_offset == 4


def test_log_batch_starting_before_the_spso_is_acquired_from_the_spso() -> None:
    """The SPSO persisted inside a log batch (its head accepted), nothing cached at it after the
    restart: Kafka 4.4.0 acquires the log batch from the SPSO, never from its base."""
    from kgroup.share import FetchedBatch

    log = [FetchedBatch(5, 14), FetchedBatch(15, 19)]
    h = Host(start_offset=5)
    h.acquire("a", log[:1])
    h.acquire("b", log[1:])
    h.acknowledge("a", ack(5, 9, ACCEPT))
    h.acknowledge("b", ack(15, 19, ACCEPT))
    assert h.sp.start_offset == 10
    h.restart()
    assert (h.sp.start_offset, h.sp.next_fetch_offset()) == (10, 10)
    got = h.acquire("c", log[:1])  # the log read from 10 returns the batch holding it: 5-14
    assert ranges(got.acquired) == [(10, 14, 1)]
    assert h.sp.start_offset == 10


def _batches(text: str) -> list[PersisterStateBatch]:
    if text == "-":
        return []
    return [PersisterStateBatch(*(int(x) for x in part.split(","))) for part in text.split(";")]


def test_combine_is_kafkas_combiner() -> None:
    """400 random cases against Kafka 4.4.0's own PersisterStateBatchCombiner
    (``share_state_combiner.txt``, printed by ``ShareStateCombiner.java``)."""
    lines = (Path(__file__).parent / "share_state_combiner.txt").read_text().splitlines()
    assert len(lines) == 400
    for line in lines:
        start, so_far, fresh, combined = line.split("\t")
        got = combine_state_batches([*_batches(so_far), *_batches(fresh)], int(start))
        assert list(got) == _batches(combined), line
