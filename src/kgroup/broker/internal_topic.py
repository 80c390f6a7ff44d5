"""``__consumer_offsets`` as a readable internal topic: the coordinator's records in Kafka's formats.

Kafka's group coordinator writes its state to the compacted internal topic ``__consumer_offsets``, and
tools read it (``kafka-console-consumer`` with Kafka's formatters, ``kgroup record``). kgroup's broker
keeps its coordinator's own log (:mod:`kgroup.log.coordinator`, replayed on start) and, beside it, this
topic: after every coordinator write that the log accepted, :class:`OffsetsTopicRecords` (on the
coordinators' thread) says which records Kafka would have written and :class:`OffsetsTopicAppender`
(on the broker's loop) appends them to the group's partition (``abs(groupId.hashCode()) %
offsets.topic.num.partitions``, the partition whose leader coordinates the group) as one RecordBatch v2
(CreateTime = the broker's clock). Fetch, ListOffsets and Metadata serve it as any topic; Metadata marks
it internal; Produce to it is refused (``INVALID_TOPIC_EXCEPTION``, as Kafka refuses clients' appends to
an internal topic).

What is written (Kafka 4.4's ``GroupCoordinatorRecordHelpers``):

* offset commits and the consumer group's (KIP-848) records: kgroup's coordinator already writes them
  in Kafka's formats (:mod:`kgroup.group.records.serde`), byte for byte;
* classic groups: kgroup's coordinator writes finer-grained records of its own; this writer turns them
  into Kafka's ``GroupMetadata`` at the moments Kafka writes one — the group created by a JoinGroup (an
  empty record, generation 0; a group an offset commit creates gets none), a rebalance completed (the
  group becomes Stable: every member with its assignment; ``currentStateTimestamp`` = when the group
  entered CompletingRebalance), a join phase ending with no member (the group becomes Empty), a static
  member replaced in a Stable group — and the group's tombstone when it is deleted.

The topic is created as Kafka creates it, at the first FindCoordinator for a group (and with the first
coordinator record of a broker whose groups are older than the topic). kgroup's own, said in
``docs/record.md``: it is not compacted, a deleted group gets its
``GroupMetadata`` tombstone but no offset tombstones, and records written while the writer was not
running (a broker started on an older data directory) are not back-filled.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence

from kgroup.broker.cluster import OFFSETS_TOPIC, Cluster
from kgroup.group import GroupState, GroupView
from kgroup.group.discovery import coordinator_partition
from kgroup.group.records import (
    GroupCreated,
    GroupDeleted,
    GroupStateChanged,
    OffsetCommitted,
    Record,
    StaticMemberReplaced,
    TxnOffsetCommitted,
)
from kgroup.group.records.consumer import ConsumerGroupRecord
from kgroup.group.records.offsets_topic import (
    GROUP_METADATA_TYPE,
    GroupMetadataMember,
    GroupMetadataValue,
    encode_group_metadata_value,
)
from kgroup.group.records.serde import encode_record
from kgroup.group.records.share import ShareGroupRecord
from kgroup.wire.record_batch import TRANSACTIONAL_MASK, record_batch

__all__ = ["OffsetsEntry", "OffsetsTopicAppender", "OffsetsTopicRecords", "offsets_batch", "record_batch"]

log = logging.getLogger("kgroup.broker")

#: ``GroupCoordinatorRecordHelpers.GROUP_METADATA_VALUE_VERSION``
GROUP_METADATA_VALUE_VERSION = 3
#: the records Kafka writes as they are: offsets, the group tombstone, the consumer and share groups'
_KAFKA_FORMAT = OffsetCommitted | GroupDeleted | ConsumerGroupRecord | ShareGroupRecord
#: (group, key, value, the producer (id, epoch) of a transactional offset commit else None)
OffsetsEntry = tuple[str, bytes, bytes | None, tuple[int, int] | None]


def offsets_batch(
    entries: Sequence[tuple[bytes, bytes | None]], timestamp_ms: int, producer: tuple[int, int] | None
) -> bytes:
    """One uncompressed RecordBatch v2 of ``entries`` for ``__consumer_offsets``: with ``producer``
    (id, epoch) that producer's transactional batch (the group coordinator's own write of a
    TxnOffsetCommit, at sequence 0 as Kafka 4.4.0's coordinator writes it), else one without a producer."""
    if producer is None:
        return record_batch(entries, timestamp_ms)
    producer_id, epoch = producer
    return record_batch(
        entries,
        timestamp_ms,
        attributes=TRANSACTIONAL_MASK,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0,
    )


def _group_metadata_key(group_id: str) -> bytes:
    raw = group_id.encode("utf-8")
    return struct.pack(">hh", GROUP_METADATA_TYPE, len(raw)) + raw


