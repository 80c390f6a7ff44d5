"""The share partition against the behaviours Kafka's ``SharePartitionTest`` pins down (each test names
the Kafka test it reproduces): acquisition, acknowledgement of each type, lock timeouts, the
delivery-count limit and its throttling, the in-flight cap, the SPSO, release on leave, the log start
offset, read_committed, RENEW."""

from __future__ import annotations

import pytest
from tests.share.harness import Host, ack, batches, ranges

from kgroup.share import (
    AbortedTransaction,
    AcknowledgeType,
    FetchedBatch,
    IsolationLevel,
    PartitionState,
    PersistedPartitionState,
    PersisterStateBatch,
    RecordState,
    ShareErrorCode,
    SharePartition,
    SharePartitionConfig,
)

A, Q, K, X = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ACCEPT, RELEASE, REJECT, RENEW, GAP = 1, 2, 3, 4, 0
M1, M2 = "member-1", "member-2"
LOCK = 30000


def offsets(h: Host, first: int, last: int) -> list[tuple[RecordState, int, str] | None]:
    return [h.sp.record_state(o) for o in range(first, last + 1)]


# ---------------------------------------------------------------- acquire


def test_acquire_single_and_multiple_records() -> None:
    """testAcquireSingleRecord / testAcquireMultipleRecords: a new batch is acquired whole, delivery 1,
    the SPSO set to its first offset, the next fetch after it."""
    h = Host()
    r = h.acquire(M1, batches((10, 5)))
    assert ranges(r.acquired) == [(10, 14, 1)] and r.count == 5
    assert h.sp.start_offset == 10 and h.sp.end_offset == 14 and h.sp.next_fetch_offset() == 15
    assert h.sp.batch_state(10) == (Q, 1, M1)
    assert h.timers == {next(iter(h.timers)): LOCK}


def test_acquire_same_batch_again_acquires_nothing() -> None:
    """testAcquireSameBatchAgain."""
    h = Host()
    h.acquire(M1, batches((10, 5)))
    r = h.acquire(M2, batches((10, 5)), fetch_offset=10)
    assert r.acquired == [] and r.count == 0


def test_max_fetch_records_is_soft_and_ends_on_a_log_batch() -> None:
    """testAcquireWithMultipleBatchesAndMaxFetchRecords: 10 records asked, batches 10-14, 15-29, 30-44:
    the batch holding the 10th record is acquired whole, the third is not."""
    h = Host()
    r = h.acquire(M1, batches((10, 5), (15, 15), (30, 15)), max_fetch=10, fetch_offset=10)
    assert ranges(r.acquired) == [(10, 29, 1)] and r.count == 20
    assert h.sp.next_fetch_offset() == 30


def test_batch_size_splits_acquired_records_on_log_batches() -> None:
    h = Host()
    r = h.acquire(M1, batches((0, 5), (5, 5), (10, 5)), batch_size=5)
    assert ranges(r.acquired) == [(0, 4, 1), (5, 9, 1), (10, 14, 1)]
    assert [b[:2] for b in h.sp.cached_batches()] == [(0, 4), (5, 9), (10, 14)]


def test_record_limit_mode_acquires_exactly_and_leaves_the_rest_available() -> None:
    """ShareFetch v2's record-limit mode: 10-19 in one log batch, 5 asked: 10-14 acquired, 15-19
    cached Available with no delivery yet, the next fetch at 15."""
    h = Host()
    r = h.acquire(M1, batches((10, 10)), max_fetch=5, record_limit=True, fetch_offset=10)
    assert ranges(r.acquired) == [(10, 14, 1)] and r.count == 5
    assert offsets(h, 14, 15) == [(Q, 1, M1), (A, 0, "")]
    assert h.sp.next_fetch_offset() == 15
    r = h.acquire(M2, batches((10, 10)), max_fetch=5, record_limit=True, fetch_offset=15)
    assert ranges(r.acquired) == [(15, 19, 1)]


