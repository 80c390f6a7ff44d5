"""A share group (KIP-932) in a recording: its members and each partition's sharers from the group's
records, and what its share partitions delivered, as time series.

Two inputs, both pure (no I/O, no clock: times are the recording's milliseconds):

* the share group's records (``ShareGroupMetadata``, ``ShareGroupMemberMetadata``,
  ``ShareGroupCurrentMemberAssignment``, … — Kafka's record types 10–15 in ``__consumer_offsets``):
  members joining and leaving (on :class:`~kgroup.record.builder.RecordingBuilder`, as for the other
  kinds), the group epoch (each bump is a rebalance start), and each member's assigned partitions —
  a share partition has as many **sharers** as members assigned it;
* :class:`ShareEvent`\\ s, what ``kgroup serve``'s share partitions did (``kgroup serve --record``
  only: a broker's share partitions keep no such history in any topic): records acquired (each
  range with its delivery count: a count above 1 is a **redelivery**), acknowledged (accepted,
  released, rejected), locks timed out, a leaving member's records released, and which of those
  records were **archived** at the delivery-count limit (``group.share.delivery.count.limit``).

Counts are per record (a range of 10 offsets acquired is 10 deliveries) and kept per second
(``bucket_ms``) for the group and for each partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgroup.group.records.share import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
)
from kgroup.share.partition import AcknowledgementBatch
from kgroup.share.records import AcknowledgeType, AcquiredRecords, PersisterStateBatch, RecordState

__all__ = [
    "ACKNOWLEDGED",
    "ACQUIRED",
    "COUNTERS",
    "FOLLOWED_SHARE_RECORDS",
    "LOCK_TIMEOUT",
    "MEMBER_RELEASED",
    "ShareEvent",
    "ShareRecording",
]

FOLLOWED_SHARE_RECORDS = (
    ShareGroupMetadata,
    ShareGroupMemberMetadata,
    ShareGroupCurrentMemberAssignment,
    ShareGroupTargetAssignmentMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupStatePartitionMetadata,
)

#: what a share partition did (the kinds of :class:`ShareEvent`)
ACQUIRED = "acquired"
ACKNOWLEDGED = "acknowledged"
LOCK_TIMEOUT = "lock_timeout"
MEMBER_RELEASED = "member_released"

#: the counts a recording keeps, per record
COUNTERS = (
    "deliveries",  # records acquired (every delivery, the first and each redelivery)
    "redeliveries",  # records acquired with a delivery count above 1
    "accepted",  # acknowledged ACCEPT
    "released",  # acknowledged RELEASE (available again, or archived at the limit)
    "rejected",  # acknowledged REJECT (archived)
    "lock_timeouts",  # acquired records whose acquisition lock expired
    "released_on_leave",  # acquired records a leaving member (closed share session) gave back
    "archived",  # records archived at the delivery-count limit (released or timed out at the limit)
)
_BUCKET_MS = 1000


@dataclass(frozen=True, slots=True)
class ShareEvent:
    """One call of a share partition: ``kind`` is one of :data:`ACQUIRED`, :data:`ACKNOWLEDGED`,
    :data:`LOCK_TIMEOUT`, :data:`MEMBER_RELEASED`; ``written`` is the state it persisted (the records'
    new states, with their delivery counts)."""

    now_ms: int
    group_id: str
    topic: str
    partition: int
    kind: str
    member_id: str
    acquired: tuple[AcquiredRecords, ...] = ()
    acknowledged: tuple[AcknowledgementBatch, ...] = ()
    written: tuple[PersisterStateBatch, ...] = ()


def _per_record_types(batch: AcknowledgementBatch) -> list[int]:
    size = batch.last_offset - batch.first_offset + 1
    if len(batch.acknowledge_types) == 1:
        return [batch.acknowledge_types[0]] * size
    return list(batch.acknowledge_types[:size])


def event_counts(event: ShareEvent) -> dict[str, int]:
    """What one event adds to the counters (only those it changes)."""
    out: dict[str, int] = {}

    def add(name: str, n: int) -> None:
        if n:
            out[name] = out.get(name, 0) + n

    archived = sum(
        b.last_offset - b.first_offset + 1 for b in event.written if b.delivery_state == RecordState.ARCHIVED
    )
    if event.kind == ACQUIRED:
        for a in event.acquired:
            add("deliveries", a.count)
            if a.delivery_count > 1:
                add("redeliveries", a.count)
    elif event.kind == ACKNOWLEDGED:
        types = [t for batch in event.acknowledged for t in _per_record_types(batch)]
        add("accepted", types.count(AcknowledgeType.ACCEPT))
        add("released", types.count(AcknowledgeType.RELEASE))
        rejected = types.count(AcknowledgeType.REJECT)
        add("rejected", rejected)
        # a REJECT and a GAP archive too: what is archived beyond them was released at the limit
        add("archived", max(0, archived - rejected - types.count(AcknowledgeType.GAP)))
    elif event.kind in (LOCK_TIMEOUT, MEMBER_RELEASED):
        total = sum(b.last_offset - b.first_offset + 1 for b in event.written)
        add("lock_timeouts" if event.kind == LOCK_TIMEOUT else "released_on_leave", total)
        add("archived", archived)
    return out


@dataclass(slots=True)
class _Series:
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    buckets: dict[int, dict[str, int]] = field(default_factory=dict)

    def add(self, t: int, counts: dict[str, int]) -> None:
        bucket = self.buckets.setdefault(t // _BUCKET_MS * _BUCKET_MS, dict.fromkeys(COUNTERS, 0))
        for name, n in counts.items():
            self.totals[name] += n
            bucket[name] += n

    def document(self) -> dict[str, Any]:
        times = sorted(self.buckets)
        return {
            "totals": dict(self.totals),
            "t_ms": times,
            **{name: [self.buckets[t][name] for t in times] for name in COUNTERS},
        }


@dataclass(slots=True)
class ShareRecording:
    """A share group's membership, sharers and share-partition events (see the module)."""

    #: member -> its assigned partitions ("topic-p")
    assigned: dict[str, set[str]] = field(default_factory=dict)
    #: partition -> [t, sorted members] at each change
    sharers: dict[str, list[tuple[int, list[str]]]] = field(default_factory=dict)
    #: [t, members] at each change
    members_over_time: list[tuple[int, int]] = field(default_factory=list)
    group: _Series = field(default_factory=_Series)
    partitions: dict[str, _Series] = field(default_factory=dict)
    group_epoch: int = 0
    assignment_epoch: int = 0

    def members_changed(self, t: int, count: int) -> None:
        if not self.members_over_time or self.members_over_time[-1][1] != count:
            self.members_over_time.append((t, count))

    def assign(self, t: int, member_id: str, partitions: set[str]) -> None:
        """``member_id`` is assigned ``partitions`` from ``t`` (nothing: it left)."""
        before = self.assigned.get(member_id, set())
        if partitions == before:
            return
        if partitions:
            self.assigned[member_id] = set(partitions)
        else:
            self.assigned.pop(member_id, None)
        for p in sorted(before ^ partitions):
            members = sorted(m for m, ps in self.assigned.items() if p in ps)
            self.sharers.setdefault(p, []).append((t, members))

    def event(self, t: int, event: ShareEvent) -> None:
        counts = event_counts(event)
        if not counts:
            return
        self.group.add(t, counts)
        name = f"{event.topic}-{event.partition}"
        self.partitions.setdefault(name, _Series()).add(t, counts)

    def document(self) -> dict[str, Any]:
        names = sorted(set(self.sharers) | set(self.partitions), key=_partition_key)
        return {
            "bucket_ms": _BUCKET_MS,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members_over_time": [[t, n] for t, n in self.members_over_time],
            "totals": dict(self.group.totals),
            "series": self.group.document(),
            "partitions": {
                p: {
                    "sharers": [[t, ms] for t, ms in self.sharers.get(p, ())],
                    "series": self.partitions.get(p, _Series()).document(),
                }
                for p in names
            },
        }


def _partition_key(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return topic, int(number) if number.isdigit() else -1
