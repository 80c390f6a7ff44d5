"""The behaviours ``TransactionCoordinatorTest`` (Kafka 4.4.0) defines, on kgroup's coordinator: each case
drives the coordinator through its requests, or gives it a state as its log would, and checks the answer,
the records and the markers."""

from __future__ import annotations

import pytest

from kgroup.group.discovery import coordinator_partition
from kgroup.model import ErrorCode, TopicPartition
from kgroup.transactions.api import (
    AddOffsetsToTxn,
    AddPartitionsToTxn,
    AddPartitionsToTxnAnswer,
    DescribeTransactions,
    EndTxn,
    InitProducerId,
    InitProducerIdAnswer,
    ListTransactions,
    ScheduleTxnTimer,
    TxnTimer,
    VerifyPartitionsInTxn,
    WriteMarkers,
    error_for_version,
)
from kgroup.transactions.coordinator import (
    ProducerIdsUnavailable,
    TransactionCoordinator,
    TxnCoordinatorConfig,
)
from kgroup.transactions.state import MAX_EPOCH, TV_0, TV_2, TxnState

from .helpers import T0, T1, TXN, Host, metadata

E = ErrorCode
S = TxnState


def _init_error(c: TransactionCoordinator, txn_id: str | None) -> ErrorCode:
    answer = c.handle(InitProducerId(txn_id, 1000), 0).answer
    assert isinstance(answer, InitProducerIdAnswer)
    return answer.error


# --- InitProducerId -----------------------------------------------------------------------------------


def test_init_without_transactional_id_is_a_new_id_at_epoch_0_and_writes_nothing() -> None:
    h = Host()
    a, b = h.init(None), h.init(None)
    assert (a.error, a.producer_id, a.producer_epoch) == (E.NONE, 1000, 0)
    assert (b.producer_id, b.producer_epoch) == (1001, 0)
    assert h.log == []


def test_init_with_empty_transactional_id_is_invalid_request() -> None:
    assert Host().init("").error is E.INVALID_REQUEST


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_init_with_a_timeout_out_of_range_is_invalid_transaction_timeout(timeout: int) -> None:
    assert Host().init(timeout=timeout).error is E.INVALID_TRANSACTION_TIMEOUT


@pytest.mark.parametrize(("pid", "epoch"), [(5, -1), (-1, 5)])
def test_init_with_one_of_producer_id_and_epoch_is_invalid_request(pid: int, epoch: int) -> None:
    assert Host().init(pid=pid, epoch=epoch).error is E.INVALID_REQUEST


def test_init_new_transactional_id_gets_epoch_0_and_writes_empty() -> None:
    h = Host()
    a = h.init()
    assert (a.error, a.producer_id, a.producer_epoch) == (E.NONE, 1000, 0)
    [record] = h.log
    m = record.value
    assert m is not None and m.state is S.EMPTY and m.producer_epoch == 0 and m.txn_start_ms == -1
    assert m.prev_producer_id == 1000  # prepareTransitionTo: the previous producer id is the current one


def test_init_again_bumps_the_epoch_and_fences_the_old_producer() -> None:
    h = Host()
    first = h.init()
    second = h.init()
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert h.meta().last_producer_epoch == -1  # no expected epoch: the last epoch is forgotten
    # the old producer's requests are fenced
    assert h.add(first.producer_id, 0) is E.PRODUCER_FENCED
    assert h.end(first.producer_id, 0, commit=True).error is E.PRODUCER_FENCED


def test_init_with_no_state_and_a_producer_id_and_epoch_gives_a_new_id() -> None:
    """KIP-360: a producer recovering from UNKNOWN_PRODUCER_ID on a coordinator with no state for it."""
    a = Host().init(pid=7, epoch=3)
    assert (a.error, a.producer_id, a.producer_epoch) == (E.NONE, 1000, 0)


def test_init_with_current_epoch_bumps_and_keeps_the_last_epoch_so_a_retry_gets_the_same() -> None:
    h = Host()
    a = h.init()
    bumped = h.init(pid=a.producer_id, epoch=a.producer_epoch)
    assert (bumped.error, bumped.producer_epoch) == (E.NONE, 1)
    assert h.meta().last_producer_epoch == 0
    retried = h.init(pid=a.producer_id, epoch=a.producer_epoch)  # the answer was lost: same epoch again
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (E.NONE, a.producer_id, 1)


