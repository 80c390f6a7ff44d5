"""``__transaction_state`` records: the byte layout of both value versions, the round trip, and what a
reader refuses. (Kafka's own serializer checks the same bytes in tests/apache_kafka.)"""

from __future__ import annotations

import contextlib
import dataclasses
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.model import PeerError, TopicPartition
from kgroup.transactions.metadata import TxnMetadata, add_partitions_order
from kgroup.transactions.records import (
    TransactionLogRecord,
    decode_record,
    encode_key,
    encode_value,
    grouped_partitions,
)
from kgroup.transactions.state import TxnState

from .helpers import metadata
from .strategies import metadata as metadata_strategy

ONGOING = metadata(
    state=TxnState.ONGOING,
    producer_id=7,
    prev_producer_id=7,
    epoch=3,
    partitions=(TopicPartition("t", 1),),
    timeout=1000,
    start=11,
    update=12,
    tv=2,
)


def test_key_layout() -> None:
    assert encode_key("tx") == b"\x00\x00" + b"\x00\x02tx"


def test_value_v0_layout() -> None:
    expected = (
        struct.pack(">hqhib", 0, 7, 3, 1000, 1)
        + struct.pack(">i", 1)  # one topic
        + b"\x00\x01t"
        + struct.pack(">ii", 1, 1)  # its partitions: [1]
        + struct.pack(">qq", 12, 11)
    )
    assert encode_value(dataclasses.replace(ONGOING, client_transaction_version=0), 0) == expected
    with pytest.raises(ValueError, match="clientTransactionVersion at version 0"):
        encode_value(ONGOING, 0)  # a tagged field: Kafka's writer refuses it at version 0


def test_value_v1_layout_with_tagged_fields() -> None:
    expected = (
        struct.pack(">hqhib", 1, 7, 3, 1000, 1)
        + b"\x02"  # compact array of one topic
        + b"\x02t"
        + b"\x02"
        + struct.pack(">i", 1)
        + b"\x00"  # the topic's tagged fields
        + struct.pack(">qq", 12, 11)
        + b"\x02"  # two tagged fields: PreviousProducerId (tag 0) and ClientTransactionVersion (tag 2)
        + b"\x00\x08"
        + struct.pack(">q", 7)
        + b"\x02\x02"
        + struct.pack(">h", 2)
    )
    assert encode_value(ONGOING, 1) == expected


def test_value_v1_defaults_are_left_out_and_empty_is_null_partitions() -> None:
    empty = dataclasses.replace(
        ONGOING, state=TxnState.EMPTY, partitions=(), prev_producer_id=-1, client_transaction_version=0
    )
    assert (
        encode_value(empty, 1)
        == struct.pack(">hqhib", 1, 7, 3, 1000, 0) + b"\x00" + struct.pack(">qq", 12, 11) + b"\x00"
    )
    assert encode_value(empty, 0) == struct.pack(">hqhibi", 0, 7, 3, 1000, 0, -1) + struct.pack(">qq", 12, 11)
    done = dataclasses.replace(empty, state=TxnState.COMPLETE_COMMIT)
    assert encode_value(done, 0)[17:21] == struct.pack(">i", 0)  # not Empty: an empty list, not null


def test_empty_with_partitions_is_refused() -> None:
    with pytest.raises(ValueError, match="Empty"):
        encode_value(dataclasses.replace(ONGOING, state=TxnState.EMPTY), 1)


