"""A group's history as ``__consumer_offsets`` tells it, as the recording ``kgroup report`` draws.

:class:`GroupHistory` takes the topic's records in offset order (:class:`OffsetsEntry`: offset, the
append timestamp, key and value bytes), keeps those of one group and builds the same document
``kgroup serve --record`` writes (``result.json``: ``metrics``, ``ownership``, ``events`` and the
``recording`` the timeline draws), plus ``commits`` (each partition's committed offsets over time).
Pure: no I/O, no clock; times are milliseconds since the group's first record.

What the records say, and what they cannot:

* **Classic groups.** Kafka writes a ``GroupMetadata`` record when a rebalance completes (the leader's
  SyncGroup: every member with its assignment), when a group is created (an empty record), when a
  join phase ends with nobody left (no members), and when a static member is replaced (same
  generation, new member id); a tombstone when the group is deleted. Each record with members is one
  generation: ownership changes at the record's append time (the moment the coordinator stored the
  assignment the members then receive). The records carry no rebalance start, no join reasons, no
  member that joined and left within one generation, and cannot tell a member that left from one that
  crashed: a member missing from the next record "ended". ``currentStateTimestamp`` (v2+) is when the
  join phase completed; it is kept in the generation's event.
* **Consumer groups (KIP-848).** The group epoch (``ConsumerGroupMetadata``) bumps when a rebalance
  starts; these are the rebalance starts. ``ConsumerGroupCurrentMemberAssignment`` is what each member
  has acknowledged: ownership follows it record by record (partitions pending revocation stay with
  their owner and are drawn "revoking"). The group state (Empty, Assigning, Reconciling, Stable) is
  derived from the records as Kafka's ``ConsumerGroup`` derives it.
* **Offset commits.** Each ``OffsetCommit`` record is one committed offset (aborted transactional
  commits are not read when the reader reads committed records only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
    PartitionEpochs,
)
from kgroup.group.records.offsets_topic import (
    GroupMetadata,
    OffsetCommit,
    decode_offsets_record,
    record_group_id,
)
from kgroup.model import PeerError, TopicId

__all__ = ["GroupHistory", "OffsetsEntry"]


@dataclass(frozen=True, slots=True)
class OffsetsEntry:
    """One record of ``__consumer_offsets``: its offset, append timestamp, key and value."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


def _assignment_partitions(data: bytes) -> list[str] | None:
    """The consumer protocol assignment's partitions (``None``: not the consumer protocol)."""
    if not data:
        return []
    from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment

    from kgroup.wire.consumer_protocol import decode_assignment
    from kgroup.wire.guard import check_body

    try:
        check_body(ConsumerProtocolAssignment, data, 2)
        return [str(tp) for tp in decode_assignment(data).partitions]
    except PeerError:
        return None


