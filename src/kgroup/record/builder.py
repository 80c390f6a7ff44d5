"""The one place a recording's events, ownership and timeline are built from a group's coordinator
records, for both recorders: ``kgroup record`` (:class:`kgroup.record.history.GroupHistory`, from
``__consumer_offsets``) and ``kgroup serve --record`` (:mod:`kgroup.broker.recorder`, from the
coordinator's own records as they are written).

A recorder turns what its records say about a classic group into calls here (:meth:`joined`,
:meth:`left`, :meth:`group_state`, :meth:`own`, ...); the consumer groups' (KIP-848) records are the
same in both places and are followed here whole (:meth:`consumer_record`):

* The group epoch (``ConsumerGroupMetadata``) bumps when a rebalance starts; these are the rebalance
  starts. ``ConsumerGroupCurrentMemberAssignment`` is what each member has acknowledged: ownership
  follows it record by record (partitions pending revocation stay with their owner and are drawn
  "revoking"). The group state (Empty, Assigning, Reconciling, Stable) is derived from the records as
  Kafka's ``ConsumerGroup.maybeUpdateGroupState`` derives it.

What the rebalances cost the group, in both kinds of recording (``metrics``):

* ``unowned_partition_ms`` — partition-milliseconds during which a partition the group was assigned
  (from its first owner on) had no owner while the group had members (not Empty or Dead): the
  stop-the-world time the records show. For a classic group whose assignor is eager (every built-in
  one but ``cooperative-sticky``) every member holds nothing from the end of the join phase until
  the generation's assignment is stored (:meth:`RecordingBuilder.eager_rejoin`): its members revoked
  everything before they rejoined. The records do not say when a rebalance started, so this is the
  part of the eager stop-the-world window they show, a lower bound.
* ``committed_progress_records`` — the offsets committed past: over the partitions, the last
  committed offset read minus the first (``commits`` holds each partition's commits over time).

Pure: no I/O, no clock; times are milliseconds since the group's first record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
    PartitionEpochs,
)
from kgroup.group.records.share import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupTargetAssignmentMetadata,
)
from kgroup.model import PeerError, TopicId
from kgroup.record.share import ShareEvent, ShareRecording

__all__ = [
    "FOLLOWED_CONSUMER_RECORDS",
    "RecordingBuilder",
    "assignment_partitions",
    "eager_assignor",
    "partition_key",
    "unowned_ms",
]

#: a KIP-848 group whose members name no ``group.remote.assignor``: the broker's first
#: ``group.consumer.assignors`` assigns (the records do not name it; Kafka's default is ``uniform``)
BROKER_DEFAULT_ASSIGNOR = "the broker's default (uniform unless group.consumer.assignors is changed)"
#: group states in which the group has no member
_MEMBERLESS = ("Empty", "Dead")

#: the KIP-848 records :meth:`RecordingBuilder.consumer_record` follows (its recorders pass these on)
FOLLOWED_CONSUMER_RECORDS = (
    ConsumerGroupMetadata,
    ConsumerGroupMemberMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupTargetAssignmentMember,
)


def assignment_partitions(data: bytes) -> list[str] | None:
    """The consumer protocol assignment's partitions (``None``: not the consumer protocol)."""
    if not data:
        return []
    # the bytes come from a client: refuse implausible lengths before kio's native reader sees them
    from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment

    from kgroup.wire.consumer_protocol import decode_assignment
    from kgroup.wire.guard import check_body

    try:
        check_body(ConsumerProtocolAssignment, data, 2)
        return [str(tp) for tp in decode_assignment(data).partitions]
    except PeerError:
        return None


