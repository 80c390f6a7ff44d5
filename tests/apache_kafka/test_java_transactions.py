"""Kafka's Java ``KafkaProducer`` in transactions, on ``kgroup serve`` and on Apache Kafka 4.4.0: records
and ``sendOffsetsToTransaction`` committed together, then a transaction aborted. Both brokers finalize
``transaction.version`` 2 in ApiVersions, so the producer takes transactions v2 (KIP-890 part 2): no
AddOffsetsToTxn (TxnOffsetCommit v5 adds the group's offsets partition itself), EndTxn v5, the epoch
bumped at each transaction's end — seen here as the producer epoch DescribeTransactions answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_transactions import (
    _describe_settled,
    _find_transaction_coordinator,
    _read_all,
)
from tests.apache_kafka.test_diff_txn_offsets import NONE, _until_stable
from tests.apache_kafka.wire import Raw, find_coordinator

from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.java_client import JavaProducer

pytestmark = [pytest.mark.slow, pytest.mark.transactions]


def test_java_producer_commits_records_and_offsets_with_transactions_v2(
    target: Target, names: str, tmp_path: Path
) -> None:
    topic_in, topic_out, group, txn = f"{names}-in", f"{names}-out", f"{names}-g", f"{names}-tx"
    target.create_topic(topic_in, 2)
    target.create_topic(topic_out, 1)
    find_coordinator(target.bootstrap_servers, group)
    config = {"transactional.id": txn, "linger.ms": 0}
    with JavaProducer(target.bootstrap_servers, config=config, name="producer", log_dir=tmp_path) as producer:
        assert producer.transaction("init") is None
        assert producer.transaction("begin") is None
        producer.send_records(topic_out, [("k1", "v1"), ("k2", "v2")], partition=0)
        offsets = {TopicPartition(topic_in, 0): 5, TopicPartition(topic_in, 1): 7}
        assert producer.transaction("send_offsets", offsets=offsets, group=group) is None
        assert producer.transaction("commit") is None
        with Raw(target.bootstrap_servers) as raw:
            _find_transaction_coordinator(raw, txn)
            settled = _describe_settled(raw, txn)
            # transactions v2: the commit bumped the epoch (v1 keeps it at 0)
            assert (settled["transaction_state"], settled["producer_epoch"]) == ("CompleteCommit", 1)
            committed = {(topic_in, 0): (5, "", NONE), (topic_in, 1): (7, "", NONE)}
            assert _until_stable(raw, group, {topic_in: [0, 1]}, 9) == committed

            # the next transaction is aborted: its records and offsets are dropped
            assert producer.transaction("begin") is None
            producer.send_records(topic_out, [("k3", "aborted")], partition=0)
            assert (
                producer.transaction("send_offsets", offsets={TopicPartition(topic_in, 0): 9}, group=group)
                is None
            )
            assert producer.transaction("abort") is None
            settled = _describe_settled(raw, txn)
            assert (settled["transaction_state"], settled["producer_epoch"]) == ("CompleteAbort", 2)
            assert _until_stable(raw, group, {topic_in: [0, 1]}, 9) == committed
    read = _read_all(target.bootstrap_servers, topic_out, "read_committed", 2)
    assert [value for _, value in read] == [b"v1", b"v2"]
