"""A group's history as ``__consumer_offsets`` tells it, as the recording ``kgroup report`` draws.

:class:`GroupHistory` takes the topic's records in offset order (:class:`OffsetsEntry`: offset, the
append timestamp, key and value bytes), keeps those of one group and builds the same document
``kgroup serve --record`` writes (``result.json``: ``metrics``, ``ownership``, ``events`` and the
``recording`` the timeline draws), plus ``commits`` (each partition's committed offsets over time).
Pure: no I/O, no clock; times are milliseconds since the group's first record. The events, ownership
and timeline are built by :class:`kgroup.record.builder.RecordingBuilder`, shared with
``kgroup serve --record``; this module reads the topic's records into it.

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
* **Consumer groups (KIP-848).** Followed by :class:`kgroup.record.builder.RecordingBuilder`, the
  builder ``kgroup serve --record`` uses too (see there).
* **Share groups (KIP-932).** Their records (types 10–15) are followed by the same builder: members,
  the group epoch and each partition's sharers. What their share partitions delivered is not in
  ``__consumer_offsets`` (see :mod:`kgroup.record.share`).
* **Offset commits.** Each ``OffsetCommit`` record is one committed offset (aborted transactional
  commits are not read when the reader reads committed records only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgroup.group.records.offsets_topic import (
    GroupMetadata,
    OffsetCommit,
    decode_offsets_record,
    record_group_id,
)
from kgroup.group.records.share_serde import SHARE_GROUP_RECORD_TYPES, decode_share_group_record
from kgroup.model import PeerError, TopicId
from kgroup.record.builder import (
    FOLLOWED_CONSUMER_RECORDS,
    RecordingBuilder,
    assignment_partitions,
    eager_assignor,
)
from kgroup.record.share import FOLLOWED_SHARE_RECORDS

__all__ = ["GroupHistory", "OffsetsEntry"]

#: the record types of share groups' records in ``__consumer_offsets`` (10-15)
_SHARE_TYPES = frozenset(SHARE_GROUP_RECORD_TYPES.values())


@dataclass(frozen=True, slots=True)
class OffsetsEntry:
    """One record of ``__consumer_offsets``: its offset, append timestamp, key and value."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


@dataclass(slots=True)
class GroupHistory:
    """The recording of ``group_id`` built from ``__consumer_offsets`` records fed to :meth:`add`.

    ``topic_names`` maps the topic ids of consumer-group records to names (an unknown id is shown as
    its base64 string; it may be replaced while reading)."""

    group_id: str
    topic_names: Mapping[TopicId, str] = field(default_factory=dict)
    source: str = "__consumer_offsets"
    start_epoch_ms: int | None = None
    last_ms: int = 0
    last_offset: int = -1
    records: int = 0
    undecodable: int = 0
    generations: int = 0  # classic generations (records with members)
    built: RecordingBuilder = field(init=False)

    def __post_init__(self) -> None:
        self.built = RecordingBuilder(self.group_id, topic_name=lambda topic: self.topic_names.get(topic))

    @property
    def unknown_topic_ids(self) -> set[TopicId]:
        return self.built.unknown_topic_ids

    # --- input -----------------------------------------------------------------------------------------

    def add(self, entry: OffsetsEntry) -> bool:
        """Apply one record; ``False`` when it is not about this group (or has no key)."""
        if entry.key is None:
            return False
        try:
            record: Any
            if len(entry.key) >= 2 and int.from_bytes(entry.key[:2], "big") in _SHARE_TYPES:
                # a share group's records (types 10-15): every key starts with the group id too
                record = decode_share_group_record(entry.key, entry.value)
                if record.group_id != self.group_id:
                    return False
            else:
                if record_group_id(entry.key) != self.group_id:
                    return False
                record = decode_offsets_record(entry.key, entry.value)
        except PeerError:
            self.undecodable += 1
            return False
        if self.start_epoch_ms is None:
            self.start_epoch_ms = entry.timestamp_ms
        before = self.last_ms
        t = max(before, entry.timestamp_ms - self.start_epoch_ms)
        self.last_ms = t
        self.last_offset = entry.offset
        self.records += 1
        if isinstance(record, GroupMetadata):
            self._group_metadata(record, t, before)
        elif isinstance(record, OffsetCommit):
            if record.offset is not None:
                self.built.commit(t, str(record.partition), record.offset)
        elif isinstance(record, FOLLOWED_CONSUMER_RECORDS):
            self.built.consumer_record(t, record)
        elif isinstance(record, FOLLOWED_SHARE_RECORDS):
            self.built.share_record(t, record)
        return True

    # --- classic groups --------------------------------------------------------------------------------

    def _group_metadata(self, record: GroupMetadata, t: int, before: int) -> None:
        """One ``GroupMetadata`` record at ``t`` (``before``: the time of the record read before it)."""
        built = self.built
        value = record.value
        if value is None:
            for member_id in sorted(set(built.owned) | built.members()):
                built.left(t, member_id)
            built.group_state(t, "Dead", built.generation)
            return
        built.protocol_type = value.protocol_type or built.protocol_type
        members = {m.member_id: m for m in value.members}
        new_generation = bool(members) and (value.generation != built.generation or built.state != "Stable")
        if new_generation and eager_assignor(built.protocol) and value.current_state_timestamp_ms >= 0:
            # the members ran an eager assignor: they revoked everything before rejoining, and hold
            # nothing from the join phase's end (currentStateTimestamp) until this assignment
            joined_at = value.current_state_timestamp_ms - (self.start_epoch_ms or 0)
            built.eager_rejoin(min(t, max(before, joined_at)))
        for member_id in sorted(built.members() - set(members)):
            built.left(t, member_id)  # the records cannot tell a member that left from one that crashed
        if not members:
            built.generation = value.generation
            built.group_state(t, "Empty", value.generation)
            return
        built.generation = value.generation
        built.protocol = value.protocol
        for m in value.members:
            built.joined(
                t, m.member_id, m.group_instance_id, client_id=m.client_id, client_host=m.client_host
            )
        if new_generation:
            self.generations += 1
            built.events.append(
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
            built.group_state(t, "Stable", value.generation)
            built.stable_marks.append(t)
        for member_id, m in sorted(members.items()):
            partitions = assignment_partitions(m.assignment)
            if partitions is not None:
                built.own(t, member_id, set(partitions), value.generation)
        built.classic_members = set(members)

    # --- output ----------------------------------------------------------------------------------------

    def document(self, now_epoch_ms: int | None = None) -> dict[str, Any]:
        """The recording (``result.json``) of what was read so far: up to the last record, or up to
        ``now_epoch_ms`` when given (a live recording: what members own lasts until now)."""
        end = self.last_ms
        if now_epoch_ms is not None and self.start_epoch_ms is not None:
            end = max(end, now_epoch_ms - self.start_epoch_ms)
        built = self.built
        document = built.document(
            f"group {self.group_id} (recorded from {self.source})", end, f"kgroup record (from {self.source})"
        )
        if not built.consumer_protocol and built.share is None:
            document["metrics"]["rebalances"] = (
                self.generations
            )  # the records carry no classic rebalance start
        document["source"] = {
            "topic": "__consumer_offsets",
            "records": self.records,
            "undecodable": self.undecodable,
            "last_offset": self.last_offset,
            "start_epoch_ms": self.start_epoch_ms,
        }
        return {key: document[key] for key in _ORDER if key in document}


#: the document's keys in the order ``kgroup record`` has always written them (``members`` added)
_ORDER = ("scenario", "metrics", "ownership", "events", "members", "commits", "share", "source", "recording")
