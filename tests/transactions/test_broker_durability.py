"""``kgroup serve``'s transaction coordinator survives ``kill -9``: its records are in
``__transaction_state`` and replayed at the next start.

A producer initialises, opens a transaction over two partitions and the broker is killed; the restarted
broker still knows the producer (the same producer id), its open transaction (Ongoing, its partitions),
and fences it as Kafka does on a new InitProducerId for an Ongoing transaction (the transaction aborted
first: CONCURRENT_TRANSACTIONS, then the epoch bumped past the fence). librdkafka's transactional
producer then commits against the restarted broker.
"""

from __future__ import annotations

from pathlib import Path

from tests.apache_kafka.test_diff_transactions import (
    CONCURRENT_TRANSACTIONS,
    NONE,
    _add,
    _describe,
    _describe_settled,
    _find_transaction_coordinator,
    _init,
    _until,
)
from tests.apache_kafka.wire import Raw
from tests.broker.procs import BrokerProcess

from kgroup.broker.txn_host import TRANSACTION_STATE_TOPIC


def test_kill_9_keeps_the_transactional_state(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "out:2")
    try:
        with Raw(broker.bootstrap_servers) as raw:
            _find_transaction_coordinator(raw, "payments")
            init = _init(raw, "payments")
            pid = init["producer_id"]
            assert _add(raw, "payments", pid, 0, {"out": [0, 1]}) == {("out", 0): NONE, ("out", 1): NONE}
            before = _describe(raw, "payments")
            assert before["transaction_state"] == "Ongoing"
    finally:
        broker.kill()  # kill -9: no flush, no close

    restarted = BrokerProcess(data)
    try:
        with Raw(restarted.bootstrap_servers) as raw:
            _find_transaction_coordinator(raw, "payments")
            # (a client retries COORDINATOR_LOAD_IN_PROGRESS while the restarted coordinator replays
            # __transaction_state; under load that replay can outlast FindCoordinator's answer)
            after = _until(lambda: _describe(raw, "payments"), lambda answer: answer["error_code"])
            assert after == before
            # the Ongoing transaction is fenced and aborted by the next InitProducerId
            fields = {
                "transactional_id": "payments",
                "transaction_timeout": 60_000,
                "producer_id": -1,
                "producer_epoch": -1,
            }
            first = raw.call("InitProducerId", 5, fields)
            assert first["error_code"] == CONCURRENT_TRANSACTIONS
            again = _init(raw, "payments")
            # the same producer id, its epoch past the fence's (the exact epoch is compared with Kafka in
            # test_init_producer_id_fences_an_ongoing_transaction)
            assert (again["error_code"], again["producer_id"]) == (NONE, pid)
            assert again["producer_epoch"] > 1
            settled = _describe_settled(raw, "payments")
            assert (settled["transaction_state"], settled["producer_epoch"], settled["topics"]) == (
                "Empty",
                again["producer_epoch"],
                [],
            )
            metadata = raw.call(
                "Metadata",
                12,
                {
                    "topics": [{"name": TRANSACTION_STATE_TOPIC, "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            (topic,) = metadata["topics"]
            assert (topic["error_code"], topic["is_internal"], len(topic["partitions"])) == (0, True, 50)
        producer = Producer(
            {"bootstrap.servers": restarted.bootstrap_servers, "transactional.id": "payments"}
        )
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.commit_transaction(30)
    finally:
        restarted.kill()


def test_kill_9_keeps_markers_the_last_stable_offset_and_the_aborted_list(tmp_path: Path) -> None:
    """Committed, aborted and open transactions, then ``kill -9``: the restarted broker rebuilds each
    partition's open and aborted transactions from its batches — read_committed stops at the open
    transaction's first offset and skips the aborted records; once the coordinator (replayed from
    ``__transaction_state``) fences the open transaction at the next InitProducerId, its records are
    aborted too."""
    from confluent_kafka import Producer
    from tests.apache_kafka.test_diff_transactions import _latest, _read_all

    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "out:1")
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "etl"})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("out", b"c1", partition=0)
        producer.commit_transaction(30)
        producer.begin_transaction()
        producer.produce("out", b"a1", partition=0)
        producer.flush(30)
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.produce("out", b"open", partition=0)
        producer.flush(30)
    finally:
        broker.kill()

    restarted = BrokerProcess(data)
    try:
        bootstrap = restarted.bootstrap_servers
        with Raw(bootstrap) as raw:
            assert (_latest(raw, "out", 0), _latest(raw, "out", 1)) == (5, 4)
        assert _read_all(bootstrap, "out", "read_committed", 1) == [(0, b"c1")]
        assert _read_all(bootstrap, "out", "read_uncommitted", 3) == [(0, b"c1"), (2, b"a1"), (4, b"open")]
        successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": "etl"})
        successor.init_transactions(60)  # fences the open transaction: its abort marker at offset 5
        with Raw(bootstrap) as raw:
            assert (_latest(raw, "out", 0), _latest(raw, "out", 1)) == (6, 6)
        successor.begin_transaction()
        successor.produce("out", b"c2", partition=0)
        successor.commit_transaction(30)
        assert _read_all(bootstrap, "out", "read_committed", 2) == [(0, b"c1"), (6, b"c2")]
    finally:
        restarted.kill()