def test_next_fetch_offset_with_multiple_consumers() -> None:
    """testNextFetchOffsetWithMultipleConsumers."""
    h = Host(SharePartitionConfig(max_in_flight_records=100))
    h.acquire(M1, batches((0, 3)))
    assert h.sp.next_fetch_offset() == 3
    assert h.acknowledge(M1, ack(0, 2, RELEASE)).error is None
    assert h.sp.next_fetch_offset() == 0
    h.acquire(M2, batches((3, 2)), fetch_offset=3)
    assert h.sp.next_fetch_offset() == 0
    h.acquire(M1, batches((0, 3)))
    assert h.sp.next_fetch_offset() == 5
    h.acknowledge(M2, ack(3, 4, RELEASE))
    assert h.sp.next_fetch_offset() == 3


def test_reacquire_subset_with_another_member() -> None:
    """testReacquireSubsetWithAnotherMember: released records are reacquired by another member, one
    offset at a time inside a per-offset batch; gaps stay archived, unreleased records stay held."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    h.acquire(M1, batches((10, 12)))
    h.acknowledge(M1, ack(5, 11, RELEASE), ack(12, 13, GAP), ack(14, 15, RELEASE), ack(17, 20, RELEASE))
    h.acquire(M2, batches((5, 5)), fetch_offset=5)
    assert h.sp.next_fetch_offset() == 10
    h.acquire(M2, batches((10, 7)))
    assert h.sp.next_fetch_offset() == 17
    assert h.sp.batch_state(5) == (Q, 2, M2)
    assert offsets(h, 10, 21) == [
        (Q, 2, M2),
        (Q, 2, M2),
        (X, 1, ""),
        (X, 1, ""),
        (Q, 2, M2),
        (Q, 2, M2),
        (Q, 1, M1),
        *[(A, 1, "")] * 4,
        (Q, 1, M1),
    ]


# ---------------------------------------------------------------- in-flight cap


def test_max_in_flight_records_caps_new_acquisition() -> None:
    """testCanAcquireRecordsWithCachedDataAndLimitReached: with 10 locks, 0-4 then 5-9 fill the window;
    nothing more is acquired until the SPSO moves."""
    h = Host(SharePartitionConfig(max_in_flight_records=10))
    log = batches((0, 5), (5, 5), (10, 5))
    assert ranges(h.acquire(M1, log[:1]).acquired) == [(0, 4, 1)]
    r = h.acquire(M1, log[1:])
    assert ranges(r.acquired) == [(5, 9, 1)]
    assert h.sp.in_flight_records == 10 and not h.sp.can_acquire_records()
    assert h.acquire(M2, log[2:]).acquired == []
    assert h.acknowledge(M1, ack(0, 4, ACCEPT)).error is None
    assert h.sp.start_offset == 5 and h.sp.can_acquire_records()
    assert ranges(h.acquire(M2, log[2:]).acquired) == [(10, 14, 1)]


def test_released_records_are_refetched_inside_a_full_window() -> None:
    """lastOffsetAndMaxRecordsToAcquire: at the cap, a fetch from inside the window re-acquires what was
    released but never beyond the SPEO."""
    h = Host(SharePartitionConfig(max_in_flight_records=10))
    h.acquire(M1, batches((0, 10)))
    h.acknowledge(M1, ack(0, 9, *([RELEASE] + [ACCEPT] * 9)))
    assert h.sp.in_flight_records == 10
    assert h.sp.next_fetch_offset() == 0 and h.sp.can_acquire_records()
    r = h.acquire(M2, batches((0, 10), (10, 10)), fetch_offset=0)
    assert ranges(r.acquired) == [(0, 0, 2)]
    assert h.sp.end_offset == 9 and not h.sp.can_acquire_records()


# ---------------------------------------------------------------- acknowledge


def test_acknowledge_accept_moves_spso_and_clears_cache() -> None:
    """testMaybeUpdateCachedStateWhenAcknowledgementTypeAccept."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    r = h.acknowledge(M1, ack(0, 4, ACCEPT))
    assert r.error is None and r.write is not None
    assert r.write.batches == (PersisterStateBatch(0, 4, 2, 1),)
    assert r.write.start_offset == 0  # written before the SPSO moves, as Kafka does
    assert h.sp.start_offset == 5 and h.sp.end_offset == 5 and h.sp.cached_batches() == []
    assert h.timers == {}