def _partition_key(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return topic, int(number)


@dataclass(slots=True)
class GroupHistory:
    """The recording of ``group_id`` built from ``__consumer_offsets`` records fed to :meth:`add`.

    ``topic_names`` maps the topic ids of consumer-group records to names (an unknown id is shown as
    its base64 string)."""

    group_id: str
    topic_names: Mapping[TopicId, str] = field(default_factory=dict)
    source: str = "__consumer_offsets"
    start_epoch_ms: int | None = None
    last_ms: int = 0
    last_offset: int = -1
    records: int = 0
    undecodable: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    ownership: list[dict[str, Any]] = field(default_factory=list)
    owned: dict[str, set[str]] = field(default_factory=dict)  # member -> partitions
    owner_since: dict[str, tuple[str, int]] = field(default_factory=dict)  # partition -> (member, since)
    intervals: list[tuple[str, str, int, int]] = field(default_factory=list)
    revoking_since: dict[str, int] = field(default_factory=dict)  # partition -> since
    handover: list[tuple[str, str, int, int]] = field(default_factory=list)
    rebalance_starts: list[int] = field(default_factory=list)
    stable_marks: list[int] = field(default_factory=list)
    generations: int = 0
    generation: int = 0
    protocol: str | None = None
    protocol_type: str | None = None
    members_seen: set[str] = field(default_factory=set)
    classic_members: set[str] = field(default_factory=set)
    commits: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # consumer groups (KIP-848)
    group_epoch: int = 0
    target_epoch: int = 0
    member_epochs: dict[str, tuple[int, MemberAssignmentState]] = field(default_factory=dict)
    state: str | None = None
    consumer_protocol: bool = False  # the group uses KIP-848's consumer protocol
    unknown_topic_ids: set[TopicId] = field(default_factory=set)

    # --- input -----------------------------------------------------------------------------------------

    def add(self, entry: OffsetsEntry) -> bool:
        """Apply one record; ``False`` when it is not about this group (or has no key)."""
        if entry.key is None:
            return False
        try:
            if record_group_id(entry.key) != self.group_id:
                return False
            record = decode_offsets_record(entry.key, entry.value)
        except PeerError:
            self.undecodable += 1
            return False
        if self.start_epoch_ms is None:
            self.start_epoch_ms = entry.timestamp_ms
        t = max(self.last_ms, entry.timestamp_ms - self.start_epoch_ms)
        self.last_ms = t
        self.last_offset = entry.offset
        self.records += 1
        if isinstance(record, GroupMetadata):
            self._group_metadata(record, t)
        elif isinstance(record, OffsetCommit):
            if record.offset is not None:
                self.commits.setdefault(str(record.partition), []).append((t, record.offset))
        elif isinstance(record, ConsumerGroupMetadata):
            self._consumer_group_epoch(record, t)
        elif isinstance(record, ConsumerGroupMemberMetadata):
            self._consumer_member(record, t)
        elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
            if record.value is not None:
                self.target_epoch = record.value.assignment_epoch
                self.events.append(
                    {"t_ms": t, "kind": "target_assignment", "generation": self.target_epoch}
                )
                self._consumer_state(t)
        elif isinstance(record, ConsumerGroupCurrentMemberAssignment):
            self._current_assignment(record, t)
        elif isinstance(record, ConsumerGroupTargetAssignmentMember):
            pass  # the target is the assignor's plan; ownership follows what members acknowledge
        return True

    # --- classic groups --------------------------------------------------------------------------------

    def _group_metadata(self, record: GroupMetadata, t: int) -> None:
        value = record.value
        if value is None:
            self._end_members(set(self.owned) | self._members(), t)
            self._state(t, "Dead", self.generation)
            return
        self.protocol_type = value.protocol_type or self.protocol_type
        members = {m.member_id: m for m in value.members}
        gone = self._members() - set(members)
        self._end_members(gone, t)
        if not members:
            self.generation = value.generation
            self._state(t, "Empty", value.generation)
            return
        new_generation = value.generation != self.generation or self.state != "Stable"
        self.generation = value.generation
        self.protocol = value.protocol
        for m in value.members:
            self._joined(m.member_id, m.group_instance_id, t)
        if new_generation:
            self.generations += 1
            self.events.append(
                {
                    "t_ms": t,
                    "kind": "generation",
                    "generation": value.generation,
                    "protocol": value.protocol,
                    "leader": value.leader,
                    "members": sorted(members),
                    "join_completed_epoch_ms": value.current_state_timestamp_ms,
                }
            )
            self._state(t, "Stable", value.generation)
            self.stable_marks.append(t)
        for member_id, m in sorted(members.items()):
            partitions = _assignment_partitions(m.assignment)
            if partitions is not None:
                self._own(member_id, set(partitions), t, value.generation)
        self.classic_members = set(members)

    def _members(self) -> set[str]:
        return set(self.classic_members) | set(self.member_epochs)

    def _end_members(self, members: set[str], t: int) -> None:
        for member_id in sorted(members):
            self.events.append({"t_ms": t, "kind": "left_group", "member_id": member_id})
            self._own(member_id, set(), t, self.generation)
            self.owned.pop(member_id, None)
            self.classic_members.discard(member_id)
            self.member_epochs.pop(member_id, None)

    # --- consumer groups -------------------------------------------------------------------------------

    def _consumer_group_epoch(self, record: ConsumerGroupMetadata, t: int) -> None:
        self.protocol_type = "consumer"
        self.consumer_protocol = True
        if record.value is None:
            self._end_members(set(self.owned) | self._members(), t)
            self._state(t, "Dead", self.group_epoch)
            return
        epoch = record.value[0]
        if epoch > self.group_epoch:
            self.rebalance_starts.append(t)
            self.events.append({"t_ms": t, "kind": "group_epoch", "generation": epoch})
        self.group_epoch = epoch
        self.generation = epoch
        self._consumer_state(t)

    def _consumer_member(self, record: ConsumerGroupMemberMetadata, t: int) -> None:
        self.protocol_type = "consumer"
        self.consumer_protocol = True
        if record.value is None:
            self._end_members({record.member_id}, t)
            self._consumer_state(t)
            return
        self._joined(record.member_id, record.value.instance_id, t)
        if record.value.server_assignor:
            self.protocol = record.value.server_assignor
        self.member_epochs.setdefault(record.member_id, (0, MemberAssignmentState.UNKNOWN))

    def _names(self, partitions: PartitionEpochs) -> set[str]:
        out: set[str] = set()
        for topic, epochs in partitions.items():
            name = self.topic_names.get(topic)
            if name is None:
                self.unknown_topic_ids.add(topic)
                name = str(topic)
            out.update(f"{name}-{p}" for p in epochs)
        return out

    def _current_assignment(self, record: ConsumerGroupCurrentMemberAssignment, t: int) -> None:
        value = record.value
        if value is None:
            return  # the member is leaving: its metadata tombstone ends it
        assigned = self._names(value.assigned_partitions)
        revoking = self._names(value.partitions_pending_revocation)
        self.member_epochs[record.member_id] = (value.member_epoch, value.state)
        self._own(record.member_id, assigned | revoking, t, value.member_epoch)
        for p in sorted(revoking - set(self.revoking_since)):
            self.revoking_since[p] = t
        for p in sorted(set(self.revoking_since)):
            owner = self.owner_since.get(p)
            if p not in revoking and (owner is None or owner[0] == record.member_id):
                self.handover.append((p, "revoking", self.revoking_since.pop(p), t))
        self._consumer_state(t)

    def _consumer_state(self, t: int) -> None:
        """Kafka's ``ConsumerGroup.maybeUpdateGroupState``, from the records."""
        if not self.member_epochs:
            state = "Empty"
        elif self.group_epoch > self.target_epoch:
            state = "Assigning"
        elif any(
            s is not MemberAssignmentState.STABLE or e != self.target_epoch
            for e, s in self.member_epochs.values()
        ):
            state = "Reconciling"
        else:
            state = "Stable"
        if state != self.state:
            self._state(t, state, self.group_epoch)
            if state == "Stable":
                self.stable_marks.append(t)
                self.generations += 1

    # --- shared ----------------------------------------------------------------------------------------

    def _state(self, t: int, state: str, generation: int) -> None:
        self.state = state
        self.events.append({"t_ms": t, "kind": "group_state", "state": state, "generation": generation})

    def _joined(self, member_id: str, instance_id: str | None, t: int) -> None:
        if member_id not in self.members_seen:
            self.members_seen.add(member_id)
            self.events.append(
                {"t_ms": t, "kind": "joined_group", "member_id": member_id, "group_instance_id": instance_id}
            )

    def _own(self, member_id: str, now: set[str], t: int, generation: int) -> None:
        before = self.owned.get(member_id, set())
        if now == before:
            return
        for p in sorted(before - now):
            owner = self.owner_since.get(p)
            if owner is not None and owner[0] == member_id:
                del self.owner_since[p]
                self.intervals.append((p, member_id, owner[1], t))
        for p in sorted(now - before):
            previous = self.owner_since.get(p)
            if previous is not None:  # handed over from another member at this record
                self.intervals.append((p, previous[0], previous[1], t))
            self.owner_since[p] = (member_id, t)
        self.owned[member_id] = set(now)
        self.ownership.append(
            {
                "t_ms": t,
                "member": member_id,
                "generation": generation,
                "assigned": sorted(now - before, key=_partition_key),
                "revoked": sorted(before - now, key=_partition_key),
                "lost": [],
            }
        )

    # --- output ----------------------------------------------------------------------------------------

    def document(self, now_epoch_ms: int | None = None) -> dict[str, Any]:
        """The recording (``result.json``) of what was read so far: up to the last record, or up to
        ``now_epoch_ms`` when given (a live recording: what members own lasts until now)."""
        end = self.last_ms
        if now_epoch_ms is not None and self.start_epoch_ms is not None:
            end = max(end, now_epoch_ms - self.start_epoch_ms)
        intervals = list(self.intervals) + [(p, m, since, end) for p, (m, since) in self.owner_since.items()]
        handover = list(self.handover)
        handover += [(p, "revoking", since, end) for p, since in self.revoking_since.items()]
        names = {p for p, *_ in intervals} | {p for p, *_ in handover}
        partitions = sorted(names, key=_partition_key)
        index = {p: i for i, p in enumerate(partitions)}
        consumers = sorted({m for _, m, _, _ in intervals})
        progress = {p: points[-1][1] - points[0][1] for p, points in self.commits.items()}
        commits = sorted(self.commits.items(), key=lambda item: _partition_key(item[0]))
        return {
            "scenario": f"group {self.group_id} (recorded from {self.source})",
            "metrics": {
                "rebalances": len(self.rebalance_starts) if self.consumer_protocol else self.generations,
                "group_protocol": "consumer" if self.consumer_protocol else "classic",
                "generation": self.generation,
                "final_protocol": self.protocol,
                "protocol_type": self.protocol_type,
                "state": self.state,
                "members_seen": len(self.members_seen),
                "duration_ms": end,
                "offset_commits": sum(len(points) for points in self.commits.values()),
                "committed_progress_records": sum(progress.values()),
            },
            "ownership": self.ownership,
            "events": self.events,
            "commits": {p: [[t, o] for t, o in points] for p, points in commits},
            "source": {
                "topic": "__consumer_offsets",
                "records": self.records,
                "undecodable": self.undecodable,
                "last_offset": self.last_offset,
                "start_epoch_ms": self.start_epoch_ms,
            },
            "recording": {
                "group_id": self.group_id,
                "duration_ms": end,
                "partitions": partitions,
                "consumers": consumers,
                "intervals": [[index[p], m, s, e] for p, m, s, e in intervals],
                "rebalance_starts": self.rebalance_starts,
                "stable_marks": self.stable_marks,
                "handover_intervals": [[index[p], status, s, e] for p, status, s, e in handover],
            },
        }
