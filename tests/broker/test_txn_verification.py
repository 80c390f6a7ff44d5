"""The coordinator's answer to a partition leader's transaction verification, as Kafka's
``AddPartitionsToTxnManager`` hands it on (shared by Produce and TxnOffsetCommit)."""

from __future__ import annotations

import pytest

from kgroup.broker.txn_host import verification_error
from kgroup.model import ErrorCode as E


@pytest.mark.parametrize(
    ("error", "abortable", "expected"),
    [
        (E.NONE, False, E.NONE),
        (E.TRANSACTION_ABORTABLE, True, E.TRANSACTION_ABORTABLE),
        (E.TRANSACTION_ABORTABLE, False, E.INVALID_TXN_STATE),
        (E.PRODUCER_FENCED, True, E.INVALID_PRODUCER_EPOCH),
        (E.INVALID_PRODUCER_EPOCH, False, E.INVALID_PRODUCER_EPOCH),
        (E.COORDINATOR_LOAD_IN_PROGRESS, True, E.NOT_ENOUGH_REPLICAS),
        (E.COORDINATOR_NOT_AVAILABLE, True, E.NOT_ENOUGH_REPLICAS),
        (E.NOT_COORDINATOR, False, E.NOT_ENOUGH_REPLICAS),
        (E.CONCURRENT_TRANSACTIONS, True, E.NOT_ENOUGH_REPLICAS),
        (E.INVALID_TXN_STATE, True, E.INVALID_TXN_STATE),
        (E.INVALID_PRODUCER_ID_MAPPING, True, E.INVALID_PRODUCER_ID_MAPPING),
    ],
)
def test_verification_errors_as_add_partitions_to_txn_manager_maps_them(
    error: E, abortable: bool, expected: E
) -> None:
    assert verification_error(error, abortable=abortable) is expected
