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
ends Empty keeps the protocol it ran with). Consumer-protocol (KIP-848) groups are not recorded.
Times are milliseconds since the group's first record.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.group import GroupState, GroupView
from kgroup.group.records import (
    GenerationStarted,
    GroupStateChanged,
    MemberRemoved,
    MemberUpserted,
    Record,
    StaticMemberReplaced,
)
from kgroup.messages import Envelope, LeaveGroupRequest
from kgroup.model import PeerError
from kgroup.wire.consumer_protocol import decode_assignment

__all__ = ["RECORDING_FILE", "GroupRecorder"]

log = logging.getLogger("kgroup.broker")
RECORDING_FILE = "result.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _assignment_partitions(data: bytes) -> list[str] | None:
    if not data:
        return []
    # the bytes come from a client: refuse implausible lengths before kio's native reader sees them
    from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment

    from kgroup.wire.guard import check_body

    try:
        check_body(ConsumerProtocolAssignment, data, 2)
        return [str(tp) for tp in decode_assignment(data).partitions]
    except PeerError:
        return None  # not the consumer protocol: nothing to draw


@dataclass(slots=True)
class _Group:
    group_id: str
    start_ms: int
    events: list[dict[str, Any]] = field(default_factory=list)
    ownership: list[dict[str, Any]] = field(default_factory=list)
    owned: dict[str, list[str]] = field(default_factory=dict)  # member -> partitions
    owner_since: dict[str, tuple[str, int]] = field(default_factory=dict)  # partition -> (member, since)
    intervals: list[tuple[str, str, int, int]] = field(default_factory=list)
    rebalance_starts: list[int] = field(default_factory=list)
    stable_marks: list[int] = field(default_factory=list)
    generation: int = 0
    protocol: str | None = None
    last_ms: int = 0


