"""The simulator's consumer protocol (KIP-848, ``group.protocol: consumer``): what differs from classic.

With ``protocol: consumer`` the simulator runs :class:`kgroup.member.ConsumerProtocolMember` against
the same :class:`kgroup.group.GroupCoordinator`, which answers ConsumerGroupHeartbeat, assigns on the
server (``uniform`` or ``range``) and writes Kafka's consumer-group records. This module holds the
parts that only this protocol needs, so the classic path stays as it was:

* deterministic topic ids (:func:`topic_id_for`) and the coordinator's metadata image
  (:func:`metadata_image`), set at the start and again on every ``add_partitions``;
* :class:`SimMember`: the pure member with the two readings the host asks every member for (its
  ``phase`` and ``rejoin_needed``, in the classic member's terms);
* :class:`ConsumerGroupObserver`: the group followed through its records, replayed by the same
  :class:`kgroup.group.consumer.group.ConsumerGroupData` the coordinator replays — group epoch,
  assignment epoch, member epochs, target vs current assignment — with the protocol's invariants
  (epochs never go back);
* :class:`HandoverTracker`: per partition, when it was *revoking* (pending revocation at its owner)
  or *unreleased* (the target gives it to a member that does not have it yet), for the metrics and
  the timeline;
* (what the host does with one coordinator result's records is
  :func:`kgroup.sim.coordinator_results.observe_consumer_records`)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import get_args

from kgroup.group.consumer.group import ConsumerGroupData, ConsumerGroupState
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records import Record
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
)
from kgroup.member import ConsumerMemberState, ConsumerProtocolConfig, ConsumerProtocolMember, Phase
from kgroup.model import Member, TopicId, TopicPartition

__all__ = [
    "CONSUMER_FOLLOWED",
    "ConsumerGroupObserver",
    "ConsumerObservation",
    "HandoverTracker",
    "SimMember",
    "metadata_image",
    "new_member",
    "topic_id_for",
]

#: the consumer-group records the observer follows (offsets are read from the coordinator)
CONSUMER_FOLLOWED: frozenset[type] = frozenset(get_args(ConsumerGroupRecord))
_HANDOVER_RECORDS = (ConsumerGroupCurrentMemberAssignment, ConsumerGroupTargetAssignmentMember)
REVOKING = "revoking"
UNRELEASED = "unreleased"
_MAX_INTERVALS = 500_000


def topic_id_for(name: str) -> TopicId:
    """A topic's id in the simulation: derived from its name (a run is a pure function of its
    scenario), as a version-4-shaped UUID so it looks like the ids Kafka hands out."""
    raw = bytearray(hashlib.blake2b(b"kgroup-sim-topic:" + name.encode(), digest_size=16).digest())
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return TopicId.from_int(int.from_bytes(raw, "big"))


def metadata_image(topic_sizes: Mapping[str, int], version: int) -> MetadataImage:
    """The coordinator's view of the topics (Kafka's metadata image at ``version``)."""
    return MetadataImage.of(
        (TopicImage(topic_id_for(name), name, count) for name, count in topic_sizes.items()), version
    )


class SimMember(ConsumerProtocolMember):
    """The consumer-protocol member as the simulator's host reads it: ``phase`` and
    ``rejoin_needed`` in the classic member's terms (STABLE: reconciled and heartbeating; FAILED:
    Kafka's FATAL; anything else is a rebalance in progress, during which ``poll()`` matters)."""

    __slots__ = ()

    @property
    def phase(self) -> Phase:
        state = self.state
        if state is ConsumerMemberState.STABLE:
            return Phase.STABLE
        if state is ConsumerMemberState.FATAL:
            return Phase.FAILED
        return Phase.JOINING

    @property
    def rejoin_needed(self) -> bool:
        return False

    def give_metadata(self, topic_sizes: Iterable[str]) -> None:
        """The cluster's topics (every simulated topic exists from the start)."""
        self.update_metadata({topic_id_for(name): name for name in topic_sizes})