def partition_key(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return topic, int(number)


def _no_names(topic: TopicId) -> str | None:
    return None


def eager_assignor(name: str | None) -> bool | None:
    """Whether a classic group whose members chose ``name`` rebalances eagerly: ``False`` when the
    assignor supports the cooperative protocol, ``None`` when kgroup does not know it (a plug-in of
    the group's clients). Members that also list an eager assignor (a rolling upgrade from
    ``[cooperative-sticky, range]``) are eager even under ``cooperative-sticky``: the records do
    not carry a member's other assignors, so such a group is taken as cooperative."""
    if not name:
        return None
    from kgroup.assignors import create_assignor
    from kgroup.model import KgroupError, RebalanceProtocol

    try:
        return not create_assignor(name).supports(RebalanceProtocol.COOPERATIVE)
    except KgroupError:
        return None


def unowned_ms(
    intervals: list[tuple[str, str, int, int]], active: list[tuple[int, int]], end: int
) -> dict[str, int]:
    """Per partition, the milliseconds from its first owner on (up to ``end``) in which nobody owned it
    while the group had members (``active``: sorted, disjoint spans)."""
    owned: dict[str, list[tuple[int, int]]] = {}
    for p, _member, start, stop in intervals:
        owned.setdefault(p, []).append((start, stop))
    out: dict[str, int] = {}
    for p, spans in owned.items():
        spans.sort()
        gaps: list[tuple[int, int]] = []
        at = spans[0][0]
        for start, stop in spans:
            if start > at:
                gaps.append((at, start))
            at = max(at, stop)
        if at < end:
            gaps.append((at, end))
        out[p] = sum(
            max(0, min(b, hi) - max(a, lo)) for a, b in gaps for lo, hi in active if lo < b and a < hi
        )
    return out


@dataclass(slots=True)
class RecordingBuilder:
    """One group's recording as it is built; ``topic_name`` names the topic ids of consumer-group
    records (an unknown id is shown as its base64 string)."""

    group_id: str
    topic_name: Callable[[TopicId], str | None] = _no_names
    events: list[dict[str, Any]] = field(default_factory=list)
    ownership: list[dict[str, Any]] = field(default_factory=list)
    owned: dict[str, set[str]] = field(default_factory=dict)  # member -> partitions
    owner_since: dict[str, tuple[str, int]] = field(default_factory=dict)  # partition -> (member, since)
    intervals: list[tuple[str, str, int, int]] = field(default_factory=list)
    revoking_since: dict[str, int] = field(default_factory=dict)  # partition -> since
    handover: list[tuple[str, str, int, int]] = field(default_factory=list)
    rebalance_starts: list[int] = field(default_factory=list)
    stable_marks: list[int] = field(default_factory=list)
    generation: int = 0
    protocol: str | None = None
    protocol_type: str | None = None
    state: str | None = None
    members_seen: set[str] = field(default_factory=set)
    classic_members: set[str] = field(default_factory=set)
    last_ms: int = 0
    # consumer groups (KIP-848)
    consumer_protocol: bool = False  # the group uses KIP-848's consumer protocol
    group_epoch: int = 0
    target_epoch: int = 0
    member_epochs: dict[str, tuple[int, MemberAssignmentState]] = field(default_factory=dict)
    consumer_stables: int = 0
    unknown_topic_ids: set[TopicId] = field(default_factory=set)
    share_members: set[str] = field(default_factory=set)
    server_assignors: dict[str, str] = field(default_factory=dict)  # member -> its remote assignor
    # what Kafka's describe shows of each member (client id, host, instance id), and when it was in
    member_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    commits: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # partition -> (t, offset)
    #: a classic group's protocol when it was last Stable: what its members ran when a rebalance began
    stable_protocol: str | None = None
    #: a share group (KIP-932): its members' sharing and its share partitions' deliveries
    share: ShareRecording | None = None

    # --- members -----------------------------------------------------------------------------------

    def members(self) -> set[str]:
        members = set(self.classic_members) | set(self.member_epochs)
        if self.share is not None:
            members |= set(self.share_members)
        return members

    def joined(
        self,
        t: int,
        member_id: str,
        instance_id: str | None,
        replaces: str | None = None,
        *,
        client_id: str | None = None,
        client_host: str | None = None,
    ) -> None:
        """A member joined (the first time its id is seen); a static member's new id that
        ``replaces`` its old one joins anew and takes over what the old id owned. ``client_id`` and
        ``client_host`` are what Kafka's describe shows of it (kept up to date on every call)."""
        info = self.member_info.setdefault(
            member_id, {"member_id": member_id, "joined_ms": t, "left_ms": None, "left_reason": None}
        )
        info["group_instance_id"] = instance_id
        if client_id is not None:
            info["client_id"] = client_id
        if client_host is not None:
            info["client_host"] = client_host
        if replaces is not None:
            self.members_seen.add(member_id)
            self.events.append(
                {
                    "t_ms": t,
                    "kind": "joined_group",
                    "member_id": member_id,
                    "group_instance_id": instance_id,
                    "replaces": replaces,
                }
            )
            self._replace(replaces, member_id, t)
        elif member_id not in self.members_seen:
            self.members_seen.add(member_id)
            self.events.append(
                {"t_ms": t, "kind": "joined_group", "member_id": member_id, "group_instance_id": instance_id}
            )

    def left(self, t: int, member_id: str, reason: str | None = None, *, lost: bool = False) -> None:
        """A member left the group (``reason`` when the records tell); its partitions are revoked, or
        ``lost`` when the coordinator removed it."""
        event: dict[str, Any] = {"t_ms": t, "kind": "left_group", "member_id": member_id}
        if reason is not None:
            event["reason"] = reason
        self.events.append(event)
        info = self.member_info.get(member_id)
        if info is not None:
            info["left_ms"], info["left_reason"] = t, reason
        self.server_assignors.pop(member_id, None)
        self.own(t, member_id, set(), self.generation, lost=lost)
        self.owned.pop(member_id, None)
        self.classic_members.discard(member_id)
        self.member_epochs.pop(member_id, None)

    def _replace(self, old: str, new: str, t: int) -> None:
        info = self.member_info.get(old)
        if info is not None:
            info["left_ms"], info["left_reason"] = t, f"replaced by {new}"
        partitions = self.owned.pop(old, set())
        self.classic_members.discard(old)
        if not partitions:
            return
        self.owned[new] = partitions
        for p in partitions:
            owner = self.owner_since.get(p)
            if owner is not None and owner[0] == old:
                self.intervals.append((p, old, owner[1], t))
                self.owner_since[p] = (new, t)

    # --- the group -----------------------------------------------------------------------------------

    def group_state(self, t: int, state: str, generation: int) -> None:
        self.state = state
        self.events.append({"t_ms": t, "kind": "group_state", "state": state, "generation": generation})

    def own(
        self,
        t: int,
        member_id: str,
        now: set[str],
        generation: int,
        *,
        lost: bool = False,
        always: bool = False,
    ) -> None:
        """``member_id`` owns ``now`` from ``t`` (one ownership entry when it changed, or ``always``);
        what it no longer owns is revoked, or ``lost``."""
        before = self.owned.get(member_id, set())
        if now == before and not always:
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
        gone = sorted(before - now, key=partition_key)
        self.ownership.append(
            {
                "t_ms": t,
                "member": member_id,
                "generation": generation,
                "assigned": sorted(now - before, key=partition_key),
                "revoked": [] if lost else gone,
                "lost": gone if lost else [],
            }
        )

    def eager_rejoin(self, t: int) -> None:
        """An eager classic group's join phase ended at ``t``: its members revoked everything before
        they rejoined, so nobody holds anything until the generation's assignment arrives."""
        for member_id in sorted(self.owned):
            if self.owned[member_id]:
                self.own(t, member_id, set(), self.generation)

    def commit(self, t: int, partition: str, offset: int) -> None:
        """The group committed ``offset`` for ``partition`` ("topic-p") at ``t``."""
        self.commits.setdefault(partition, []).append((t, offset))

    # --- consumer groups (KIP-848) -------------------------------------------------------------------

    def consumer_record(
        self, t: int, record: ConsumerGroupRecord, reason: str | None = None, *, lost: bool = False
    ) -> None:
        """Follow one of the group's KIP-848 records; a member it removes left for ``reason`` (when
        the recorder knows it) and ``lost`` its partitions if the coordinator removed it."""
        self.protocol_type = "consumer"
        self.consumer_protocol = True
        if isinstance(record, ConsumerGroupMetadata):
            self._group_epoch(record, t)
        elif isinstance(record, ConsumerGroupMemberMetadata):
            if record.value is None:
                self.left(t, record.member_id, reason, lost=lost)
                self._consumer_state(t)
                return
            value = record.value
            self.joined(
                t,
                record.member_id,
                value.instance_id,
                client_id=value.client_id,
                client_host=value.client_host,
            )
            if value.server_assignor:
                self.server_assignors[record.member_id] = value.server_assignor
            else:
                self.server_assignors.pop(record.member_id, None)
            self.protocol = self._preferred_assignor()
            self.member_epochs.setdefault(record.member_id, (0, MemberAssignmentState.UNKNOWN))
        elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
            if record.value is not None:
                self.target_epoch = record.value.assignment_epoch
                self.events.append({"t_ms": t, "kind": "target_assignment", "generation": self.target_epoch})
                self._consumer_state(t)
        elif isinstance(record, ConsumerGroupCurrentMemberAssignment):
            self._current_assignment(record, t)
        elif isinstance(record, ConsumerGroupTargetAssignmentMember):
            pass  # the target is the assignor's plan; ownership follows what members acknowledge

    def _preferred_assignor(self) -> str:
        """The server assignor the group's members ask for most (Kafka's
        ``computePreferredServerAssignor``: ties go to the first in Java's ``HashMap`` order), or the
        broker's default when none asks for one."""
        from kgroup.javacompat import hashmap_iteration_order

        counts: dict[str, int] = {}
        for name in self.server_assignors.values():
            counts[name] = counts.get(name, 0) + 1
        best: str | None = None
        for name in hashmap_iteration_order(counts):
            if best is None or counts[name] > counts[best]:
                best = name
        return best or BROKER_DEFAULT_ASSIGNOR

    def _group_epoch(self, record: ConsumerGroupMetadata, t: int) -> None:
        def leave_all() -> None:
            for member_id in sorted(set(self.owned) | self.members()):
                self.left(t, member_id)

        epoch = self._epoch_record(t, record.value, leave_all)
        if epoch is None:
            return
        self.group_epoch = epoch
        self.generation = epoch
        self._consumer_state(t)

    def _epoch_record(self, t: int, value: Any, leave_all: Callable[[], None]) -> int | None:
        """A KIP-848 or share group's metadata record: a tombstone (``None``: every member leaves and the
        group is Dead), or the group epoch, a higher one starting a rebalance."""
        if value is None:
            leave_all()
            self.group_state(t, "Dead", self.group_epoch)
            return None
        epoch: int = value[0]
        if epoch > self.group_epoch:
            self.rebalance_starts.append(t)
            self.events.append({"t_ms": t, "kind": "group_epoch", "generation": epoch})
        return epoch

    def _names(self, partitions: PartitionEpochs) -> set[str]:
        out: set[str] = set()
        for topic, epochs in partitions.items():
            name = self.topic_name(topic)
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
        self.own(t, record.member_id, assigned | revoking, value.member_epoch)
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
            self.group_state(t, state, self.group_epoch)
            if state == "Stable":
                self.stable_marks.append(t)
                self.consumer_stables += 1

    # --- share groups (KIP-932) ----------------------------------------------------------------------

    def _share(self) -> ShareRecording:
        if self.share is None:
            self.share = ShareRecording()
            self.protocol_type = "share"
            self.protocol = "share (the broker's simple assignor)"
        return self.share

    def share_record(self, t: int, record: Any, reason: str | None = None, *, lost: bool = False) -> None:
        """Follow one of a share group's records (:data:`kgroup.record.share.FOLLOWED_SHARE_RECORDS`).
        A share member holds no partition alone and hands nothing over: its assignment is where
        it may fetch, so it is drawn as each partition's sharers, not as ownership."""
        share = self._share()
        if isinstance(record, ShareGroupMetadata):

            def leave_all() -> None:
                for member_id in sorted(self.share_members):
                    self._share_left(t, member_id, reason, lost=lost)

            epoch = self._epoch_record(t, record.value, leave_all)
            if epoch is None:
                return
            self.group_epoch = self.generation = share.group_epoch = epoch
        elif isinstance(record, ShareGroupMemberMetadata):
            if record.value is None:
                self._share_left(t, record.member_id, reason, lost=lost)
            else:
                value = record.value
                self.joined(
                    t, record.member_id, None, client_id=value.client_id, client_host=value.client_host
                )
                self.share_members.add(record.member_id)
        elif isinstance(record, ShareGroupTargetAssignmentMetadata):
            if record.value is not None:
                share.assignment_epoch = record.value.assignment_epoch
                self.events.append(
                    {"t_ms": t, "kind": "target_assignment", "generation": share.assignment_epoch}
                )
        elif isinstance(record, ShareGroupCurrentMemberAssignment):
            if record.value is not None and record.member_id in self.share_members:
                assigned = self._names(
                    {topic: dict.fromkeys(ps, 0) for topic, ps in record.value.assigned_partitions.items()}
                )
                share.assign(t, record.member_id, assigned)
        else:
            return  # the target assignment's members, the share state's initialisation
        share.members_changed(t, len(self.share_members))
        state = "Stable" if self.share_members else "Empty"
        if state != self.state and self.state != "Dead":
            self.group_state(t, state, self.group_epoch)
            if state == "Stable":
                self.stable_marks.append(t)

    def _share_left(self, t: int, member_id: str, reason: str | None, *, lost: bool) -> None:
        if member_id not in self.share_members:
            return
        self.share_members.discard(member_id)
        self._share().assign(t, member_id, set())
        self.left(t, member_id, reason, lost=lost)

    def share_event(self, t: int, event: ShareEvent) -> None:
        """What one of the group's share partitions did at ``t`` (``kgroup serve --record``)."""
        self._share().event(t, event)

    # --- the document ----------------------------------------------------------------------------------

    def active_spans(self, end: int) -> list[tuple[int, int]]:
        """The spans (up to ``end``) in which the group had members, from its state changes."""
        spans: list[tuple[int, int]] = []
        since: int | None = None
        for event in self.events:
            if event["kind"] != "group_state":
                continue
            active = event["state"] not in _MEMBERLESS
            if active and since is None:
                since = event["t_ms"]
            elif not active and since is not None:
                spans.append((since, event["t_ms"]))
                since = None
        if since is not None:
            spans.append((since, end))
        return [(a, b) for a, b in spans if b > a]

    def document(self, scenario: str, end: int, recorded_by: str) -> dict[str, Any]:
        """The recording (``result.json``) up to ``end``: ``metrics``, ``ownership``, ``events``,
        ``members`` (as Kafka's describe shows them), ``commits`` and the ``recording`` the timeline
        draws (what members own lasts until ``end``); ``recorded_by`` names the recorder."""
        intervals = list(self.intervals) + [(p, m, since, end) for p, (m, since) in self.owner_since.items()]
        handover = list(self.handover)
        handover += [(p, "revoking", since, end) for p, since in self.revoking_since.items()]
        partitions = sorted({p for p, *_ in intervals} | {p for p, *_ in handover}, key=partition_key)
        index = {p: i for i, p in enumerate(partitions)}
        unowned = unowned_ms(intervals, self.active_spans(end), end)
        commits = sorted(self.commits.items(), key=lambda item: partition_key(item[0]))
        members = []
        for member_id, info in self.member_info.items():
            members.append(
                {
                    "member_id": member_id,
                    "group_instance_id": info.get("group_instance_id"),
                    "client_id": info.get("client_id"),
                    "client_host": info.get("client_host"),
                    "joined_ms": info["joined_ms"],
                    "left_ms": info["left_ms"],
                    "left_reason": info["left_reason"],
                    "partitions": len(self.owned.get(member_id, ())),
                }
            )
        document: dict[str, Any] = {
            "scenario": scenario,
            "metrics": {
                "rebalances": len(self.rebalance_starts),
                "group_protocol": self._group_protocol(),
                "generation": self.generation,
                "final_protocol": self.protocol,
                "protocol_type": self.protocol_type,
                "state": self.state,
                "members_seen": len(self.members_seen),
                "duration_ms": end,
                "unowned_partition_ms": sum(unowned.values()),
                "offset_commits": sum(len(points) for points in self.commits.values()),
                "committed_progress_records": sum(points[-1][1] - points[0][1] for _, points in commits),
            },
            "ownership": self.ownership,
            "events": self.events,
            "members": members,
            "commits": {p: [[t, o] for t, o in points] for p, points in commits},
            "recording": {
                "group_id": self.group_id,
                "recorded_by": recorded_by,
                "duration_ms": end,
                "partitions": partitions,
                "consumers": sorted({m for _, m, _, _ in intervals}),
                "intervals": [[index[p], m, s, e] for p, m, s, e in intervals],
                "rebalance_starts": self.rebalance_starts,
                "stable_marks": self.stable_marks,
                "handover_intervals": [[index[p], status, s, e] for p, status, s, e in handover],
                "unowned_ms": [unowned.get(p, 0) for p in partitions],
            },
        }
        if self.share is not None:
            share = self.share.document()
            document["share"] = share
            for name in ("unowned_partition_ms", "committed_progress_records"):
                document["metrics"].pop(name)  # a share group owns no partition and commits no offset
            document["metrics"].update({f"share_{name}": n for name, n in share["totals"].items()})
            recording = document["recording"]
            recording["group_type"] = "share"
            names = sorted(set(recording["partitions"]) | set(share["partitions"]), key=partition_key)
            if names != recording["partitions"]:  # a share group owns nothing: its partitions are shared
                recording["partitions"] = names
                recording["unowned_ms"] = [0 for _ in names]
        return document

    def _group_protocol(self) -> str:
        if self.share is not None:
            return "share"
        return "consumer" if self.consumer_protocol else "classic"
