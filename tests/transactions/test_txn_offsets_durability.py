"""``kgroup serve`` killed with ``kill -9`` with transactional offsets in three states: one transaction's
offsets committed by its marker, another's aborted, a third's still pending. After the restart (the
coordinator log replayed) the committed offset is served, the aborted one is not, the pending one makes
its partition UNSTABLE_OFFSET_COMMIT for ``require_stable`` — and the open transaction, still known to
the restarted transaction coordinator, commits its offsets when it ends.
"""

from __future__ import annotations

from pathlib import Path

from tests.apache_kafka.test_diff_transactions import NONE, _end, _find_transaction_coordinator, _init
from tests.apache_kafka.test_diff_txn_offsets import UNSTABLE_OFFSET_COMMIT, _add_offsets, _fetch, _txn_commit
from tests.apache_kafka.wire import Raw, find_coordinator
from tests.broker.procs import BrokerProcess

GROUP = "etl"
WANTED = {"in": [0, 1, 2]}


def _transaction(raw: Raw, txn: str, offsets: dict[tuple[str, int], int]) -> int:
    _find_transaction_coordinator(raw, txn)
    pid = int(_init(raw, txn)["producer_id"])
    assert _add_offsets(raw, txn, pid, 0, GROUP) == NONE
    assert set(_txn_commit(raw, 3, txn, pid, 0, GROUP, offsets).values()) == {NONE}
    return pid


def test_kill_9_keeps_pending_committed_and_aborted_offsets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "in:3")
    try:
        find_coordinator(broker.bootstrap_servers, GROUP)
        with Raw(broker.bootstrap_servers) as raw:
            committed = _transaction(raw, "committer", {("in", 0): 5})
            assert _end(raw, "committer", committed, 0, committed=True) == NONE
            aborted = _transaction(raw, "aborter", {("in", 0): 9, ("in", 2): 4})
            assert _end(raw, "aborter", aborted, 0, committed=False) == NONE
            pending = _transaction(raw, "pending", {("in", 1): 7})
            before = _fetch(raw, GROUP, WANTED, stable=True)
            assert before == {
                ("in", 0): (5, "m5", NONE),
                ("in", 1): (-1, "", UNSTABLE_OFFSET_COMMIT),
                ("in", 2): (-1, "", NONE),
            }
    finally:
        broker.kill()  # kill -9: no flush, no close

    restarted = BrokerProcess(data)
    try:
        find_coordinator(restarted.bootstrap_servers, GROUP)
        with Raw(restarted.bootstrap_servers) as raw:
            assert _fetch(raw, GROUP, WANTED, stable=True) == before
            assert _fetch(raw, GROUP, WANTED, stable=False)[("in", 1)] == (-1, "", NONE)
            _find_transaction_coordinator(raw, "pending")
            assert _end(raw, "pending", pending, 0, committed=True) == NONE
            assert _fetch(raw, GROUP, WANTED, stable=True) == {
                ("in", 0): (5, "m5", NONE),
                ("in", 1): (7, "m7", NONE),
                ("in", 2): (-1, "", NONE),
            }
    finally:
        restarted.kill()