def test_init_with_a_stale_epoch_is_producer_fenced() -> None:
    h = Host()
    a = h.init()
    h.init()  # another producer: epoch 1, last epoch -1
    h.init()  # epoch 2
    assert h.init(pid=a.producer_id, epoch=0).error is E.PRODUCER_FENCED


def test_init_with_another_producer_id_is_producer_fenced() -> None:
    h = Host()
    a = h.init()
    assert h.init(pid=a.producer_id + 50, epoch=0).error is E.PRODUCER_FENCED


def test_init_with_exhausted_epoch_rotates_the_producer_id() -> None:
    h = Host()
    h.put(metadata(state=S.COMPLETE_COMMIT, producer_id=10, epoch=MAX_EPOCH - 1, start=1))
    a = h.init()
    assert (a.error, a.producer_id, a.producer_epoch) == (E.NONE, 1000, 0)
    m = h.meta()
    assert (m.prev_producer_id, m.last_producer_epoch) == (10, -1)


def test_retry_init_after_rotation_gets_the_rotated_id() -> None:
    h = Host()
    h.put(metadata(state=S.EMPTY, producer_id=10, epoch=MAX_EPOCH - 1, start=-1))
    a = h.init(pid=10, epoch=MAX_EPOCH - 1)
    assert (a.error, a.producer_id, a.producer_epoch) == (E.NONE, 1000, 0)
    assert h.meta().last_producer_epoch == MAX_EPOCH - 1  # recorded: the producer gave its epoch
    retry = h.init(pid=10, epoch=MAX_EPOCH - 1)  # the old id, its exhausted epoch: a retry
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, 1000, 0)


def test_init_after_rotation_with_the_old_id_and_an_unexhausted_epoch_is_fenced() -> None:
    h = Host()
    h.put(metadata(state=S.EMPTY, producer_id=10, epoch=MAX_EPOCH - 1, start=-1))
    h.init(pid=10, epoch=MAX_EPOCH - 1)
    assert h.init(pid=10, epoch=MAX_EPOCH - 3).error is E.PRODUCER_FENCED


def test_init_with_exhausted_epoch_and_a_stale_expected_epoch_is_unknown_server_error() -> None:
    """Kafka tries to bump an exhausted epoch (IllegalStateException), which Errors.forException answers."""
    h = Host()
    h.put(metadata(state=S.EMPTY, producer_id=10, epoch=MAX_EPOCH - 1, start=-1))
    assert h.init(pid=10, epoch=MAX_EPOCH - 3).error is E.UNKNOWN_SERVER_ERROR
    assert h.log == []


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_init_while_completing_is_concurrent_transactions(state: TxnState) -> None:
    h = Host()
    h.put(metadata(state=state, partitions=(T0,), start=1))
    assert h.init().error is E.CONCURRENT_TRANSACTIONS
    assert h.log == []


@pytest.mark.parametrize("server_tv", [TV_0, TV_2])
def test_init_during_an_ongoing_transaction_fences_and_aborts_it(server_tv: int) -> None:
    h = Host(config=TxnCoordinatorConfig(transaction_log_partitions=4, transaction_version=server_tv))
    a = h.init()
    assert h.add(a.producer_id, a.producer_epoch, T0, T1) is E.NONE
    h.now += 5
    answer = h.init()
    assert answer.error is E.CONCURRENT_TRANSACTIONS  # the client retries once the abort completes
    m = h.meta()
    assert m.state is S.PREPARE_ABORT and set(m.partitions) == {T0, T1}
    # the fence bumps once; with transactions v2 the abort's own bump is that one (Kafka 4.4.0 leaves the
    # epoch as it was until the abort is prepared: tests/apache_kafka/test_diff_transactions.py)
    assert m.producer_epoch == 1
    [marker] = h.markers
    assert (marker.committed, set(marker.partitions), marker.producer_epoch) == (
        False,
        {T0, T1},
        m.producer_epoch,
    )
    assert h.init().error is E.CONCURRENT_TRANSACTIONS  # still completing
    h.write_markers()
    assert h.meta().state is S.COMPLETE_ABORT
    again = h.init()
    assert (again.error, again.producer_id, again.producer_epoch) == (
        E.NONE,
        a.producer_id,
        m.producer_epoch + 1,
    )


