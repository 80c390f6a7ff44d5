"""The transitions ``TransactionMetadataTest`` (Kafka 4.4.0) defines: epochs bumped, fenced and exhausted,
producer id rotation, transactions v2's bump at the end of each transaction, and the legal transitions."""

from __future__ import annotations

import pytest

from kgroup.model import ErrorCode
from kgroup.transactions import metadata as meta
from kgroup.transactions.state import MAX_EPOCH, TV_0, TV_2, TxnState

from .helpers import T0, T1, metadata

S = TxnState


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(s.id, s.state_name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert {s for s in S if s.expiration_allowed} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert all(S.from_id(s.id) is s and S.from_name(s.state_name) is s for s in S)
    with pytest.raises(ValueError, match="Unknown transaction state id 8"):
        S.from_id(8)


def test_initialize_epoch() -> None:
    m = meta.new_metadata("t", 10, 1000, 0)
    new = meta.increment_epoch(m, 1000, None, 5)
    meta.check_transition(m, new)
    assert (new.producer_id, new.producer_epoch, new.last_producer_epoch, new.txn_last_update_ms) == (
        10,
        0,
        -1,
        5,
    )


def test_normal_epoch_bump_and_time_may_go_back() -> None:
    m = metadata(state=S.EMPTY, epoch=735, start=-1, update=1000)
    new = meta.increment_epoch(m, 1000 + 1, None, 999)  # the clock went back: tolerated
    assert (new.producer_epoch, new.last_producer_epoch, new.txn_timeout_ms) == (736, -1, 1001)


def test_epoch_bump_with_current_last_or_fenced_epoch() -> None:
    m = metadata(state=S.EMPTY, epoch=735, last_epoch=734, start=-1)
    current = meta.increment_epoch(m, 1000, 735, 0)
    assert (current.producer_epoch, current.last_producer_epoch) == (736, 735)
    retry = meta.increment_epoch(m, 1000, 734, 0)  # the last epoch: a retried bump, not bumped again
    assert (retry.producer_epoch, retry.last_producer_epoch) == (735, 734)
    with pytest.raises(meta.ApiError) as fenced:
        meta.increment_epoch(m, 1000, 733, 0)
    assert fenced.value.code is ErrorCode.PRODUCER_FENCED


def test_epoch_bump_with_newly_created_metadata_takes_any_expected_epoch() -> None:
    m = meta.new_metadata("t", 10, 1000, 0)
    new = meta.increment_epoch(m, 1000, 3, 0)
    assert (new.producer_epoch, new.last_producer_epoch) == (0, -1)


def test_bump_not_allowed_when_epochs_are_exhausted() -> None:
    with pytest.raises(meta.IllegalTransition, match="Cannot allocate any more producer epochs"):
        meta.increment_epoch(metadata(state=S.EMPTY, epoch=MAX_EPOCH - 1, start=-1), 1000, None, 0)


def test_fence_after_epochs_exhausted_and_never_past_max() -> None:
    ongoing = metadata(state=S.ONGOING, epoch=MAX_EPOCH - 1, partitions=(T0,), start=1)
    fenced = meta.fence_epoch(ongoing)
    assert (fenced.state, fenced.producer_epoch) == (S.PREPARE_EPOCH_FENCE, MAX_EPOCH)
    at_max = metadata(state=S.ONGOING, epoch=MAX_EPOCH, partitions=(T0,), start=1)
    assert meta.fence_epoch(at_max).producer_epoch == MAX_EPOCH
    # a fence is never completed: it is aborted at once
    with pytest.raises(meta.IllegalTransition):
        meta.check_transition(ongoing, fenced)


def test_rotate_producer_id() -> None:
    m = metadata(state=S.COMPLETE_COMMIT, producer_id=10, epoch=MAX_EPOCH - 1, start=1)
    new = meta.rotate_producer_id(m, 11, 1000, 5, record_last_epoch=False)
    meta.check_transition(m, new)
    assert (new.producer_id, new.prev_producer_id, new.producer_epoch, new.last_producer_epoch) == (
        11,
        10,
        0,
        -1,
    )
    kept = meta.rotate_producer_id(m, 11, 1000, 5, record_last_epoch=True)
    assert kept.last_producer_epoch == MAX_EPOCH - 1
    with pytest.raises(meta.IllegalTransition, match="still pending"):
        meta.rotate_producer_id(metadata(state=S.ONGOING, partitions=(T0,), start=1), 11, 1000, 5, False)


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_tv1_prepare_and_complete_keep_the_epoch(state: TxnState) -> None:
    m = metadata(state=S.ONGOING, epoch=5, last_epoch=4, partitions=(T0, T1), start=10, update=10)
    prepared = meta.abort_or_commit(m, state, TV_0, -1, 9, False)  # the clock went back: tolerated
    meta.check_transition(m, prepared)
    assert (prepared.producer_epoch, prepared.last_producer_epoch, prepared.txn_start_ms) == (5, 4, 10)
    done = meta.complete(prepared, 8)
    meta.check_transition(prepared, done)
    assert done.state is (S.COMPLETE_COMMIT if state is S.PREPARE_COMMIT else S.COMPLETE_ABORT)
    assert (done.producer_epoch, done.partitions, done.txn_start_ms) == (5, (), 10)


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_tv2_prepare_bumps_the_epoch(state: TxnState) -> None:
    m = metadata(state=S.ONGOING, epoch=5, partitions=(T0,), start=10, tv=TV_2)
    prepared = meta.abort_or_commit(m, state, TV_2, -1, 20, False)
    meta.check_transition(m, prepared)
    assert (prepared.producer_epoch, prepared.last_producer_epoch) == (6, 5)
    done = meta.complete(prepared, 21)
    meta.check_transition(prepared, done)
    assert (done.producer_id, done.producer_epoch) == (m.producer_id, 6)


def test_tv2_epoch_overflow_moves_to_the_next_producer_id() -> None:
    m = metadata(state=S.ONGOING, producer_id=10, epoch=MAX_EPOCH - 1, partitions=(T0,), start=10, tv=TV_2)
    prepared = meta.abort_or_commit(m, S.PREPARE_COMMIT, TV_2, 11, 20, False)
    assert (prepared.producer_epoch, prepared.last_producer_epoch, prepared.next_producer_id) == (
        MAX_EPOCH,
        MAX_EPOCH - 1,
        11,
    )
    done = meta.complete(prepared, 21)
    meta.check_transition(prepared, done)
    # the last epoch stays the one the client last saw
    assert (done.producer_id, done.producer_epoch, done.last_producer_epoch, done.next_producer_id) == (
        11,
        0,
        MAX_EPOCH - 1,
        -1,
    )
    assert done.prev_producer_id == 10


def test_tv2_abort_at_max_epoch_does_not_overflow() -> None:
    m = metadata(state=S.ONGOING, epoch=MAX_EPOCH, partitions=(T0,), start=10, tv=TV_2)
    assert meta.abort_or_commit(m, S.PREPARE_ABORT, TV_2, -1, 20, False).producer_epoch == MAX_EPOCH


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_tv2_may_abort_without_partitions_and_tv1_may_not(state: TxnState) -> None:
    m = metadata(state=state, start=-1 if state is S.EMPTY else 3)
    prepared = meta.abort_or_commit(m, S.PREPARE_ABORT, TV_2, -1, 20, True)
    meta.check_transition(m, prepared)
    assert prepared.txn_start_ms == 20
    with pytest.raises(meta.IllegalTransition):  # v1: the start time must not change
        meta.check_transition(m, meta.abort_or_commit(m, S.PREPARE_ABORT, TV_0, -1, 20, True))
    with pytest.raises(meta.IllegalTransition):  # a commit needs an ongoing transaction
        meta.abort_or_commit(m, S.PREPARE_COMMIT, TV_2, -1, 20, True)


def test_add_partitions_keeps_the_start_of_an_ongoing_transaction() -> None:
    m = metadata(state=S.EMPTY, start=-1)
    first = meta.add_partitions(m, [T0], 100, TV_0)
    meta.check_transition(m, first)
    second = meta.add_partitions(first, [T1], 50, TV_0)  # the clock went back: tolerated
    meta.check_transition(first, second)
    assert (first.txn_start_ms, second.txn_start_ms, set(second.partitions)) == (100, 100, {T0, T1})


def test_legal_transitions_are_kafkas() -> None:
    legal = {(a, b) for b in S for a in b.valid_previous}
    assert legal == {
        (S.EMPTY, S.EMPTY),
        (S.COMPLETE_COMMIT, S.EMPTY),
        (S.COMPLETE_ABORT, S.EMPTY),
        (S.ONGOING, S.ONGOING),
        (S.EMPTY, S.ONGOING),
        (S.COMPLETE_COMMIT, S.ONGOING),
        (S.COMPLETE_ABORT, S.ONGOING),
        (S.ONGOING, S.PREPARE_COMMIT),
        (S.ONGOING, S.PREPARE_ABORT),
        (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT),
        (S.EMPTY, S.PREPARE_ABORT),
        (S.COMPLETE_COMMIT, S.PREPARE_ABORT),
        (S.COMPLETE_ABORT, S.PREPARE_ABORT),
        (S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
        (S.PREPARE_ABORT, S.COMPLETE_ABORT),
        (S.EMPTY, S.DEAD),
        (S.COMPLETE_ABORT, S.DEAD),
        (S.COMPLETE_COMMIT, S.DEAD),
        (S.ONGOING, S.PREPARE_EPOCH_FENCE),
    }
    with pytest.raises(meta.IllegalTransition, match="not a valid previous state"):
        meta.add_partitions(metadata(state=S.PREPARE_COMMIT, partitions=(T0,), start=1), [T1], 5, TV_0)
    with pytest.raises(meta.IllegalTransition, match="Dead"):
        m = metadata(state=S.EMPTY, start=-1)
        meta.check_transition(m, meta.dead(m))
