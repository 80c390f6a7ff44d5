"""Hypothesis strategies for transaction metadata."""

from __future__ import annotations

from hypothesis import strategies as st

from kgroup.model import TopicPartition
from kgroup.transactions.metadata import TxnMetadata
from kgroup.transactions.state import MAX_EPOCH, TxnState

#: "Aa" and "BB" share a String.hashCode: their partitions collide in Java's tables
TOPICS = st.sampled_from(["t", "u", "Aa", "BB", "orders", "__consumer_offsets", "ü-topic"])
PARTITION = st.builds(TopicPartition, TOPICS, st.integers(0, 60))
PARTITIONS = st.lists(PARTITION, max_size=40, unique=True)
LONG = st.one_of(st.just(-1), st.integers(0, 2**63 - 1))


@st.composite
def metadata(draw: st.DrawFn, partitions: tuple[TopicPartition, ...] | None = None) -> TxnMetadata:
    state = draw(st.sampled_from([s for s in TxnState if s is not TxnState.DEAD]))
    parts = (
        () if state is TxnState.EMPTY else (partitions if partitions is not None else tuple(draw(PARTITIONS)))
    )
    return TxnMetadata(
        transactional_id=draw(st.text(min_size=1, max_size=20)),
        producer_id=draw(st.integers(0, 2**63 - 1)),
        prev_producer_id=draw(LONG),
        next_producer_id=draw(LONG),
        producer_epoch=draw(st.integers(0, MAX_EPOCH)),
        last_producer_epoch=draw(st.integers(-1, MAX_EPOCH)),
        txn_timeout_ms=draw(st.integers(1, 2**31 - 1)),
        state=state,
        partitions=parts,
        txn_start_ms=draw(st.integers(-1, 2**62)),
        txn_last_update_ms=draw(st.integers(0, 2**62)),
        client_transaction_version=draw(st.sampled_from([0, 1, 2])),
    )