@pytest.mark.parametrize("server_tv", [TV_0, TV_2])
def test_fencing_at_exhausted_epochs_uses_the_last_epoch_then_rotates(server_tv: int) -> None:
    """shouldUseLastEpochToFenceWhenEpochsAreExhausted: the fence takes Short.MAX_VALUE, never past it."""
    h = Host(config=TxnCoordinatorConfig(transaction_log_partitions=4, transaction_version=server_tv))
    h.put(
        metadata(
            state=S.ONGOING, producer_id=10, epoch=MAX_EPOCH - 1, partitions=(T0,), start=1, tv=server_tv
        )
    )
    assert h.init().error is E.CONCURRENT_TRANSACTIONS
    m = h.meta()
    assert (m.state, m.producer_id, m.producer_epoch) == (S.PREPARE_ABORT, 10, MAX_EPOCH)
    h.write_markers()
    if server_tv == TV_2:
        # 4.4.0's endTransaction (v2) left the epoch at MAX - 1 (exhausted): the abort bumps it to the
        # last epoch and moves to a new producer id at the completion, at epoch 0
        assert (h.meta().state, h.meta().producer_id, h.meta().producer_epoch) == (S.COMPLETE_ABORT, 1000, 0)
        again = h.init()
        assert (again.error, again.producer_id, again.producer_epoch) == (E.NONE, 1000, 1)
        return
    assert (h.meta().state, h.meta().producer_epoch) == (S.COMPLETE_ABORT, MAX_EPOCH)
    again = h.init()
    assert (again.error, again.producer_id, again.producer_epoch) == (E.NONE, 1000, 0)


def test_producer_ids_unavailable_is_coordinator_load_in_progress() -> None:
    def none_now() -> int:
        raise ProducerIdsUnavailable

    c = TransactionCoordinator(TxnCoordinatorConfig(transaction_log_partitions=1), none_now)
    c.load_all((), 0)
    for txn_id in (None, TXN):
        assert _init_error(c, txn_id) is E.COORDINATOR_LOAD_IN_PROGRESS


def test_not_coordinator_and_loading() -> None:
    config = TxnCoordinatorConfig(transaction_log_partitions=4)
    c = TransactionCoordinator(config, iter(range(100, 200)).__next__)
    partition = c.partition_for(TXN)
    assert partition == coordinator_partition(TXN, 4)
    assert _init_error(c, TXN) is E.NOT_COORDINATOR
    c.begin_load(partition, 3)
    assert _init_error(c, TXN) is E.COORDINATOR_LOAD_IN_PROGRESS
    [described] = c.describe(DescribeTransactions((TXN,)))
    assert described.error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.list_transactions(ListTransactions(), 0).error is E.COORDINATOR_LOAD_IN_PROGRESS
    c.finish_load(partition, 0)
    assert _init_error(c, TXN) is E.NONE
    c.unload(partition)
    assert c.metadata(TXN) is None
    assert _init_error(c, TXN) is E.NOT_COORDINATOR


# --- AddPartitionsToTxn, AddOffsetsToTxn, verification -------------------------------------------------


def test_add_partitions_errors() -> None:
    h = Host()
    assert h.add(1, 0) is E.INVALID_PRODUCER_ID_MAPPING  # no such transactional id
    assert h.add(1, 0, txn_id="") is E.INVALID_REQUEST
    a = h.init()
    assert h.add(a.producer_id + 1, 0) is E.INVALID_PRODUCER_ID_MAPPING
    assert h.add(a.producer_id, 1) is E.PRODUCER_FENCED
    assert h.log[-1].value is not None and h.log[-1].value.state is S.EMPTY  # nothing written for errors