def new_member(
    *,
    group_id: str,
    consumer_id: str,
    static: bool,
    rack: str | None,
    server_assignor: str | None,
    max_poll_interval_ms: int,
    enable_auto_commit: bool,
    auto_commit_interval_ms: int,
    rng: Random,
) -> SimMember:
    """One consumer process's member (``client.id`` and, when static, ``group.instance.id`` = its id)."""
    config = ConsumerProtocolConfig(
        group_id=group_id,
        client_id=consumer_id,
        group_instance_id=consumer_id if static else None,
        rack_id=rack,
        remote_assignor=server_assignor,
        max_poll_interval_ms=max_poll_interval_ms,
        enable_auto_commit=enable_auto_commit,
        auto_commit_interval_ms=auto_commit_interval_ms,
    )
    return SimMember(config, rng=rng)


@dataclass(slots=True)
class ConsumerObservation:
    """What one batch of consumer-group records changed."""

    #: the group's new state (at the end of the batch), with its group epoch, if it changed
    states: list[tuple[ConsumerGroupState, int]] = field(default_factory=list)
    #: the group epochs the batch moved to (each bump is a rebalance)
    epoch_bumps: list[int] = field(default_factory=list)
    #: members, their epochs or the target changed: every member's standing may have changed
    membership_changed: bool = False
    #: current or target assignments changed: revoking / unreleased partitions may have changed
    handover_changed: bool = False
    violations: list[str] = field(default_factory=list)


class ConsumerGroupObserver:
    """One consumer group followed through its records (replayed as the coordinator replays them)."""

    __slots__ = ("_default_assignor", "data", "group_id")

    followed = CONSUMER_FOLLOWED

    def __init__(self, group_id: str, default_assignor: str = "uniform") -> None:
        self.group_id = group_id
        self.data = ConsumerGroupData(group_id)
        self._default_assignor = default_assignor

    # --- what the host reads (the classic GroupObserver's names) -------------------------------------

    @property
    def generation(self) -> int:
        """The group epoch."""
        return self.data.group_epoch

    @property
    def state(self) -> ConsumerGroupState:
        return self.data.state

    @property
    def protocol(self) -> str:
        """The server assignor the coordinator runs (the members' choice, else its default)."""
        return self.data.preferred_server_assignor() or self._default_assignor

    def is_current(self, generation: int, member_id: str) -> bool:
        """A member's claim is current while the coordinator counts it in the group (with any
        epoch: each member has its own, and the coordinator hands a partition to a new owner only
        after the previous one released it)."""
        member = self.data.members.get(member_id)
        return member is not None and member.member_epoch > 0

    def is_reconciled(self, member_id: str, epoch: int) -> bool:
        """The coordinator holds the member at the target assignment's epoch, reconciled, and the
        member knows that epoch."""
        member = self.data.members.get(member_id)
        data = self.data
        return (
            member is not None
            and member.member_epoch == epoch
            and member.is_reconciled_to(data.assignment_epoch)
            and data.group_epoch == data.assignment_epoch
        )

    def is_empty(self) -> bool:
        return self.data.state in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD)

    def is_stable(self) -> bool:
        return self.data.state is ConsumerGroupState.STABLE

    # --- records ---------------------------------------------------------------------------------------

    def observe(self, records: Iterable[Record]) -> ConsumerObservation:
        seen = ConsumerObservation()
        data = self.data
        before = data.state
        for record in records:
            kind = type(record)
            if kind not in CONSUMER_FOLLOWED or record.group_id != self.group_id:
                continue
            seen.membership_changed = True
            if kind in _HANDOVER_RECORDS:
                seen.handover_changed = True
            if isinstance(record, ConsumerGroupMetadata):
                if record.value is None:  # the group is deleted: a new one starts from scratch
                    self.data = data = ConsumerGroupData(self.group_id)
                    seen.handover_changed = True
                    continue
                epoch = record.value[0]
                if epoch < data.group_epoch:
                    seen.violations.append(f"group epoch went back from {data.group_epoch} to {epoch}")
                elif epoch > data.group_epoch:
                    seen.epoch_bumps.append(epoch)
            elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
                if record.value is not None and record.value.assignment_epoch < data.assignment_epoch:
                    seen.violations.append(
                        f"assignment epoch went back from {data.assignment_epoch} to "
                        f"{record.value.assignment_epoch}"
                    )
            elif isinstance(record, ConsumerGroupCurrentMemberAssignment) and record.value is not None:
                old = data.members.get(record.member_id)
                new_epoch = record.value.member_epoch
                if old is not None and old.member_epoch > 0 and 0 <= new_epoch < old.member_epoch:
                    seen.violations.append(
                        f"member {record.member_id}'s epoch went back from {old.member_epoch} to {new_epoch}"
                    )
            data.apply(record)  # type: ignore[arg-type]
        if data.state is not before:
            seen.states.append((data.state, data.group_epoch))
        return seen

    def handover(self) -> tuple[set[tuple[TopicId, int]], set[tuple[TopicId, int]]]:
        """The partitions pending revocation at their owner, and those the target gives to a member
        that does not hold them yet (and nobody is revoking), in the coordinator's view."""
        data = self.data
        revoking: set[tuple[TopicId, int]] = set()
        for member in data.members.values():
            for topic_id, partitions in member.partitions_pending_revocation.items():
                revoking.update((topic_id, p) for p in partitions)
        unreleased: set[tuple[TopicId, int]] = set()
        for member_id, target in data.target_assignment.items():
            holder = data.members.get(member_id)
            assigned = holder.assigned_partitions if holder is not None else {}
            for topic_id, wanted in target.items():
                have = assigned.get(topic_id, {})
                for p in wanted:
                    if p not in have and (topic_id, p) not in revoking:
                        unreleased.add((topic_id, p))
        return revoking, unreleased

    def stable_assignment(self) -> tuple[list[Member], dict[str, tuple[TopicPartition, ...]]]:
        """The members (with their subscriptions) and what the coordinator holds them to own."""
        names = {topic_id_for(n): n for m in self.data.members.values() for n in m.subscribed_topic_names}
        members: list[Member] = []
        assignment: dict[str, tuple[TopicPartition, ...]] = {}
        for member_id in sorted(self.data.members):
            member = self.data.members[member_id]
            members.append(
                Member(
                    member_id=member_id,
                    topics=tuple(sorted(member.subscribed_topic_names)),
                    group_instance_id=member.instance_id,
                    rack_id=member.rack_id,
                )
            )
            owned: list[TopicPartition] = []
            for topic_id, partitions in member.assigned_partitions.items():
                name = names.get(topic_id, str(topic_id))
                owned.extend(TopicPartition(name, p) for p in partitions)
            assignment[member_id] = tuple(sorted(owned))
        return members, assignment