@given(metadata_strategy())
def test_round_trip(m: TxnMetadata) -> None:
    for version in (0, 1):
        if version == 0 and m.client_transaction_version != 0:
            with pytest.raises(ValueError):
                encode_value(m, version)
            continue
        read = decode_record(encode_key(m.transactional_id), encode_value(m, version))
        assert read is not None and read.value is not None
        r = read.value
        assert r.last_producer_epoch == -1  # not in the log
        assert set(r.partitions) == set(m.partitions)
        if version == 0:  # v0 has no tagged fields: their defaults
            assert (r.prev_producer_id, r.next_producer_id) == (-1, -1)
            r = dataclasses.replace(
                r, prev_producer_id=m.prev_producer_id, next_producer_id=m.next_producer_id
            )
        assert dataclasses.replace(r, last_producer_epoch=m.last_producer_epoch, partitions=m.partitions) == m
        # a loaded record writes bytes that load as the same record; its partitions' order is the one
        # Kafka's loader gives (tests/apache_kafka), which need not be stable: topics that collide in
        # the grouping HashMap swap places on each write (computeIfAbsent puts a new key first)
        loaded = read.value
        again = decode_record(encode_key(m.transactional_id), encode_value(loaded, version))
        assert again is not None and again.value is not None
        assert dataclasses.replace(again.value, partitions=loaded.partitions) == loaded
        assert set(again.value.partitions) == set(loaded.partitions)


def test_tombstone_and_unknown_versions() -> None:
    assert decode_record(encode_key("x"), None) == TransactionLogRecord("x", None)
    assert decode_record(b"\x00\x01\x00\x01x", None) is None
    assert decode_record(encode_key("x"), b"\x00\x02" + encode_value(ONGOING, 1)[2:]) is None


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_truncated_value_is_a_peer_error(cut: int) -> None:
    with pytest.raises(PeerError):
        decode_record(encode_key("x"), encode_value(ONGOING, 1)[:cut])


def test_unknown_state_is_a_peer_error() -> None:
    value = bytearray(encode_value(ONGOING, 1))
    value[16] = 9
    with pytest.raises(PeerError, match="state id 9"):
        decode_record(encode_key("x"), bytes(value))


def test_colliding_topics_swap_places_each_time_a_record_is_loaded_and_written() -> None:
    """ "Aa" and "BB" collide: written BB, Aa from a set holding Aa0 then BB0, read back as BB0, Aa0,
    written Aa, BB — Kafka's loader and writer do the same (the oracle test reads kgroup's bytes)."""
    m = metadata(
        state=TxnState.ONGOING, partitions=(TopicPartition("Aa", 0), TopicPartition("BB", 0)), start=1
    )
    orders = []
    for _ in range(3):
        read = decode_record(encode_key("x"), encode_value(m, 1))
        assert read is not None and read.value is not None
        m = read.value
        orders.append([tp.topic for tp in m.partitions])
    assert orders == [["BB", "Aa"], ["Aa", "BB"], ["BB", "Aa"]]


def test_partitions_group_by_topic_in_java_hashmap_order() -> None:
    # "Aa" and "BB" have the same String.hashCode (2112): one bucket, in the order they were first met
    parts = add_partitions_order(
        (), [TopicPartition("BB", 0), TopicPartition("Aa", 0), TopicPartition("BB", 1)]
    )
    groups = grouped_partitions(parts)
    assert {t for t, _ in groups} == {"Aa", "BB"}
    # computeIfAbsent puts a new key at the head of its chain: the topic met second comes first
    met = list(dict.fromkeys(tp.topic for tp in parts))
    assert [t for t, _ in groups] == met[::-1]
    assert dict(groups)["BB"] == [tp.partition for tp in parts if tp.topic == "BB"]


@given(st.binary(max_size=80), st.one_of(st.none(), st.binary(max_size=120)))
def test_any_bytes_read_as_a_record_none_or_a_peer_error(key: bytes, value: bytes | None) -> None:
    """What a reader of a damaged or foreign log meets: never another exception."""
    with contextlib.suppress(PeerError):
        read = decode_record(key, value)
        assert read is None or isinstance(read, TransactionLogRecord)


@given(metadata_strategy(), st.integers(0, 200), st.integers(0, 255))
def test_a_damaged_byte_reads_as_a_record_none_or_a_peer_error(m: TxnMetadata, at: int, byte: int) -> None:
    value = bytearray(encode_value(dataclasses.replace(m, client_transaction_version=0), 1))
    value[at % len(value)] = byte
    with contextlib.suppress(PeerError):
        read = decode_record(encode_key(m.transactional_id), bytes(value))
        assert read is None or isinstance(read, TransactionLogRecord)