def test_add_partitions_starts_a_transaction_and_adding_the_same_writes_nothing() -> None:
    h = Host()
    a = h.init()
    h.now = 5000
    assert h.add(a.producer_id, 0, T0) is E.NONE
    m = h.meta()
    assert (m.state, m.partitions, m.txn_start_ms, m.txn_last_update_ms) == (S.ONGOING, (T0,), 5000, 5000)
    written = len(h.log)
    h.now = 6000
    assert h.add(a.producer_id, 0, T0) is E.NONE
    assert len(h.log) == written  # already in the transaction: answered at once
    assert h.add(a.producer_id, 0, T1) is E.NONE
    m = h.meta()
    assert (set(m.partitions), m.txn_start_ms, m.txn_last_update_ms) == ({T0, T1}, 5000, 6000)


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_add_partitions_while_completing_is_concurrent_transactions(state: TxnState) -> None:
    h = Host()
    h.put(metadata(state=state, partitions=(T0,), start=1))
    assert h.add(10, 5, T1) is E.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY])
@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_add_partitions_after_a_transaction_starts_the_next(state: TxnState, tv: int) -> None:
    h = Host()
    h.put(metadata(state=state, start=-1 if state is S.EMPTY else 1, tv=tv))
    h.now = 777
    assert h.add(10, 5, T0, tv=tv) is E.NONE
    m = h.meta()
    assert (m.state, m.txn_start_ms, m.client_transaction_version) == (S.ONGOING, 777, tv)


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    h = Host()
    a = h.init()
    assert h.add_offsets(a.producer_id, 0, "my-group") is E.NONE
    expected = TopicPartition("__consumer_offsets", coordinator_partition("my-group", 50))
    assert h.meta().partitions == (expected,)
    assert h.add_offsets(a.producer_id, 3, "my-group") is E.PRODUCER_FENCED


def test_verify_partitions() -> None:
    h = Host()
    a = h.init()
    h.add(a.producer_id, 0, T0)
    written = len(h.log)

    def verify(pid: int, epoch: int, txn_id: str = TXN) -> dict[TopicPartition, ErrorCode]:
        result = h.coordinator.handle(VerifyPartitionsInTxn(txn_id, pid, epoch, (T0, T1)), h.now)
        assert result.records == ()
        assert isinstance(result.answer, AddPartitionsToTxnAnswer)
        return dict(result.answer.errors)

    assert verify(a.producer_id, 0) == {T0: E.NONE, T1: E.TRANSACTION_ABORTABLE}
    assert set(verify(a.producer_id, 1).values()) == {E.PRODUCER_FENCED}
    assert set(verify(a.producer_id + 1, 0).values()) == {E.INVALID_PRODUCER_ID_MAPPING}
    assert set(verify(a.producer_id, 0, "other").values()) == {E.INVALID_PRODUCER_ID_MAPPING}
    assert set(verify(a.producer_id, 0, "").values()) == {E.INVALID_REQUEST}
    h.end(a.producer_id, 0, commit=True)
    assert set(verify(a.producer_id, 0).values()) == {E.CONCURRENT_TRANSACTIONS}
    assert len(h.log) == written + 1


