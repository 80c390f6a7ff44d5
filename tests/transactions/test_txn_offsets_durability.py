"""``kgroup serve`` killed with ``kill -9`` with transactional offsets in three states: one transaction's
offsets committed by its marker, another's aborted, a third's still pending. After the restart (the
coordinator log replayed) the committed offset is served, the aborted one is not, the pending one makes
its partition UNSTABLE_OFFSET_COMMIT for ``require_stable`` — and the open transaction, still known to
the restarted transaction coordinator, commits its offsets when it ends. And librdkafka's producer,
cut by ``kill -9`` between ``send_offsets_to_transaction`` and its commit, is fenced and aborted by the
next producer with its transactional id, whose transaction then commits.
"""

from __future__ import annotations

from pathlib import Path

from tests.apache_kafka.test_diff_transactions import NONE, _end, _find_transaction_coordinator, _init
from tests.apache_kafka.test_diff_txn_offsets import (
    UNSTABLE_OFFSET_COMMIT,
    _add_offsets,
    _fetch,
    _txn_commit,
    _until_stable,
)
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


def test_librdkafka_recovers_a_transaction_cut_by_kill_9(tmp_path: Path) -> None:
    """confluent-kafka: records and ``send_offsets_to_transaction`` in a transaction, then ``kill -9``
    before the commit. After the restart the next producer with the transactional id fences and aborts
    the cut transaction (its offset never committed, its record never read by ``read_committed``), and
    its own transaction commits records and offsets."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as Tp
    from tests.apache_kafka.test_diff_transactions import _read_all

    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "in:1", "--topic", "out:1")
    try:
        bootstrap = broker.bootstrap_servers
        member = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 0})
        cut = Producer({"bootstrap.servers": bootstrap, "transactional.id": "etl-tx", "log_level": 0})
        cut.init_transactions(60)
        cut.begin_transaction()
        cut.produce("out", b"cut", partition=0)
        cut.send_offsets_to_transaction([Tp("in", 0, 3)], member.consumer_group_metadata(), 30)
        cut.flush(30)
        member.close()
    finally:
        broker.kill()

    restarted = BrokerProcess(data)
    try:
        bootstrap = restarted.bootstrap_servers
        member = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 0})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "etl-tx", "log_level": 0})
        producer.init_transactions(60)  # fences the cut transaction and aborts it
        assert member.committed([Tp("in", 0)], 30)[0].offset < 0  # never committed
        producer.begin_transaction()
        producer.produce("out", b"kept", partition=0)
        producer.send_offsets_to_transaction([Tp("in", 0, 4)], member.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        assert member.committed([Tp("in", 0)], 30)[0].offset == 4
        member.close()
        assert [value for _, value in _read_all(bootstrap, "out", "read_committed", 1)] == [b"kept"]
    finally:
        restarted.kill()


def test_a_failed_end_of_the_offsets_is_tried_again_never_dropped() -> None:
    """The group coordinators cannot end a transaction's offsets (here: the first call fails, as when
    they are stopping): the transaction stays Prepare* and its markers are tried again, so its offsets
    are committed — never a completed transaction with its offsets left pending for ever."""
    from kgroup.model import KgroupError
    from kgroup.testing import KafkaBroker

    with KafkaBroker(topics={"in": 1}) as kafka:
        host = kafka.broker.transactions
        real = host.offsets_marker
        calls: list[int] = []

        async def failing_once(partition: int, producer_id: int, committed: bool) -> bool:
            calls.append(partition)
            if len(calls) == 1:
                raise KgroupError("the coordinators are not running")
            return bool(await real(partition, producer_id, committed))

        host.offsets_marker = failing_once
        find_coordinator(kafka.bootstrap_servers, GROUP)
        with Raw(kafka.bootstrap_servers) as raw:
            pid = _transaction(raw, "flaky", {("in", 0): 5})
            assert _end(raw, "flaky", pid, 0, committed=True) == NONE
            assert _until_stable(raw, GROUP, {"in": [0]}, 9) == {("in", 0): (5, "m5", NONE)}
        assert len(calls) >= 2