def _value(view: GroupView, timestamp_ms: int, *, members: bool) -> bytes:
    protocol = view.protocol
    return encode_group_metadata_value(
        GroupMetadataValue(
            protocol_type=view.protocol_type or "",
            generation=view.generation,
            protocol=protocol,
            leader=view.leader,
            current_state_timestamp_ms=timestamp_ms,
            members=tuple(
                GroupMetadataMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(protocol) if protocol is not None else b"",
                    m.assignment,
                )
                for m in (view.members if members else ())
            ),
        ),
        GROUP_METADATA_VALUE_VERSION,
    )


class OffsetsTopicRecords:
    """What Kafka writes to ``__consumer_offsets`` for each accepted coordinator write, in Kafka's
    formats; on the coordinators' thread (it reads the groups' views)."""

    def __init__(self) -> None:
        self._state_since: dict[str, int] = {}  # group -> when it entered its current state

    def kafka_records(
        self, records: Sequence[Record], view: Callable[[str], GroupView | None]
    ) -> list[OffsetsEntry]:
        """(group, key, value, producer) of the records Kafka writes for these coordinator records: a
        transactional offset commit is Kafka's offset commit record in its producer's transactional
        batch (its end is the transaction's marker, which the transaction host appends)."""
        out: list[OffsetsEntry] = []
        # a group created by an offset commit (not a JoinGroup) gets no GroupMetadata in Kafka
        committed = {r.group_id for r in records if isinstance(r, OffsetCommitted | TxnOffsetCommitted)}
        for record in records:
            if isinstance(record, TxnOffsetCommitted):
                key, value = encode_record(OffsetCommitted(record.group_id, record.partition, record.value))
                out.append((record.group_id, key, value, (record.producer_id, record.producer_epoch)))
            elif isinstance(record, _KAFKA_FORMAT):
                key, value = encode_record(record)
                out.append((record.group_id, key, value, None))
                if isinstance(record, GroupDeleted):
                    self._state_since.pop(record.group_id, None)
            elif isinstance(record, GroupCreated):
                self._state_since[record.group_id] = record.timestamp_ms
                if record.group_id in committed:
                    continue
                empty = GroupMetadataValue("", 0, None, None, record.timestamp_ms, ())
                value = encode_group_metadata_value(empty, GROUP_METADATA_VALUE_VERSION)
                out.append((record.group_id, _group_metadata_key(record.group_id), value, None))
            elif isinstance(record, GroupStateChanged):
                since = self._state_since.get(record.group_id, record.timestamp_ms)
                self._state_since[record.group_id] = record.timestamp_ms
                current = view(record.group_id)
                if current is None:
                    continue
                if record.state is GroupState.STABLE:
                    # written at the leader's SyncGroup, while the group was CompletingRebalance
                    value = _value(current, since, members=True)
                elif record.state is GroupState.EMPTY:
                    value = _value(current, record.timestamp_ms, members=False)
                else:
                    continue
                out.append((record.group_id, _group_metadata_key(record.group_id), value, None))
            elif isinstance(record, StaticMemberReplaced):
                current = view(record.group_id)
                if current is not None and current.state is GroupState.STABLE:
                    since = self._state_since.get(record.group_id, -1)
                    value = _value(current, since, members=True)
                    out.append((record.group_id, _group_metadata_key(record.group_id), value, None))
        return out


class OffsetsTopicAppender:
    """Appends the records of :class:`OffsetsTopicRecords` to ``__consumer_offsets``, each group's to
    its partition, one RecordBatch v2 per partition; on the broker's loop (the partitions' logs are
    read there)."""

    def __init__(self, cluster: Cluster, notify: Callable[[str, int, int], None] | None = None) -> None:
        self.cluster = cluster
        self._notify = notify  # a parked fetch of the topic hears of the append

    def append(self, now_ms: int, entries: Sequence[OffsetsEntry]) -> None:
        """Append ``entries`` (group, key, value, producer) written at ``now_ms`` (already in the
        coordinator log): per partition, one batch per run of entries of one producer (none, or a
        transaction's)."""
        if not entries:
            return
        partitions = self.cluster.config.offsets_topic_partitions
        try:
            self.cluster.ensure_offsets_topic()
            by_partition: dict[
                int, list[tuple[tuple[int, int] | None, list[tuple[bytes, bytes | None]]]]
            ] = {}
            for group_id, key, value, producer in entries:
                runs = by_partition.setdefault(coordinator_partition(group_id, partitions), [])
                if not runs or runs[-1][0] != producer:
                    runs.append((producer, []))
                runs[-1][1].append((key, value))
            for partition, runs in sorted(by_partition.items()):
                plog = self.cluster.partition_log(OFFSETS_TOPIC, partition)
                if plog is None:
                    continue
                for producer, batch in runs:
                    data = offsets_batch(batch, now_ms, producer)
                    if producer is None:
                        plog.append(plog.validate(data, now_ms=now_ms), now_ms=now_ms)
                    else:
                        plog.append_coordinator(data, now_ms=now_ms)
                    if self._notify is not None:
                        self._notify(OFFSETS_TOPIC, partition, len(data))
        except Exception as exc:  # the coordinator's own log has the records: the broker keeps serving
            log.warning("cannot append to %s: %s", OFFSETS_TOPIC, exc)
