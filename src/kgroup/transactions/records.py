"""The ``__transaction_state`` records, byte for byte: ``TransactionLogKey`` (version 0) and
``TransactionLogValue`` (version 0, and the flexible version 1 with its tagged fields), as Kafka 4.4.0's
``TransactionLog`` writes and reads them.

A :class:`TransactionLogRecord` carries the whole :class:`~kgroup.transactions.metadata.TxnMetadata` the
coordinator replays; the bytes carry what Kafka's log does (not ``last_producer_epoch``: a loaded record
has -1 there, as Kafka's ``TransactionLog.read`` gives). A tombstone (no value) removes an expired id.

The partitions are written grouped by topic as ``Collectors.groupingBy`` over the transaction's
``HashSet`` gives them: topics in a default ``HashMap``'s order, each topic's partitions in the set's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgroup.group.records.primitives import Reader, Writer
from kgroup.javacompat import JavaHashMap, java_string_hash
from kgroup.model import PeerError, TopicPartition
from kgroup.transactions.metadata import TxnMetadata, loaded_order
from kgroup.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TxnState

__all__ = [
    "KEY_VERSION",
    "TransactionLogRecord",
    "decode_key",
    "decode_record",
    "encode_key",
    "encode_value",
    "grouped_partitions",
]

#: ``CoordinatorRecordType.TRANSACTION_LOG``: the key's version prefix
KEY_VERSION = 0
_VALUE_VERSIONS = (0, 1)
_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID, _TAG_CLIENT_VERSION, _TAG_NEXT_PRODUCER_EPOCH = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class TransactionLogRecord:
    """One ``__transaction_state`` record: a transactional id's metadata, or its tombstone (``None``)."""

    transactional_id: str
    value: TxnMetadata | None


def grouped_partitions(partitions: tuple[TopicPartition, ...]) -> list[tuple[str, list[int]]]:
    """``topicPartitions.stream().collect(groupingBy(TopicPartition::topic))``'s entries, in order."""
    groups: JavaHashMap[str, list[int]] = JavaHashMap(java_string_hash)
    for tp in partitions:
        groups.compute_if_absent(tp.topic, list).append(tp.partition)
    return list(groups.items())


def encode_key(transactional_id: str) -> bytes:
    """``TransactionLog.keyToBytes``."""
    w = Writer()
    w.i16(KEY_VERSION)
    w.string(transactional_id)
    return w.bytes()


def encode_value(m: TxnMetadata, version: int) -> bytes:
    """``TransactionLog.valueToBytes`` at ``TransactionLogValue`` version ``version`` (0 or 1)."""
    if version not in _VALUE_VERSIONS:
        raise ValueError(f"TransactionLogValue version {version}: Kafka 4.4.0 writes 0 or 1")
    if m.state is TxnState.EMPTY and m.partitions:
        raise ValueError(f"Transaction is not expected to have any partitions since its state is Empty: {m}")
    if version == 0 and m.client_transaction_version != 0:
        # the field is tagged (version 1+): Kafka's writer throws UnsupportedVersionException
        raise ValueError("Attempted to write a non-default clientTransactionVersion at version 0")
    groups = None if m.state is TxnState.EMPTY else grouped_partitions(m.partitions)
    flexible = version >= 1
    w = Writer()
    w.i16(version)
    w.i64(m.producer_id)
    w.i16(m.producer_epoch)
    w.i32(m.txn_timeout_ms)
    w.i8(m.state.id)
    if groups is None:
        w.uvarint(0) if flexible else w.i32(-1)
    elif flexible:
        w.uvarint(len(groups) + 1)
        for topic, ids in groups:
            w.compact_string(topic)
            w.int32s(ids)
            w.uvarint(0)  # the struct's tagged fields
    else:
        w.i32(len(groups))
        for topic, ids in groups:
            w.string(topic)
            w.i32(len(ids))
            for p in ids:
                w.i32(p)
    w.i64(m.txn_last_update_ms)
    w.i64(m.txn_start_ms)
    if flexible:
        tags: list[tuple[int, bytes]] = []
        if m.prev_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, m.prev_producer_id.to_bytes(8, "big", signed=True)))
        if m.next_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_NEXT_PRODUCER_ID, m.next_producer_id.to_bytes(8, "big", signed=True)))
        if m.client_transaction_version != 0:
            tags.append((_TAG_CLIENT_VERSION, m.client_transaction_version.to_bytes(2, "big", signed=True)))
        w.uvarint(len(tags))
        for tag, body in tags:
            w.tag(tag, body)
    return w.bytes()