class HandoverTracker:
    """Per partition (by index), when it was revoking or unreleased: intervals for the timeline and
    partition-ms totals (``revoking_partition_ms``, ``unreleased_partition_ms``)."""

    __slots__ = ("_since", "intervals", "intervals_dropped", "revoking_ms", "unreleased_ms")

    def __init__(self) -> None:
        self._since: dict[int, tuple[str, int]] = {}  # partition -> (status, since)
        self.intervals: list[tuple[int, str, int, int]] = []  # (partition, status, start, end)
        self.intervals_dropped = 0
        self.revoking_ms = 0
        self.unreleased_ms = 0

    def update(self, revoking: Iterable[int], unreleased: Iterable[int], now_ms: int) -> None:
        status = dict.fromkeys(unreleased, UNRELEASED)
        status.update(dict.fromkeys(revoking, REVOKING))  # revoking wins (its owner still holds it)
        since = self._since
        for p, (was, start) in list(since.items()):
            if status.get(p) != was:
                self._end(p, was, start, now_ms)
                del since[p]
        for p, now_status in status.items():
            if p not in since:
                since[p] = (now_status, now_ms)

    def _end(self, p: int, status: str, start: int, end: int) -> None:
        if end <= start:
            return
        if status == REVOKING:
            self.revoking_ms += end - start
        else:
            self.unreleased_ms += end - start
        if len(self.intervals) >= _MAX_INTERVALS:
            self.intervals_dropped += 1
            return
        self.intervals.append((p, status, start, end))

    def close(self, now_ms: int) -> None:
        for p, (status, start) in sorted(self._since.items()):
            self._end(p, status, start, now_ms)
        self._since.clear()