class GroupRecorder:
    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._groups: dict[str, _Group] = {}

    def on_records(
        self,
        now_ms: int,
        records: Sequence[Record],
        view: Callable[[str], GroupView | None],
        requests: Sequence[Envelope] = (),
    ) -> None:
        """Follow one coordinator call's records; ``requests`` are the requests that caused them (none
        for a timer: a member removed then expired; a member removed by a LeaveGroup left)."""
        touched: set[str] = set()
        leave_call = any(isinstance(envelope.body, LeaveGroupRequest) for envelope in requests)
        for record in records:
            if not isinstance(
                record,
                GroupStateChanged | GenerationStarted | MemberUpserted | MemberRemoved | StaticMemberReplaced,
            ):
                continue
            group = self._groups.get(record.group_id)
            if group is None:
                group = self._groups[record.group_id] = _Group(record.group_id, now_ms)
            t = now_ms - group.start_ms
            group.last_ms = t
            touched.add(record.group_id)
            if isinstance(record, GenerationStarted):
                group.generation = record.generation
                if record.protocol_name is not None:  # an Empty generation keeps the last protocol
                    group.protocol = record.protocol_name
            elif isinstance(record, StaticMemberReplaced):
                group.events.append(
                    {
                        "t_ms": t,
                        "kind": "joined_group",
                        "member_id": record.member.member_id,
                        "group_instance_id": record.member.group_instance_id,
                        "replaces": record.old_member_id,
                    }
                )
                self._replace(group, record.old_member_id, record.member.member_id, t)
            elif isinstance(record, MemberUpserted):
                if not any(e.get("member_id") == record.member.member_id for e in group.events):
                    group.events.append(
                        {
                            "t_ms": t,
                            "kind": "joined_group",
                            "member_id": record.member.member_id,
                            "group_instance_id": record.member.group_instance_id,
                        }
                    )
            elif isinstance(record, MemberRemoved):
                group.events.append(
                    {
                        "t_ms": t,
                        "kind": "left_group",
                        "member_id": record.member_id,
                        "reason": "leave_group" if leave_call else "expired",
                    }
                )
                self._release(group, record.member_id, t, lost=not leave_call)
            elif isinstance(record, GroupStateChanged):
                group.events.append(
                    {
                        "t_ms": t,
                        "kind": "group_state",
                        "state": record.state.kafka_name,
                        "generation": group.generation,
                    }
                )
                if record.state is GroupState.PREPARING_REBALANCE:
                    group.rebalance_starts.append(t)
                elif record.state is GroupState.STABLE:
                    group.stable_marks.append(t)
                    current = view(record.group_id)
                    if current is not None:
                        self._stable(group, current, t)
        for group_id in touched:
            self._write(self._groups[group_id])

    def _release(self, group: _Group, member: str, t: int, *, lost: bool) -> None:
        partitions = group.owned.pop(member, [])
        for p in partitions:
            owner = group.owner_since.pop(p, None)
            if owner is not None:
                group.intervals.append((p, owner[0], owner[1], t))
        if partitions:
            group.ownership.append(
                {
                    "t_ms": t,
                    "member": member,
                    "generation": group.generation,
                    "assigned": [],
                    "revoked": [] if lost else partitions,
                    "lost": partitions if lost else [],
                }
            )

    def _replace(self, group: _Group, old: str, new: str, t: int) -> None:
        """A static member's new id takes over what its old id owned, from ``t`` on."""
        partitions = group.owned.pop(old, [])
        if not partitions:
            return
        group.owned[new] = partitions
        for p in partitions:
            owner = group.owner_since.get(p)
            if owner is not None and owner[0] == old:
                group.intervals.append((p, old, owner[1], t))
                group.owner_since[p] = (new, t)

    def _stable(self, group: _Group, view: GroupView, t: int) -> None:
        for member_id, data in sorted(view.assignments.items()):
            partitions = _assignment_partitions(data)
            if partitions is None:
                continue
            before = set(group.owned.get(member_id, []))
            now = set(partitions)
            for p in sorted(before - now):
                owner = group.owner_since.pop(p, None)
                if owner is not None and owner[0] == member_id:
                    group.intervals.append((p, member_id, owner[1], t))
            for p in sorted(now - before):
                previous = group.owner_since.get(p)
                if previous is not None:  # handed over from another member at this Stable point
                    group.intervals.append((p, previous[0], previous[1], t))
                group.owner_since[p] = (member_id, t)
            group.owned[member_id] = sorted(now)
            group.ownership.append(
                {
                    "t_ms": t,
                    "member": member_id,
                    "generation": view.generation,
                    "assigned": sorted(now - before),
                    "revoked": sorted(before - now),
                    "lost": [],
                }
            )

    def _document(self, group: _Group) -> dict[str, Any]:
        end = group.last_ms
        intervals = list(group.intervals) + [
            (p, m, since, end) for p, (m, since) in group.owner_since.items()
        ]
        partitions = sorted(
            {p for p, *_ in intervals}, key=lambda s: (s.rpartition("-")[0], int(s.rpartition("-")[2]))
        )
        consumers = sorted({m for _, m, _, _ in intervals})
        return {
            "scenario": f"group {group.group_id} (recorded by kgroup serve)",
            "metrics": {
                "rebalances": len(group.rebalance_starts),
                "generation": group.generation,
                "final_protocol": group.protocol,
                "members_seen": len({e["member_id"] for e in group.events if e["kind"] == "joined_group"}),
                "duration_ms": end,
            },
            "ownership": group.ownership,
            "events": group.events,
            "recording": {
                "group_id": group.group_id,
                "duration_ms": end,
                "partitions": partitions,
                "consumers": consumers,
                "intervals": [[partitions.index(p), m, s, e] for p, m, s, e in intervals],
                "rebalance_starts": group.rebalance_starts,
                "stable_marks": group.stable_marks,
            },
        }

    def _write(self, group: _Group) -> None:
        folder = self.directory / (_SAFE.sub("_", group.group_id) or "_")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / (RECORDING_FILE + ".tmp")
            tmp.write_text(json.dumps(self._document(group), indent=2) + "\n", encoding="utf-8")
            tmp.replace(folder / RECORDING_FILE)
        except OSError as exc:  # recording is best effort: the broker keeps serving
            log.warning("cannot write the recording of group %s: %s", group.group_id, exc)

    def close(self) -> None:
        for group in self._groups.values():
            self._write(group)