def test_acknowledge_reject_archives_and_release_makes_available() -> None:
    """testMaybeUpdateCachedStateWhenAcknowledgementTypeReject / ...Release."""
    h = Host()
    h.acquire(M1, batches((0, 5), (5, 5)), batch_size=5)
    h.acknowledge(M1, ack(0, 4, REJECT), ack(5, 9, RELEASE))
    assert h.sp.start_offset == 5
    assert h.sp.batch_state(5) == (A, 1, "")
    assert h.sp.next_fetch_offset() == 5


def test_acknowledge_with_gap_offsets() -> None:
    """testAcknowledgeMultipleRecordBatchWithGapOffsets: per-offset types, gaps (0) archived."""
    h = Host()
    h.acquire(M1, [FetchedBatch(5, 6)])
    assert h.sp.next_fetch_offset() == 7
    r = h.acquire(M1, [FetchedBatch(10, 14), FetchedBatch(18, 18)], fetch_offset=7)
    assert ranges(r.acquired) == [(10, 18, 1)]
    assert h.sp.next_fetch_offset() == 19
    res = h.acknowledge(M1, ack(5, 6, RELEASE), ack(10, 18, 2, 2, 2, 2, 2, 0, 0, 0, 1))
    assert res.error is None
    assert h.sp.next_fetch_offset() == 5
    assert h.sp.batch_state(5) == (A, 1, "")
    assert offsets(h, 10, 18) == [(A, 1, "")] * 5 + [(X, 1, "")] * 3 + [(K, 1, "")]


