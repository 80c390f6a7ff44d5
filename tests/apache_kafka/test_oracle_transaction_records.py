"""The transaction coordinator's ``__transaction_state`` records byte for byte against Kafka 4.4.0's own
``TransactionLog`` — and the order Kafka writes a transaction's partitions in, from its own
``TransactionMetadata`` run through the same AddPartitionsToTxn steps.

Each transition is also given to Kafka as its fields (not as kgroup's bytes); Kafka writes it and the bytes
must be kgroup's. Then Kafka reads kgroup's bytes: the same metadata, its partitions in the same order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.javacompat import JavaHashSet
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import KafkaOracle
from kgroup.testing.apache_kafka.oracle import OracleError
from kgroup.transactions import metadata as meta
from kgroup.transactions.records import decode_record, encode_key, encode_value
from kgroup.transactions.state import TV_0, TxnState, log_value_version
from transactions.strategies import PARTITION, metadata

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _pairs(partitions: tuple[TopicPartition, ...]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in partitions]


def kafka_item(m: meta.TxnMetadata, transaction_version: int) -> dict[str, Any]:
    return {
        "transactionalId": m.transactional_id,
        "producerId": m.producer_id,
        "prevProducerId": m.prev_producer_id,
        "nextProducerId": m.next_producer_id,
        "producerEpoch": m.producer_epoch,
        "lastProducerEpoch": m.last_producer_epoch,
        "txnTimeoutMs": m.txn_timeout_ms,
        "state": m.state.id,
        "partitions": _pairs(m.partitions),
        "txnStartTimestamp": m.txn_start_ms,
        "txnLastUpdateTimestamp": m.txn_last_update_ms,
        "clientTransactionVersion": m.client_transaction_version,
        "transactionVersion": transaction_version,
    }


@SETTINGS
@given(st.lists(metadata(), min_size=1, max_size=8), st.sampled_from([0, 1, 2]))
def test_kafka_writes_the_bytes_kgroup_writes(
    kafka_oracle: KafkaOracle, transitions: list[meta.TxnMetadata], tv: int
) -> None:
    if tv == 0:  # version 0 cannot carry a client transaction version (both sides refuse it: below)
        transitions = [dataclasses.replace(m, client_transaction_version=0) for m in transitions]
    kafka = kafka_oracle.transaction_record_bytes([kafka_item(m, tv) for m in transitions])
    for m, (key, value) in zip(transitions, kafka, strict=True):
        # Kafka's side holds the partitions in `new HashSet<>(list)`: kgroup writes that set's order
        in_set = tuple(JavaHashSet.copy_of(meta.topic_partition_hash, m.partitions))
        assert encode_key(m.transactional_id) == key
        assert encode_value(dataclasses.replace(m, partitions=in_set), log_value_version(tv)) == value, m


def test_version_0_cannot_carry_a_client_transaction_version(kafka_oracle: KafkaOracle) -> None:
    m = meta.TxnMetadata("tx", 1, -1, -1, 0, -1, 1000, TxnState.EMPTY, (), -1, 0, 2)
    with pytest.raises(OracleError, match="non-default clientTransactionVersion at version 0"):
        kafka_oracle.transaction_record_bytes([kafka_item(m, 0)])
    with pytest.raises(ValueError, match="non-default clientTransactionVersion at version 0"):
        encode_value(m, 0)


@SETTINGS
@given(
    st.lists(st.lists(PARTITION, min_size=1, max_size=12), min_size=1, max_size=5), st.sampled_from([0, 1, 2])
)
def test_partitions_are_written_in_kafkas_order_after_add_partitions(
    kafka_oracle: KafkaOracle, steps: list[list[TopicPartition]], tv: int
) -> None:
    m = meta.TxnMetadata("tx", 42, -1, -1, 0, -1, 60000, TxnState.EMPTY, (), -1, 0, TV_0)
    for now, step in enumerate(steps, start=1):
        new = meta.add_partitions(m, dict.fromkeys(step), now, tv)
        meta.check_transition(m, new)
        m = new
    [(key, value)] = kafka_oracle.transaction_add_partitions_bytes(
        [
            {
                "transactionalId": "tx",
                "producerId": 42,
                "steps": [_pairs(tuple(dict.fromkeys(s))) for s in steps],
                "transactionVersion": tv,
            }
        ]
    )
    assert encode_key("tx") == key
    assert encode_value(m, log_value_version(tv)) == value


@SETTINGS
@given(st.lists(metadata(), min_size=1, max_size=8), st.sampled_from([0, 1]))
def test_kafka_reads_kgroups_bytes_as_kgroup_does(
    kafka_oracle: KafkaOracle, transitions: list[meta.TxnMetadata], version: int
) -> None:
    if version == 0:
        transitions = [dataclasses.replace(m, client_transaction_version=0) for m in transitions]
    entries = [(encode_key(m.transactional_id), encode_value(m, version)) for m in transitions]
    read = kafka_oracle.transaction_record_read([*entries, (encode_key("gone"), None)])
    for (key, value), kafka in zip(entries, read, strict=False):
        ours = decode_record(key, value)
        assert ours is not None and ours.value is not None
        m = ours.value
        assert kafka == {
            "kind": "record",
            "transactionalId": m.transactional_id,
            "producerId": m.producer_id,
            "prevProducerId": m.prev_producer_id,
            "producerEpoch": m.producer_epoch,
            "lastProducerEpoch": m.last_producer_epoch,
            "txnTimeoutMs": m.txn_timeout_ms,
            "state": m.state.id,
            "partitions": _pairs(m.partitions),
            "txnStartTimestamp": m.txn_start_ms,
            "txnLastUpdateTimestamp": m.txn_last_update_ms,
            "clientTransactionVersion": m.client_transaction_version,
        }
    assert read[-1] == {"kind": "tombstone", "transactionalId": "gone"}
