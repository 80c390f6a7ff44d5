"""``kgroup serve --record DIR``: a real group's rebalances in the simulator's JSON shape.

For every group the broker coordinates, the recorder follows the coordinator's records (the same
records the simulator's host follows) and writes ``DIR/<group>/result.json``: ``events`` (group state
changes with their generation, members joining and leaving), ``ownership`` (each member's assigned,
revoked and lost partitions whenever the group becomes Stable, decoded from the assignment bytes the
leader sent) and, for the chart, each partition's owner intervals, rebalance starts and Stable marks.
``kgroup report DIR`` draws them with the simulator's timeline.

Ownership is **what the coordinator handed out**: a partition is owned by a member from the Stable
point of the generation that assigned it until a later Stable point assigns it elsewhere, or the member
leaves (clients may stop processing earlier, e.g. eager consumers at the start of a rebalance).
A member removed because it sent LeaveGroup *revoked* its partitions (``left_group`` event with
``reason: "leave_group"``); a member removed by the coordinator because its session or rebalance
timeout expired *lost* them (``reason: "expired"``). A static member that rejoins under a new member
id (Kafka's static member replacement) continues under its new id from that point: the
``joined_group`` event names the id it ``replaces`` and its partitions move to the new id.
``metrics.final_protocol`` is the protocol of the last generation that had members (a group that
ends Empty keeps the protocol it ran with).

Consumer-protocol (KIP-848) groups are recorded from their records as ``kgroup record`` reads them
from ``__consumer_offsets`` (group epoch bumps are the rebalance starts, ownership follows what each
member acknowledged, partitions pending revocation are drawn "revoking"); a member that left with a
ConsumerGroupHeartbeat of epoch -1 (or -2, a static member) ``revoked`` its partitions, one removed
by the coordinator ``lost`` them. Both kinds of group are built by
:class:`kgroup.record.builder.RecordingBuilder`, the one builder both recorders share; this module
only turns the coordinator's records into its calls and writes the file.
Share groups (KIP-932) are recorded from their records the same way (members, the group epoch, each
partition's sharers: :mod:`kgroup.record.share`), and from what their share partitions do on this
broker (:meth:`GroupRecorder.share_event`, called by :class:`kgroup.broker.share_host.ShareHost` on its
share thread): deliveries, redeliveries, acknowledgements, lock timeouts and archives over time.

A transaction's offsets (TxnOffsetCommit) are held until the transaction ends: its committed offsets
enter ``commits`` when its marker commits them, an aborted transaction's never.
Times are milliseconds since the group's first record.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgroup.group import GroupState, GroupView
from kgroup.group.records import (
    GenerationStarted,
    GroupStateChanged,
    MemberRemoved,
    MemberUpserted,
    OffsetCommitted,
    Record,
    StaticMemberReplaced,
    TxnOffsetCommitted,
    TxnOffsetsEnded,
)
from kgroup.messages import ConsumerGroupHeartbeatRequest, Envelope, LeaveGroupRequest
from kgroup.model import TopicId
from kgroup.record.builder import (
    FOLLOWED_CONSUMER_RECORDS,
    RecordingBuilder,
    assignment_partitions,
    eager_assignor,
)
from kgroup.record.share import FOLLOWED_SHARE_RECORDS, ShareEvent

__all__ = ["RECORDING_FILE", "GroupRecorder"]

log = logging.getLogger("kgroup.broker")
RECORDING_FILE = "result.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_CLASSIC_RECORDS = (GroupStateChanged, GenerationStarted, MemberUpserted, MemberRemoved, StaticMemberReplaced)
#: a ConsumerGroupHeartbeat's member epoch when the member leaves (-2: a static member, for now)
_LEAVING_EPOCHS = (-1, -2)
#: a share group's recording is written at most this often while its share partitions work (and
#: whenever a record of the group is written, and at close)
_SHARE_WRITE_EVERY_MS = 1000


def _no_names(topic: TopicId) -> str | None:
    return None


@dataclass(slots=True)
class _Group:
    start_ms: int
    built: RecordingBuilder
    #: producer id -> its transaction's pending offsets (partition, offset), in commit order
    pending: dict[int, list[tuple[str, int]]] | None = None
    written_ms: int = 0


class GroupRecorder:
    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._groups: dict[str, _Group] = {}
        # the coordinators' thread (records) and the share thread (share events) both record
        self._lock = threading.Lock()

    def on_records(
        self,
        now_ms: int,
        records: Sequence[Record],
        view: Callable[[str], GroupView | None],
        requests: Sequence[Envelope] = (),
        topic_name: Callable[[TopicId], str | None] = _no_names,
    ) -> None:
        """Follow one coordinator call's records; ``requests`` are the requests that caused them (none
        for a timer: a member removed then expired; a member removed by a LeaveGroup, or by a
        ConsumerGroupHeartbeat that leaves, left). ``topic_name`` names the topic ids of KIP-848
        records."""
        with self._lock:
            self._on_records(now_ms, records, view, requests, topic_name)

    def _on_records(
        self,
        now_ms: int,
        records: Sequence[Record],
        view: Callable[[str], GroupView | None],
        requests: Sequence[Envelope],
        topic_name: Callable[[TopicId], str | None],
    ) -> None:
        touched: set[str] = set()
        left = any(_leaves(envelope.body) for envelope in requests)
        reason = "leave_group" if left else "expired"
        for record in records:
            if isinstance(record, FOLLOWED_SHARE_RECORDS):
                group = self._group(record.group_id, now_ms, topic_name)
                t = group.built.last_ms = now_ms - group.start_ms
                group.built.share_record(t, record, reason, lost=not left)
            elif isinstance(record, FOLLOWED_CONSUMER_RECORDS):
                group = self._group(record.group_id, now_ms, topic_name)
                t = group.built.last_ms = now_ms - group.start_ms
                group.built.consumer_record(t, record, reason, lost=not left)
            elif isinstance(record, _CLASSIC_RECORDS):
                group = self._group(record.group_id, now_ms, topic_name)
                t = group.built.last_ms = now_ms - group.start_ms
                _classic(group.built, record, t, view, reason, lost=not left)
            elif isinstance(record, OffsetCommitted) and record.group_id in self._groups:
                # a group recorded since its first member: its commits (a group that only commits
                # offsets, with no member, is not recorded)
                group = self._groups[record.group_id]
                t = group.built.last_ms = now_ms - group.start_ms
                group.built.commit(t, str(record.partition), record.value.offset)
            elif isinstance(record, TxnOffsetCommitted) and record.group_id in self._groups:
                # pending until the transaction ends: not a commit yet
                group = self._groups[record.group_id]
                if group.pending is None:
                    group.pending = {}
                group.pending.setdefault(record.producer_id, []).append(
                    (str(record.partition), record.value.offset)
                )
                continue
            elif isinstance(record, TxnOffsetsEnded) and record.group_id in self._groups:
                group = self._groups[record.group_id]
                offsets = (group.pending or {}).pop(record.producer_id, [])
                if not record.committed or not offsets:
                    continue  # an aborted transaction's offsets were never committed
                t = group.built.last_ms = now_ms - group.start_ms
                for partition, offset in offsets:
                    group.built.commit(t, partition, offset)
            else:
                continue
            touched.add(record.group_id)
        for group_id in touched:
            self._write(group_id, self._groups[group_id])

    def _group(self, group_id: str, now_ms: int, topic_name: Callable[[TopicId], str | None]) -> _Group:
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = _Group(now_ms, RecordingBuilder(group_id, topic_name))
        group.built.topic_name = topic_name
        return group

    def share_event(self, event: ShareEvent) -> None:
        """What a share partition did (from the share host's thread): counted in its share group's
        recording, written at most once a second."""
        with self._lock:
            group = self._groups.get(event.group_id)
            if group is None:
                return  # a share group is recorded from its first record on
            t = max(group.built.last_ms, event.now_ms - group.start_ms)
            group.built.last_ms = t
            group.built.share_event(t, event)
            if event.now_ms - group.written_ms >= _SHARE_WRITE_EVERY_MS:
                self._write(event.group_id, group)

    def _write(self, group_id: str, group: _Group) -> None:
        group.written_ms = group.start_ms + group.built.last_ms
        built = group.built
        document = built.document(
            f"group {group_id} (recorded by kgroup serve)", built.last_ms, "kgroup serve --record"
        )
        folder = self.directory / (_SAFE.sub("_", group_id) or "_")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / (RECORDING_FILE + ".tmp")
            tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            tmp.replace(folder / RECORDING_FILE)
        except OSError as exc:  # recording is best effort: the broker keeps serving
            log.warning("cannot write the recording of group %s: %s", group_id, exc)

    def close(self) -> None:
        with self._lock:
            for group_id, group in self._groups.items():
                self._write(group_id, group)


def _leaves(body: object) -> bool:
    if isinstance(body, LeaveGroupRequest):
        return True
    return isinstance(body, ConsumerGroupHeartbeatRequest) and body.member_epoch in _LEAVING_EPOCHS


def _classic(
    built: RecordingBuilder,
    record: Record,
    t: int,
    view: Callable[[str], GroupView | None],
    reason: str,
    *,
    lost: bool,
) -> None:
    """One of kgroup's classic-group records as the recording's events and ownership."""
    if isinstance(record, GenerationStarted):
        built.generation = record.generation
        if record.protocol_name is not None:  # an Empty generation keeps the last protocol
            built.protocol = record.protocol_name
    elif isinstance(record, StaticMemberReplaced | MemberUpserted):
        member = record.member
        built.joined(
            t,
            member.member_id,
            member.group_instance_id,
            replaces=record.old_member_id if isinstance(record, StaticMemberReplaced) else None,
            client_id=member.client_id,
            client_host=member.client_host,
        )
        built.classic_members.add(member.member_id)
    elif isinstance(record, MemberRemoved):
        built.left(t, record.member_id, reason, lost=lost)
    elif isinstance(record, GroupStateChanged):
        built.group_state(t, record.state.kafka_name, built.generation)
        if record.state is GroupState.PREPARING_REBALANCE:
            built.rebalance_starts.append(t)
        elif record.state is GroupState.COMPLETING_REBALANCE and eager_assignor(built.stable_protocol):
            # as kgroup record reads it from Kafka's records: eager members hold nothing from the join
            # phase's end until the assignment (they revoked everything before rejoining)
            built.eager_rejoin(t)
        elif record.state is GroupState.STABLE:
            built.stable_protocol = built.protocol
            built.stable_marks.append(t)
            current = view(record.group_id)
            if current is not None:
                for member_id, data in sorted(current.assignments.items()):
                    partitions = assignment_partitions(data)
                    if partitions is not None:
                        built.own(t, member_id, set(partitions), current.generation, always=True)