def test_acknowledge_rolls_back_the_whole_request_on_error() -> None:
    """testAcknowledgeRollbackWithFullBatchError: a duplicate batch fails the request; every batch of
    it stays Acquired."""
    h = Host()
    for base in (5, 10, 15):
        h.acquire(M1, batches((base, 5)))
    res = h.acknowledge(M1, ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(15, 19, ACCEPT), ack(15, 19, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    assert res.write is None
    assert [h.sp.batch_state(k) for k in (5, 10, 15)] == [(Q, 1, M1)] * 3
    assert len(h.timers) == 3


def test_acknowledge_subset_rollback_keeps_offsets_acquired() -> None:
    """testAcknowledgeRollbackWithSubsetError."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    h.acquire(M1, batches((10, 5)))
    res = h.acknowledge(M1, ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(12, 14, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    assert h.sp.batch_state(5) == (Q, 1, M1)
    assert offsets(h, 10, 14) == [(Q, 1, M1)] * 5


def test_acknowledge_by_another_member_is_invalid_record_state() -> None:
    """testAcknowledgeWithAnotherMember / testAcknowledgeSubsetWithAnotherMember."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    res = h.acknowledge(M2, ack(5, 9, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    res = h.acknowledge(M2, ack(6, 7, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    assert offsets(h, 5, 9) == [(Q, 1, M1)] * 5


def test_acknowledge_out_of_range_cached_data() -> None:
    """testAcknowledgeOutOfRangeCachedData: nothing cached is INVALID_RECORD_STATE; past the cache is
    INVALID_REQUEST."""
    h = Host()
    res = h.acknowledge(M1, ack(0, 15, REJECT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    h.acquire(M1, batches((5, 5)))
    res = h.acknowledge(M1, ack(20, 25, REJECT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_REQUEST


def test_acknowledge_out_of_range_cached_data_first_batch() -> None:
    """testAcknowledgeOutOfRangeCachedDataFirstBatch: a batch reaching past its cached batches fails the
    request (INVALID_REQUEST); once 5-10 is cached the same request succeeds."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acquire(M1, batches((20, 5)), fetch_offset=20)
    request = (ack(0, 10, ACCEPT), ack(20, 24, ACCEPT))
    res = h.acknowledge(M1, *request)
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_REQUEST
    assert [h.sp.batch_state(k) for k in (0, 20)] == [(Q, 1, M1)] * 2
    assert ranges(h.acquire(M1, batches((5, 6)), fetch_offset=5).acquired) == [(5, 10, 1)]
    assert h.acknowledge(M1, *request).error is None


def test_acknowledge_before_spso_or_not_acquired() -> None:
    """Batches wholly before the SPSO are skipped; an offset no longer acquired is INVALID_RECORD_STATE
    (testAcknowledgeWhenOffsetNotAcquired)."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    assert h.acknowledge(M1, ack(0, 3, ACCEPT)).error is None
    h.acknowledge(M1, ack(5, 9, RELEASE))
    res = h.acknowledge(M1, ack(5, 9, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
    res = h.acknowledge(M1, ack(6, 7, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE


@pytest.mark.parametrize(
    ("batch", "why"),
    [(ack(5, 9, 7), "type"), (ack(5, 9, 1, 1), "count"), (ack(9, 5, 1), "order")],
)
def test_acknowledge_bad_batches_are_invalid_request(batch: object, why: str) -> None:
    h = Host()
    h.acquire(M1, batches((5, 5)))
    res = h.sp.acknowledge(M1, 0, [batch])  # type: ignore[list-item]
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_REQUEST, why


def test_acknowledge_below_spso_is_ignored() -> None:
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 4, ACCEPT))
    res = h.acknowledge(M1, ack(0, 4, ACCEPT))
    assert res.error is None and res.write is None


def test_renew_extends_the_lock_and_stales_the_old_timer() -> None:
    """KIP-1222's RENEW: the lock is re-armed from now; nothing is persisted; the old timer, if it
    fires anyway, does nothing."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    (old_key,) = h.timers
    h.now = 20000
    res = h.acknowledge(M1, ack(0, 4, RENEW))
    assert res.error is None and res.write is None
    (new_key,) = h.timers
    assert new_key != old_key and h.timers[new_key] == 20000 + LOCK
    assert h.sp.on_lock_timeout(LOCK, old_key).write is None
    h.advance(LOCK - 20000 + 1)
    assert h.sp.batch_state(0) == (Q, 1, M1)
    h.advance(20000)
    assert h.sp.batch_state(0) == (A, 1, "")


def test_renew_disabled_is_invalid_record_state() -> None:
    """``share.renew.acknowledge.enable=false``: RENEW fails the request (Kafka 4.4.0's message)."""
    h = Host(SharePartitionConfig(renew_acknowledge_enabled=False))
    h.acquire(M1, batches((0, 5)))
    for batch in (ack(0, 4, RENEW), ack(0, 4, ACCEPT, RENEW, ACCEPT, ACCEPT, ACCEPT)):
        res = h.acknowledge(M1, batch)
        assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE
        assert res.error.message == "Renewing acquisition locks is not enabled for the group."
    assert offsets(h, 0, 4) == [(Q, 1, M1)] * 5


def test_leave_skips_offsets_another_member_holds() -> None:
    """Kafka 4.4.0's releaseAcquiredRecordsForPerOffsetBatch skips another member's offset and goes on
    (the sources before it stopped at it, keeping the leaver's later records locked)."""
    h = Host()
    h.acquire(M1, batches((0, 10)))
    h.acknowledge(M1, ack(0, 9, *([ACCEPT] * 3 + [RELEASE] * 2 + [RENEW] * 5)))
    assert ranges(h.acquire(M2, batches((0, 10)), fetch_offset=3).acquired) == [(3, 4, 2)]
    res = h.release(M1)
    assert res.write is not None and [(b.first_offset, b.delivery_state) for b in res.write.batches] == [
        (o, 0) for o in range(5, 10)
    ]
    assert offsets(h, 3, 9) == [(Q, 2, M2)] * 2 + [(A, 1, "")] * 5


def test_renew_per_offset_keeps_the_others_on_the_old_lock() -> None:
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.now = 10000
    assert h.acknowledge(M1, ack(0, 4, RENEW, ACCEPT, RENEW, ACCEPT, ACCEPT)).error is None
    h.advance(LOCK - 10000)
    assert offsets(h, 0, 4) == [(Q, 1, M1), (K, 1, ""), (Q, 1, M1), (K, 1, ""), (K, 1, "")]
    h.advance(10000)
    assert [s[0] if s else None for s in offsets(h, 0, 4)] == [A, K, A, K, K]


# ---------------------------------------------------------------- lock timeout and delivery limit


def test_lock_timeout_makes_records_available_with_their_delivery_count() -> None:
    """testAcquisitionLockForAcquiringSingleRecord and the lock timeout path."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.advance(LOCK - 1)
    assert h.sp.batch_state(0) == (Q, 1, M1)
    h.advance(1)
    assert h.sp.batch_state(0) == (A, 1, "") and h.timers == {}
    assert h.sp.next_fetch_offset() == 0
    r = h.acquire(M2, batches((0, 5)))
    assert ranges(r.acquired) == [(0, 4, 2)]


def test_ack_after_lock_timeout_is_invalid_record_state() -> None:
    """testAcknowledgeAfterAcquisitionLockTimeout."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.advance(LOCK)
    res = h.acknowledge(M1, ack(0, 4, ACCEPT))
    assert res.error is not None and res.error.code is ShareErrorCode.INVALID_RECORD_STATE


def test_lock_timeout_at_the_delivery_limit_archives_and_moves_spso() -> None:
    """testAcquisitionLockTimeoutCauseSPSOMoveForward (delivery count limit 2)."""
    h = Host(SharePartitionConfig(max_delivery_count=2))
    h.acquire(M1, batches((0, 10)))
    h.advance(LOCK)
    assert h.sp.batch_state(0) == (A, 1, "") and h.sp.next_fetch_offset() == 0
    h.acquire(M1, batches((0, 5)))
    assert offsets(h, 0, 5) == [(Q, 2, M1)] * 5 + [(A, 1, "")]
    h.advance(LOCK)
    assert offsets(h, 0, 9) == [(X, 2, "")] * 5 + [(A, 1, "")] * 5
    assert h.sp.next_fetch_offset() == 5 and h.sp.start_offset == 5


def test_release_at_the_delivery_limit_archives() -> None:
    """testMaxDeliveryCountLimitExceededForRecordBatch."""
    h = Host(SharePartitionConfig(max_delivery_count=2))
    h.acquire(M1, batches((5, 10)))
    h.acknowledge(M1, ack(5, 14, RELEASE))
    h.acquire(M1, batches((5, 10)))
    h.acknowledge(M1, ack(5, 14, RELEASE))
    assert h.sp.cached_batches() == [] and h.sp.start_offset == 15 and h.sp.next_fetch_offset() == 15


def test_delivery_limit_for_records_subset() -> None:
    """testMaxDeliveryCountLimitExceededForRecordsSubset (limit 2): released subsets redelivered, then
    released again at the limit: archived, the cache empties, the SPSO moves to 20."""
    h = Host(SharePartitionConfig(max_delivery_count=2))
    h.acquire(M1, batches((10, 5)), fetch_offset=3)
    h.acquire(M1, batches((15, 5)), fetch_offset=3)
    h.acknowledge(M1, ack(10, 12, ACCEPT), ack(13, 16, RELEASE), ack(17, 19, ACCEPT))
    assert ranges(h.acquire(M1, batches((10, 5)), fetch_offset=3).acquired) == [(13, 14, 2)]
    assert ranges(h.acquire(M1, batches((15, 5)), fetch_offset=3).acquired) == [(15, 16, 2)]
    h.acknowledge(M1, ack(13, 16, RELEASE))
    assert h.sp.next_fetch_offset() == 20 and h.sp.cached_batches() == [] and h.sp.start_offset == 20


def test_acknowledgements_in_between_keep_the_spso() -> None:
    """testMaybeUpdateCachedStateWhenAcknowledgementsInBetween."""
    h = Host(SharePartitionConfig(max_in_flight_records=20))
    h.acquire(M1, batches((0, 15)))
    assert h.sp.can_acquire_records()
    h.acquire(M1, batches((15, 15)))
    assert not h.sp.can_acquire_records()
    h.acknowledge(M1, ack(10, 14, REJECT))
    assert offsets(h, 9, 10) == [(Q, 1, M1), (X, 1, "")]
    assert h.sp.batch_state(15) == (Q, 1, M1)
    assert not h.sp.can_acquire_records()
    assert (h.sp.start_offset, h.sp.end_offset, h.sp.next_fetch_offset()) == (0, 29, 30)


def test_throttled_redelivery_and_poison_record_delivered_alone() -> None:
    """KAFKA-17541 (4.4): from ceil(limit/2) deliveries a batch is redelivered halved per attempt, and
    a record on its last attempt goes alone, so one poison record archives only itself."""
    h = Host(SharePartitionConfig(max_delivery_count=5))  # throttle from 3 deliveries
    log = batches((0, 10))
    for _ in range(2):
        h.acquire(M1, log)
        h.acknowledge(M1, ack(0, 9, RELEASE))
    assert ranges(h.acquire(M1, log).acquired) == [(0, 9, 3)]
    h.acknowledge(M1, ack(0, 9, RELEASE))
    # 3 deliveries: 10 >> 1 = 5 records per fetch, acquired one by one, answered as one range (4.4.0)
    assert ranges(h.acquire(M1, log).acquired) == [(0, 4, 4)]
    assert ranges(h.acquire(M1, log).acquired) == [(5, 9, 4)]
    h.acknowledge(M1, ack(0, 9, RELEASE))
    # 4 deliveries = the last attempt but one: the record on its last attempt goes alone
    assert ranges(h.acquire(M1, log).acquired) == [(0, 0, 5)]
    assert ranges(h.acquire(M1, log).acquired) == [(1, 1, 5)]
    h.acknowledge(M1, ack(0, 0, REJECT), ack(1, 1, ACCEPT))
    assert h.sp.start_offset == 2
    assert offsets(h, 0, 2) == [(X, 5, ""), (K, 5, ""), (A, 4, "")]


def test_throttled_batch_is_not_joined_with_others() -> None:
    """A throttled cached batch stops acquisition if something was acquired before it."""
    h = Host(SharePartitionConfig(max_delivery_count=4))  # throttle from 2 deliveries
    h.acquire(M1, batches((0, 5), (5, 5)), batch_size=5)
    h.acknowledge(M1, ack(0, 4, ACCEPT), ack(5, 9, RELEASE))
    h.acquire(M1, batches((5, 5)))
    h.acknowledge(M1, ack(5, 9, RELEASE))
    r = h.acquire(M2, batches((5, 5), (10, 5)))
    # 5-9 delivered twice: throttled (5 >> 1 = 2 records), and nothing new joins them
    assert ranges(r.acquired) == [(5, 6, 3)]


# ---------------------------------------------------------------- release on leave


def test_release_acquired_records_on_leave() -> None:
    """testReleaseSingleRecordBatch / testReleaseAcquiredRecordsWithAnotherMember: a leaving member's
    records go back to Available, their delivery counted (Kafka 4.4.0: NO_OP), another's stay."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acquire(M2, batches((5, 5)))
    res = h.release(M1)
    assert res.write is not None and res.write.batches == (PersisterStateBatch(0, 4, 0, 1),)
    assert h.sp.batch_state(0) == (A, 1, "") and h.sp.batch_state(5) == (Q, 1, M2)
    assert len(h.timers) == 1
    assert ranges(h.acquire(M1, batches((0, 5))).acquired) == [(0, 4, 2)]


def test_release_on_leave_at_the_delivery_limit_archives() -> None:
    h = Host(SharePartitionConfig(max_delivery_count=2))
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 4, RELEASE))
    h.acquire(M1, batches((0, 5)))
    h.release(M1)
    assert h.sp.start_offset == 5 and h.sp.cached_batches() == []


def test_release_after_spso_moved_into_the_batch() -> None:
    """testReleaseAcquiredRecordsBatchesPostStartOffsetMovementToMiddleOfBatch: the log start moved to
    11; released, 5-9 and 10 are archived, 11-14 Available."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    h.acquire(M1, batches((10, 5)))
    h.sp.update_log_start_offset(11)
    assert (h.sp.next_fetch_offset(), h.sp.start_offset, h.sp.end_offset) == (15, 11, 14)
    h.release(M1)
    assert h.sp.batch_state(5) == (X, 1, "")
    assert offsets(h, 10, 14) == [(X, 1, "")] + [(A, 1, "")] * 4


def test_lock_timeout_after_spso_moved_into_the_batch() -> None:
    """testAcquisitionLockTimeoutForBatchesPostStartOffsetMovementToMiddleOfBatch."""
    h = Host()
    h.acquire(M1, batches((5, 5)))
    h.acquire(M1, batches((10, 5)))
    h.sp.update_log_start_offset(11)
    h.advance(LOCK)
    assert h.sp.batch_state(5) == (X, 1, "")
    assert offsets(h, 10, 14) == [(X, 1, "")] + [(A, 1, "")] * 4


def test_log_start_then_lock_timeout_then_acknowledge() -> None:
    """testLsoMovementThenAcquisitionLockTimeoutThenAcknowledge: a batch wholly behind the new log
    start is archived at its lock's end and leaves the cache; an acknowledgement naming it with later
    records applies to the later ones only."""
    h = Host()
    h.acquire(M1, batches((2, 5)))
    h.sp.update_log_start_offset(7)
    assert (h.sp.next_fetch_offset(), h.sp.start_offset, h.sp.end_offset) == (7, 7, 7)
    assert h.sp.batch_state(2) == (Q, 1, M1)
    h.advance(LOCK)
    assert (h.sp.next_fetch_offset(), h.sp.start_offset, h.sp.end_offset) == (7, 7, 7)
    assert h.sp.cached_batches() == []
    h.acquire(M1, batches((10, 5)), fetch_offset=7)
    assert (h.sp.next_fetch_offset(), h.sp.start_offset, h.sp.end_offset) == (15, 10, 14)
    assert h.acknowledge(M1, ack(2, 14, RELEASE)).error is None
    assert (h.sp.next_fetch_offset(), h.sp.start_offset, h.sp.end_offset) == (10, 10, 14)
    assert h.sp.batch_state(10) == (A, 1, "")


# ---------------------------------------------------------------- log start offset


def test_log_start_offset_archives_available_records() -> None:
    """testLsoMovementForArchivingBatches / ...Offsets: Available records before the new log start are
    archived, Acquired ones wait for their lock, the SPSO jumps."""
    h = Host()
    h.acquire(M1, batches((2, 5)))
    h.acquire(M1, batches((7, 5)))
    h.acknowledge(M1, ack(7, 11, RELEASE))
    h.sp.update_log_start_offset(9)
    assert h.sp.start_offset == 9
    assert offsets(h, 7, 11) == [(X, 1, "")] * 2 + [(A, 1, "")] * 3
    assert h.sp.batch_state(2) == (Q, 1, M1)
    h.advance(LOCK)
    assert h.sp.next_fetch_offset() == 9


def test_log_start_offset_beyond_end_resets_window() -> None:
    """testLsoMovementAheadOfEndOffset."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 4, ACCEPT))
    h.sp.update_log_start_offset(20)
    assert (h.sp.start_offset, h.sp.end_offset, h.sp.next_fetch_offset()) == (20, 20, 20)


def test_stale_batches_compacted_away_are_archived() -> None:
    """maybeArchiveStaleBatches: released records the log no longer has (the read from 0 starts at 5)
    are archived, and the next write moves the SPSO past them."""
    h = Host()
    h.acquire(M1, batches((0, 5)))
    h.acknowledge(M1, ack(0, 4, RELEASE))
    r = h.acquire(M2, batches((5, 5)), fetch_offset=0)
    assert ranges(r.acquired) == [(5, 9, 1)]
    assert h.sp.batch_state(0) == (X, 1, "")
    h.acknowledge(M2, ack(5, 9, ACCEPT))
    assert h.sp.start_offset == 10


# ---------------------------------------------------------------- read_committed


def test_read_committed_archives_aborted_transactions() -> None:
    """maybeFilterAbortedTransactionalAcquiredRecords: aborted transactional batches are archived and
    cut out of what is delivered; committed ones are delivered."""
    h = Host()
    log = [
        FetchedBatch(0, 2, producer_id=7, transactional=True),
        FetchedBatch(3, 3, producer_id=7, transactional=True, control=True, abort_marker=True),
        FetchedBatch(4, 6, producer_id=8, transactional=True),
        FetchedBatch(7, 7, producer_id=8, transactional=True, control=True),
        FetchedBatch(8, 9),
    ]
    aborted = [AbortedTransaction(7, 0)]
    r = h.acquire(M1, log, isolation=IsolationLevel.READ_COMMITTED, aborted_transactions=aborted)
    assert ranges(r.acquired) == [(3, 9, 1)] and r.count == 7
    assert offsets(h, 0, 3) == [(X, 1, "")] * 3 + [(Q, 1, M1)]
    h2 = Host()
    r = h2.acquire(M1, log, isolation=IsolationLevel.READ_UNCOMMITTED, aborted_transactions=aborted)
    assert ranges(r.acquired) == [(0, 9, 1)]


# ---------------------------------------------------------------- initialisation


def test_initialize_from_persisted_state_with_gap() -> None:
    """testMaybeInitialize (with a gap): the persisted batches are cached without holder; the gap is
    fetched first; the SPSO waits for it."""
    sp = SharePartition("g", "t", 0)
    state = PersistedPartitionState(
        start_offset=10,
        state_epoch=3,
        batches=(PersisterStateBatch(15, 19, 2, 1), PersisterStateBatch(20, 22, 0, 2)),
    )
    assert sp.initialize(state, reset_start_offset=99) is None
    assert sp.state is PartitionState.ACTIVE and sp.state_epoch == 3
    assert (sp.start_offset, sp.end_offset) == (10, 22)
    assert sp.next_fetch_offset() == 10
    r = sp.acquire(M1, 0, 10, batches((10, 5), (15, 5), (20, 3)), max_fetch_records=500)
    assert ranges(r.acquired) == [(10, 14, 1), (20, 22, 3)]
    sp.acknowledge(M1, 0, [ack(10, 14, ACCEPT)])
    assert sp.start_offset == 20


def test_initialize_refuses_batches_before_start_offset() -> None:
    """testMaybeInitializeWithInvalidStartOffsetStateBatches."""
    sp = SharePartition("g", "t", 0)
    state = PersistedPartitionState(start_offset=10, batches=(PersisterStateBatch(5, 12, 0, 1),))
    assert sp.initialize(state, 0) is not None
    assert sp.state is PartitionState.FAILED
    assert sp.acquire(M1, 0, 10, batches((10, 5)), max_fetch_records=10).acquired == []


def test_initialize_with_all_terminal_state_moves_spso() -> None:
    """testMaybeInitializeWhenReadStateRpcReturnsZeroAvailableRecords."""
    sp = SharePartition("g", "t", 0)
    state = PersistedPartitionState(
        start_offset=0, batches=(PersisterStateBatch(0, 4, 2, 1), PersisterStateBatch(5, 9, 4, 5))
    )
    assert sp.initialize(state, 0) is None
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (10, 10, 10)


def test_acknowledge_type_ids_are_kafkas() -> None:
    assert [t.value for t in AcknowledgeType] == [0, 1, 2, 3, 4]
    assert [s.value for s in RecordState] == [0, 1, 2, 4]