# --- EndTxn -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_end_txn_identity_errors(tv: int) -> None:
    h = Host()
    assert h.end(1, 0, True, tv).error is E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(1, 0, True, tv, txn_id="").error is E.INVALID_REQUEST
    a = h.init()
    h.add(a.producer_id, 0)
    assert h.end(a.producer_id + 1, 0, True, tv).error is E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(a.producer_id, 1, True, tv).error is E.PRODUCER_FENCED  # larger
    h.init()
    h.write_markers()
    if tv == TV_2:
        # the fence's abort left epoch 1 (4.4.0): a v2 EndTxn at epoch 0 looks like a retry after the
        # bump, and committing what was aborted is INVALID_TXN_STATE (checked against Kafka 4.4.0 in
        # tests/apache_kafka/test_diff_transactions.py)
        assert h.end(a.producer_id, 0, True, tv).error is E.INVALID_TXN_STATE
        h.init()
    assert h.end(a.producer_id, 0, True, tv).error is E.PRODUCER_FENCED  # smaller


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_v1_commit_and_abort(commit: bool) -> None:
    h = Host(config=TxnCoordinatorConfig(transaction_log_partitions=4, transaction_version=TV_0))
    a = h.init()
    h.add(a.producer_id, 0, T0, T1)
    answer = h.end(a.producer_id, 0, commit)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.NONE, -1, -1)
    prepared = h.meta()
    assert prepared.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert prepared.producer_epoch == 0  # v1: no bump
    [marker] = h.markers
    assert (marker.committed, set(marker.partitions), marker.producer_epoch) == (commit, {T0, T1}, 0)
    h.write_markers()
    done = h.meta()
    assert done.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert (done.partitions, done.producer_epoch, done.txn_start_ms) == ((), 0, prepared.txn_start_ms)
    # a retry of the same end is fine; the other is not
    assert h.end(a.producer_id, 0, commit).error is E.NONE
    assert h.end(a.producer_id, 0, not commit).error is E.INVALID_TXN_STATE


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_v2_bumps_the_epoch_and_answers_it(commit: bool) -> None:
    h = Host()
    a = h.init()
    h.add(a.producer_id, 0, T0, tv=TV_2)
    answer = h.end(a.producer_id, 0, commit, TV_2)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.NONE, a.producer_id, 1)
    assert (h.meta().producer_epoch, h.meta().last_producer_epoch) == (1, 0)
    assert h.markers[0].producer_epoch == 1
    # retry while the markers are written: still completing
    assert h.end(a.producer_id, 0, commit, TV_2).error is E.CONCURRENT_TRANSACTIONS
    # the same epoch again is the *next* EndTxn, not a retry
    assert h.end(a.producer_id, 1, commit, TV_2).error is E.PRODUCER_FENCED
    h.write_markers()
    retry = h.end(a.producer_id, 0, commit, TV_2)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, a.producer_id, 1)
    assert h.end(a.producer_id, 0, not commit, TV_2).error is E.INVALID_TXN_STATE  # a retry of the other
    # the next transaction starts at the new epoch
    assert h.add(a.producer_id, 1, T1, tv=TV_2) is E.NONE


def test_end_txn_v2_commit_of_an_empty_transaction_is_invalid_and_abort_is_allowed() -> None:
    h = Host()
    a = h.init()
    assert h.end(a.producer_id, 0, True, TV_2).error is E.INVALID_TXN_STATE
    h.now += 10
    abort = h.end(a.producer_id, 0, False, TV_2)
    assert (abort.error, abort.producer_epoch) == (E.NONE, 1)
    m = h.meta()
    assert (m.state, m.partitions, m.txn_start_ms) == (S.PREPARE_ABORT, (), h.now)
    h.write_markers()
    assert h.meta().state is S.COMPLETE_ABORT
    # v2: an abort after a complete abort at the current epoch bumps again
    again = h.end(a.producer_id, 1, False, TV_2)
    assert (again.error, again.producer_epoch) == (E.NONE, 2)


def test_end_txn_v1_on_empty_is_invalid_txn_state() -> None:
    h = Host()
    a = h.init()
    assert h.end(a.producer_id, 0, False, TV_0).error is E.INVALID_TXN_STATE


def test_end_txn_while_completing_answers_as_kafka() -> None:
    h = Host()
    h.put(metadata(state=S.PREPARE_COMMIT, partitions=(T0,), start=1))
    assert h.end(10, 5, True, TV_0).error is E.CONCURRENT_TRANSACTIONS
    assert h.end(10, 5, False, TV_0).error is E.CONCURRENT_TRANSACTIONS  # pending: checked before the state


def test_end_txn_v2_epoch_overflow_rotates_the_producer_id() -> None:
    h = Host()
    h.put(metadata(state=S.ONGOING, producer_id=10, epoch=MAX_EPOCH - 1, partitions=(T0,), start=1, tv=TV_2))
    answer = h.end(10, MAX_EPOCH - 1, True, TV_2)
    # answered with the completion: the next producer id at epoch 0 (the log holds epoch MAX meanwhile)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.NONE, 1000, 0)
    assert (h.meta().producer_id, h.meta().producer_epoch, h.meta().next_producer_id) == (10, MAX_EPOCH, 1000)
    h.write_markers()
    m = h.meta()
    assert (m.state, m.producer_id, m.producer_epoch, m.prev_producer_id) == (S.COMPLETE_COMMIT, 1000, 0, 10)
    # a retry with the old id and its last epoch is answered with the new id
    retry = h.end(10, MAX_EPOCH - 1, True, TV_2)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, 1000, 0)