def decode_key(key: bytes) -> str | None:
    """The transactional id of a record's key, or ``None`` for a key version Kafka does not know (its
    loader skips those)."""
    r = Reader(key, "TransactionLogKey")
    if r.i16() != KEY_VERSION:
        return None
    transactional_id = r.string()
    r.end()
    return transactional_id


def decode_record(key: bytes, value: bytes | None) -> TransactionLogRecord | None:
    """``TransactionLog.read``: the record, or ``None`` for an unknown key or value version. Malformed
    bytes raise :class:`~kgroup.model.PeerError`."""
    transactional_id = decode_key(key)
    if transactional_id is None:
        return None
    if value is None:
        return TransactionLogRecord(transactional_id, None)
    r = Reader(value, "TransactionLogValue")
    version = r.i16()
    if version not in _VALUE_VERSIONS:
        return None
    flexible = version >= 1
    producer_id = r.i64()
    epoch = r.i16()
    timeout = r.i32()
    status = r.i8()
    try:
        state = TxnState.from_id(status)
    except ValueError as e:
        raise PeerError(f"TransactionLogValue: {e}") from None
    groups: tuple[tuple[str, tuple[int, ...]], ...] | None
    if flexible:

        def flexible_group() -> tuple[str, tuple[int, ...]]:
            topic = r.compact_string()
            ids = r.int32s()
            r.tagged({})
            return topic, ids

        n = r.compact_length()
        groups = None if n is None else tuple(flexible_group() for _ in range(n))
    else:
        n = r.i32()
        if n < -1 or n > len(r.data) - r.pos:
            raise PeerError(f"TransactionLogValue: array length {n} does not fit the record")
        groups = None if n == -1 else tuple((r.string(), r.array(r.i32)) for _ in range(n))
    last_update = r.i64()
    start = r.i64()
    tagged = {
        _TAG_PREVIOUS_PRODUCER_ID: NO_PRODUCER_ID,
        _TAG_NEXT_PRODUCER_ID: NO_PRODUCER_ID,
        _TAG_CLIENT_VERSION: TV_0,
    }
    if flexible:

        def long_field(tag: int) -> Callable[[Reader], None]:
            def read(sub: Reader) -> None:
                tagged[tag] = sub.i64()

            return read

        def read_client_version(sub: Reader) -> None:
            tagged[_TAG_CLIENT_VERSION] = sub.i16()

        r.tagged(
            {
                _TAG_PREVIOUS_PRODUCER_ID: long_field(_TAG_PREVIOUS_PRODUCER_ID),
                _TAG_NEXT_PRODUCER_ID: long_field(_TAG_NEXT_PRODUCER_ID),
                _TAG_CLIENT_VERSION: read_client_version,
            }
        )
    r.end()
    partitions: tuple[TopicPartition, ...] = ()
    if state is not TxnState.EMPTY:
        if groups is None:
            raise PeerError("TransactionLogValue: a non-Empty transaction's partitions are null")
        partitions = loaded_order(TopicPartition(t, p) for t, ids in groups for p in ids)
    return TransactionLogRecord(
        transactional_id,
        TxnMetadata(
            transactional_id=transactional_id,
            producer_id=producer_id,
            prev_producer_id=tagged[_TAG_PREVIOUS_PRODUCER_ID],
            next_producer_id=tagged[_TAG_NEXT_PRODUCER_ID],
            producer_epoch=epoch,
            last_producer_epoch=NO_PRODUCER_EPOCH,
            txn_timeout_ms=timeout,
            state=state,
            partitions=partitions,
            txn_start_ms=start,
            txn_last_update_ms=last_update,
            client_transaction_version=tagged[_TAG_CLIENT_VERSION],
        ),
    )
