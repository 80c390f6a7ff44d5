"""Transactional offset commits held until their transaction ends (Kafka's ``OffsetMetadataManager``
``pendingTransactionalOffsets`` and ``openTransactionsByGroup``), for every group kind.

A TxnOffsetCommit writes :class:`~kgroup.group.records.TxnOffsetCommitted` records: the offsets are
kept here per producer id, and OffsetFetch never reads them. When the producer's transaction ends —
its marker reaches the group's ``__consumer_offsets`` partition — the coordinator writes a
:class:`~kgroup.group.records.TxnOffsetsEnded` for each group holding offsets of that producer:
replayed, a commit moves them into the group's committed offsets and an abort drops them.

As Kafka's, a pending offset is materialised only if no offset of the same partition was committed
after it was written (Kafka compares the records' offsets in ``__consumer_offsets``: "we always keep
the most recent committed offset when we have a mix of transactional and regular offset commits").
kgroup's log has no record offsets; each pending offset gets a sequence number in replay order and a
commit of its partition (a plain OffsetCommit, or another transaction's offset materialised) after it
supersedes it. A checkpoint keeps that order: the superseded pending offsets are written before the
groups' committed offsets, the others after.

While a partition has a pending offset (superseded or not) an OffsetFetch with ``require_stable``
answers it ``UNSTABLE_OFFSET_COMMIT``. Deleting a group drops its pending offsets (Kafka writes a
tombstone for each, which removes them from every open transaction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kgroup.group.records import OffsetAndMetadata, OffsetCommitted, TxnOffsetCommitted, TxnOffsetsEnded
from kgroup.group.txn import Txn
from kgroup.messages import (
    OffsetCommitPartition,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
)
from kgroup.model import ErrorCode, TopicPartition

__all__ = ["PendingTxnOffsets", "metadata_too_large", "pending_commits", "stable_answer"]


def metadata_too_large(metadata: str | None, max_bytes: int) -> bool:
    """``OffsetMetadataManager.isMetadataInvalid``: Java's ``String.length()`` (UTF-16 code units)
    above ``offset.metadata.max.bytes``."""
    return bool(
        metadata
        and len(metadata) * 2 > max_bytes  # (a UTF-16 unit per char at least)
        and len(metadata.encode("utf-16-le")) // 2 > max_bytes
    )


def pending_commits(
    txn: Txn, group_id: str, req: TxnOffsetCommitRequest, entries: tuple[OffsetCommitPartition, ...]
) -> tuple[list[tuple[TopicPartition, ErrorCode]], list[TxnOffsetCommitted]]:
    """``commitTransactionalOffset``'s loop: each partition's answer (OFFSET_METADATA_TOO_LARGE, else
    NONE) and the pending offset records of the others."""
    results: list[tuple[TopicPartition, ErrorCode]] = []
    records: list[TxnOffsetCommitted] = []
    max_bytes = txn.config.offset_metadata_max_bytes
    for entry in entries:
        if metadata_too_large(entry.committed_metadata, max_bytes):
            results.append((entry.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            continue
        value = OffsetAndMetadata(
            entry.committed_offset, entry.committed_leader_epoch, entry.committed_metadata or "", txn.now_ms
        )
        records.append(
            TxnOffsetCommitted(group_id, req.producer_id, req.producer_epoch, entry.partition, value)
        )
        results.append((entry.partition, ErrorCode.NONE))
    return results, records


def stable_answer(txn: Txn, req: OffsetFetchRequest, answer: OffsetFetchResponse) -> OffsetFetchResponse:
    """What every kind's OffsetFetch answers: ``answer``, but with ``require_stable`` each partition
    answered while an open transaction holds an offset of it is UNSTABLE_OFFSET_COMMIT (offset -1),
    as ``OffsetMetadataManager.fetchOffsets`` and ``fetchAllOffsets`` answer it."""
    pending = txn.pending_offsets
    if not req.require_stable or not pending or answer.error_code != ErrorCode.NONE:
        return answer
    group_id = req.group_id
    return OffsetFetchResponse(
        ErrorCode.NONE,
        tuple(
            OffsetFetchPartition(p.partition, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
            if p.error_code == ErrorCode.NONE and pending.has_pending(group_id, p.partition)
            else p
            for p in answer.partitions
        ),
    )


@dataclass(frozen=True, slots=True)
class _Pending:
    seq: int
    producer_epoch: int
    value: OffsetAndMetadata


class PendingTxnOffsets:
    """Every open transaction's offsets of one coordinator's groups; changed only by replay."""

    __slots__ = ("_by_producer", "_committed_seq", "_open", "_producers_of", "_seq")

    def __init__(self) -> None:
        #: producer id -> group -> partition -> its pending offset (in the order written)
        self._by_producer: dict[int, dict[str, dict[TopicPartition, _Pending]]] = {}
        #: group -> producers with a transaction that committed offsets of it (openTransactionsByGroup)
        self._open: dict[str, set[int]] = {}
        #: (group, partition) -> producers holding a pending offset of it
        self._producers_of: dict[tuple[str, TopicPartition], set[int]] = {}
        #: (group, partition) with a pending offset -> the sequence number of its last commit
        self._committed_seq: dict[tuple[str, TopicPartition], int] = {}
        self._seq = 0

    # --- questions ----------------------------------------------------------------------------------

    def __bool__(self) -> bool:
        return bool(self._by_producer)

    def has_pending(self, group_id: str, partition: TopicPartition) -> bool:
        """Kafka's ``hasPendingTransactionalOffsets``: an open transaction holds an offset of it."""
        return (group_id, partition) in self._producers_of

    def groups_of(self, producer_id: int) -> list[str]:
        """The groups holding offsets of ``producer_id``'s transaction (sorted)."""
        return sorted(self._by_producer.get(producer_id, ()))

    def pending(self, producer_id: int, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets ``producer_id``'s transaction holds for ``group_id`` (tests, tools)."""
        held = self._by_producer.get(producer_id, {}).get(group_id, {})
        return {tp: entry.value for tp, entry in held.items()}

    # --- replay ---------------------------------------------------------------------------------------

    def replay_pending(self, record: TxnOffsetCommitted) -> None:
        group_id, partition = record.group_id, record.partition
        held = self._by_producer.setdefault(record.producer_id, {}).setdefault(group_id, {})
        held.pop(partition, None)  # a new write of the partition is the newest: it moves to the end
        held[partition] = _Pending(self._seq, record.producer_epoch, record.value)
        self._seq += 1
        self._open.setdefault(group_id, set()).add(record.producer_id)
        self._producers_of.setdefault((group_id, partition), set()).add(record.producer_id)

    def observe_commit(self, group_id: str, partition: TopicPartition) -> None:
        """A plain offset commit of the partition: every offset pending for it is older."""
        key = (group_id, partition)
        if key in self._producers_of:
            self._committed_seq[key] = self._seq
            self._seq += 1

    def replay_ended(self, record: TxnOffsetsEnded, materialise: Callable[[OffsetCommitted], None]) -> None:
        """The transaction ended for the group: on a commit each pending offset no later commit
        superseded is handed to ``materialise`` (the group's kind replays it)."""
        group_id, producer_id = record.group_id, record.producer_id
        groups = self._by_producer.get(producer_id)
        held = groups.pop(group_id, None) if groups is not None else None
        if groups is not None and not groups:
            del self._by_producer[producer_id]
        producers = self._open.get(group_id)
        if producers is not None:
            producers.discard(producer_id)
            if not producers:
                del self._open[group_id]
        if not held:
            return
        for partition, entry in held.items():
            key = (group_id, partition)
            if record.committed and entry.seq > self._committed_seq.get(key, -1):
                materialise(OffsetCommitted(group_id, partition, entry.value))
                if key in self._producers_of:
                    self._committed_seq[key] = entry.seq
            self._forget(key, producer_id)

    def _forget(self, key: tuple[str, TopicPartition], producer_id: int) -> None:
        producers = self._producers_of.get(key)
        if producers is None:
            return
        producers.discard(producer_id)
        if not producers:
            del self._producers_of[key]
            self._committed_seq.pop(key, None)

    def drop_group(self, group_id: str) -> None:
        """The group was deleted: its pending offsets go (its transactions stay open until their
        markers, as Kafka's ``openTransactionsByGroup``)."""
        for groups in self._by_producer.values():
            if group_id in groups:
                groups[group_id] = {}
        for key in [k for k in self._producers_of if k[0] == group_id]:
            del self._producers_of[key]
            self._committed_seq.pop(key, None)

    # --- checkpoints ----------------------------------------------------------------------------------

    def _records(self, *, superseded: bool) -> Iterator[TxnOffsetCommitted]:
        entries: list[tuple[int, TxnOffsetCommitted]] = []
        for producer_id, groups in self._by_producer.items():
            for group_id, held in groups.items():
                for partition, entry in held.items():
                    older = entry.seq < self._committed_seq.get((group_id, partition), -1)
                    if older is superseded:
                        record = TxnOffsetCommitted(
                            group_id, producer_id, entry.producer_epoch, partition, entry.value
                        )
                        entries.append((entry.seq, record))
        entries.sort(key=lambda e: e[0])
        for _, record in entries:
            yield record

    def checkpoint_superseded(self) -> Iterator[TxnOffsetCommitted]:
        """The pending offsets a later commit superseded: written before the groups' offsets."""
        return self._records(superseded=True)

    def checkpoint_live(self) -> Iterator[TxnOffsetCommitted]:
        """The other pending offsets, in the order written: after the groups' offsets."""
        return self._records(superseded=False)

    def snapshot(self) -> tuple[object, ...]:
        return tuple(
            sorted(
                (producer_id, group_id, partition.topic, partition.partition, entry.value)
                for producer_id, groups in self._by_producer.items()
                for group_id, held in groups.items()
                for partition, entry in held.items()
            )
        )