def test_transaction_version_downgrade_and_upgrade_between_transactions() -> None:
    h = Host()
    a = h.init()
    h.add(a.producer_id, 0, T0, tv=TV_2)
    h.end(a.producer_id, 0, True, TV_2)
    h.write_markers()
    h.add(a.producer_id, 1, T0, tv=TV_0)  # the client downgraded: v1 from here on
    assert h.end(a.producer_id, 1, True, TV_0).error is E.NONE
    assert h.meta().producer_epoch == 1
    h.write_markers()
    h.add(a.producer_id, 1, T0, tv=TV_2)
    assert h.end(a.producer_id, 1, False, TV_2).producer_epoch == 2


# --- timeouts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("server_tv", [TV_0, TV_2])
def test_timed_out_transaction_is_fenced_and_aborted(server_tv: int) -> None:
    h = Host(config=TxnCoordinatorConfig(transaction_log_partitions=4, transaction_version=server_tv))
    [abort_timer, expire_timer] = h.coordinator.start(h.now).effects
    assert abort_timer == ScheduleTxnTimer(TxnTimer.ABORT_TIMED_OUT, h.now + 10_000)
    assert expire_timer == ScheduleTxnTimer(TxnTimer.EXPIRE_TRANSACTIONAL_IDS, h.now + 3_600_000)
    a = h.init(timeout=30_000)
    h.add(a.producer_id, 0, T0)
    start = h.now
    h.now = start + 30_000  # start + timeout is not < now yet
    assert h.take(h.coordinator.on_timer(TxnTimer.ABORT_TIMED_OUT, h.now)).records == ()
    h.now += 1
    result = h.take(h.coordinator.on_timer(TxnTimer.ABORT_TIMED_OUT, h.now))
    assert result.effects[-1] == ScheduleTxnTimer(TxnTimer.ABORT_TIMED_OUT, h.now + 10_000)
    m = h.meta()
    assert m.state is S.PREPARE_ABORT
    assert m.producer_epoch == 1  # the fence's bump (with transactions v2, the abort's own)
    assert m.last_producer_epoch == (0 if server_tv == TV_2 else -1)
    assert m.txn_start_ms == start and m.txn_last_update_ms == h.now
    # the producer is fenced
    assert h.add(a.producer_id, 0, T1) is E.CONCURRENT_TRANSACTIONS  # completing first
    h.write_markers()
    assert h.add(a.producer_id, 0, T1) is E.PRODUCER_FENCED
    assert h.end(a.producer_id, 0, True).error is E.PRODUCER_FENCED
    # the sweep leaves a completing transaction alone
    assert h.coordinator.abort_timed_out(h.now + 10**9).records == ()


def test_transactional_id_expiration_writes_a_tombstone() -> None:
    h = Host(config=TxnCoordinatorConfig(transaction_log_partitions=4, transactional_id_expiration_ms=1000))
    a = h.init()
    h.init("ongoing")
    h.add(1001, 0, T0, txn_id="ongoing")
    h.now += 1000
    result = h.take(h.coordinator.on_timer(TxnTimer.EXPIRE_TRANSACTIONAL_IDS, h.now))
    assert [(r.transactional_id, r.value) for r in result.records] == [(TXN, None)]
    assert h.coordinator.metadata(TXN) is None and h.coordinator.metadata("ongoing") is not None
    [described] = h.coordinator.describe(DescribeTransactions((TXN,)))
    assert described.error is E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.add(a.producer_id, 0) is E.INVALID_PRODUCER_ID_MAPPING


# --- DescribeTransactions, ListTransactions ---------------------------------------------------------------


