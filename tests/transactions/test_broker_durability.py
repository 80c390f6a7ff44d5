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
            assert _describe(raw, "payments") == before
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