def test_describe_transactions() -> None:
    h = Host()
    a = h.init(timeout=12_345)
    h.now = 4242
    h.add(a.producer_id, 0, T1, TopicPartition("u", 3), T0)
    d, empty, missing = h.coordinator.describe(DescribeTransactions((TXN, "", "nope")))
    assert (d.error, d.state, d.producer_id, d.producer_epoch) == (E.NONE, "Ongoing", a.producer_id, 0)
    assert (d.transaction_timeout_ms, d.transaction_start_time_ms) == (12_345, 4242)
    topics = dict(d.topics)
    assert set(topics) == {"t", "u"} and sorted(topics["t"]) == [0, 1] and topics["u"] == (3,)
    assert empty.error is E.INVALID_REQUEST and missing.error is E.TRANSACTIONAL_ID_NOT_FOUND


def test_list_transactions_filters() -> None:
    h = Host()
    a = h.init("a")
    h.init("b")
    h.now += 100
    h.add(a.producer_id, 0, T0, txn_id="a")
    h.now += 50

    def listed(**filters: object) -> list[tuple[str, str]]:
        answer = h.coordinator.list_transactions(ListTransactions(**filters), h.now)  # type: ignore[arg-type]
        assert answer.error is E.NONE
        return [(t.transactional_id, t.state) for t in answer.transactions]

    assert listed() == [("a", "Ongoing"), ("b", "Empty")]
    assert listed(state_filters=("Ongoing",)) == [("a", "Ongoing")]
    assert listed(producer_id_filters=(1001,)) == [("b", "Empty")]
    assert listed(duration_filter_ms=50) == [("b", "Empty")]  # running 50 ms: not longer than 50
    assert listed(duration_filter_ms=49) == [("a", "Ongoing"), ("b", "Empty")]
    assert listed(transactional_id_pattern="b.*") == [("b", "Empty")]
    assert listed(transactional_id_pattern="") == [("a", "Ongoing"), ("b", "Empty")]  # empty: no filter
    assert listed(transactional_id_pattern="(?P<x>a|b)") == [("a", "Ongoing"), ("b", "Empty")]
    bad = h.coordinator.list_transactions(ListTransactions(transactional_id_pattern="a("), h.now)
    assert bad.error is E.INVALID_REGULAR_EXPRESSION
    answer = h.coordinator.list_transactions(ListTransactions(state_filters=("Nope", "Empty")), h.now)
    assert answer.unknown_state_filters == ("Nope",)
    assert [t.transactional_id for t in answer.transactions] == ["b"]


# --- replay --------------------------------------------------------------------------------------------


def test_replaying_the_log_rebuilds_the_state_and_resends_pending_markers() -> None:
    h = Host()
    a = h.init()
    h.add(a.producer_id, 0, T0, T1, tv=TV_2)
    h.end(a.producer_id, 0, True, TV_2)
    b = h.init("other")
    h.add(b.producer_id, 0, T0, txn_id="other")
    fresh = TransactionCoordinator(h.config, iter(range(5000, 6000)).__next__)
    result = fresh.load_all(h.log, h.now + 99)
    for txn_id in (TXN, "other"):
        live, loaded = h.coordinator.metadata(txn_id), fresh.metadata(txn_id)
        assert loaded == live
    [marker] = [e for e in result.effects if isinstance(e, WriteMarkers)]
    assert (marker.transactional_id, marker.committed, marker.producer_epoch) == (TXN, True, 1)
    assert set(marker.partitions) == {T0, T1}
    completed = fresh.markers_written(TXN, marker.producer_id, marker.producer_epoch)
    [record] = completed.records
    assert record.value is not None and record.value.state is S.COMPLETE_COMMIT
    assert record.value.txn_last_update_ms == h.now + 99  # prepared when loaded


@pytest.mark.parametrize(
    ("request_type", "first_fenced"),
    [(InitProducerId, 4), (EndTxn, 2), (AddPartitionsToTxn, 2), (AddOffsetsToTxn, 2)],
)
def test_producer_fenced_is_invalid_producer_epoch_for_older_versions(
    request_type: type, first_fenced: int
) -> None:
    for version in range(first_fenced + 3):
        expected = E.PRODUCER_FENCED if version >= first_fenced else E.INVALID_PRODUCER_EPOCH
        assert error_for_version(request_type, version, E.PRODUCER_FENCED) is expected
        assert (
            error_for_version(request_type, version, E.CONCURRENT_TRANSACTIONS) is E.CONCURRENT_TRANSACTIONS
        )
