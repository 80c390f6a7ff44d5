"""A real group's rebalances, recorded by ``kgroup serve --record`` or ``kgroup record``, as report
sections.

The recording (``<dir>/<group>/result.json``, built by :mod:`kgroup.record.builder`) has the
simulator's result shape, so the simulator's timeline draws it. Used by ``kgroup report DIR`` and by
the demo's pipeline stage. Its sections: the facts, what the rebalances cost (unowned
partition-time and committed-offset progress, each explained), the partition owners over time, the
members as Kafka's describe shows them, and the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError
from kgroup.report.html import Facts, Image, Paragraph, Section, Table

__all__ = ["Recording", "load_recording", "recorded_by", "recording_sections"]

#: a recording's figures as the report's facts name them (others by their JSON name)
_FACT_LABELS = {
    "unowned_partition_ms": "unowned partition-time (partition-s)",
    "committed_progress_records": "committed-offset progress (records)",
    "final_protocol": "final protocol (assignor)",
}
#: the partitions listed one by one in the cost table (the rest are summed up in the facts)
_MAX_PARTITION_ROWS = 60


@dataclass(frozen=True, slots=True)
class Recording:
    path: Path
    data: dict[str, Any]
    result: Any  # kgroup.sim.result.SimResult

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.data["metrics"])


def recorded_by(data: dict[str, Any]) -> str:
    """Which recorder wrote a recording (older recordings name none: ``kgroup record``'s have a
    ``source``)."""
    named = data.get("recording", {}).get("recorded_by")
    if named:
        return str(named)
    return "kgroup record" if "source" in data else "kgroup serve --record"


def load_recording(path: Path) -> Recording:
    """Read one recorded group (:class:`KgroupError` naming the file when it is not one)."""
    from kgroup.sim.result import SimResult
    from kgroup.sim.scenario import Scenario

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KgroupError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); re-record it") from None
    if not isinstance(data, dict) or not isinstance(data.get("recording"), dict):
        raise KgroupError(f"{path}: not a recording of `kgroup serve --record` (no 'recording' object)")
    rec = data["recording"]
    topics: dict[str, int] = {}
    for name in rec["partitions"]:
        topic, _, number = name.rpartition("-")
        topics[topic] = max(topics.get(topic, 0), int(number) + 1)
    scenario = Scenario(
        duration_ms=max(1, int(rec["duration_ms"])),
        topics=tuple(topics.items()),
        consumers=(),
        name=str(data["scenario"]),
    )
    result = SimResult(
        scenario=scenario,
        metrics=data["metrics"],
        ownership=data["ownership"],
        events=data["events"],
        partitions=list(rec["partitions"]),
        consumers=list(rec["consumers"]),
        intervals=[(int(p), str(m), int(s), int(e)) for p, m, s, e in rec["intervals"]],
        rebalance_starts=[int(t) for t in rec["rebalance_starts"]],
        stable_marks=[int(t) for t in rec["stable_marks"]],
        # a consumer-protocol group's revoking / unreleased spans, when the recording has them
        handover_intervals=[
            (int(p), str(status), int(s), int(e)) for p, status, s, e in rec.get("handover_intervals", ())
        ],
    )
    return Recording(path, data, result)


def recording_sections(
    recording: Recording, *, title_prefix: str = "", events: bool = True, interactive: bool = False
) -> list[Section]:
    """Facts, what the rebalances cost, the partition-owner timeline, the members and (optionally)
    the event table of one recording (``interactive``: say where its timeline.html is)."""
    from kgroup.report.share import is_share_recording, share_sections
    from kgroup.report.timeline import EXPLORE, timeline_image

    metrics = recording.metrics
    facts = []
    for key, value in metrics.items():
        if key == "unowned_partition_ms" and isinstance(value, int):
            value = round(value / 1000, 1)
        shown = value if isinstance(value, int | str | float) or value is None else str(value)
        facts.append((_FACT_LABELS.get(key, key), shown))
    sections = [Section(f"{title_prefix}Recording", (Facts(tuple(facts)),), anchor="rec-facts")]
    if is_share_recording(recording.data):
        # a share group owns no partition: its sharing and deliveries instead of an owner timeline
        sections.extend(share_sections(recording.data, title_prefix=title_prefix))
    else:
        sections += [
            Section(f"{title_prefix}What the rebalances cost", _cost_blocks(recording), anchor="rec-cost"),
            Section(
                f"{title_prefix}Partition owners over time",
                (*((Paragraph(EXPLORE),) if interactive else ()), timeline_image(recording.result)),
                anchor="rec-owners",
            ),
        ]
    members = recording.data.get("members")
    if members:
        sections.append(Section(f"{title_prefix}Members", (_members_table(members),), anchor="rec-members"))
    if events:
        rows = tuple(
            (e["t_ms"], _event_kind(e), _event_subject(e), e.get("generation", ""))
            for e in recording.data["events"]
        )
        sections.append(
            Section(
                f"{title_prefix}Events",
                (Table(("t (ms)", "event", "state / member", "generation"), rows),),
                anchor="rec-events",
            )
        )
    return sections


def _cost_blocks(recording: Recording) -> tuple[Paragraph | Table | Image, ...]:
    """The two figures a recording is for, explained, with their chart and per-partition table."""
    data = recording.data
    metrics = data["metrics"]
    rec = data["recording"]
    consumer = metrics.get("group_protocol") == "consumer"
    unowned = metrics.get("unowned_partition_ms")
    blocks: list[Paragraph | Table | Image] = []
    if unowned is None:  # a recording made before these figures existed
        blocks.append(Paragraph("This recording predates these figures: record the group again to see them."))
        return tuple(blocks)
    how = (
        "a partition revoked by one member and not yet acknowledged by the next (KIP-848 hands a "
        "partition over only after its old owner released it)"
        if consumer
        else "a partition no member of the current generation was assigned; for an eager assignor "
        "(range, roundrobin, sticky) every member holds nothing from the end of the join phase until "
        "the leader's assignment is stored, since eager members revoke everything before rejoining. "
        "The records do not say when a rebalance began, so the eager window shown is a lower bound"
    )
    blocks.append(
        Paragraph(
            f"Unowned partition-time: {unowned / 1000:,.1f} partition-seconds, summed over the "
            f"{len(rec['partitions'])} partitions the group was assigned, from each one's first owner on, "
            f"while the group had members — the time no member could consume them: {how}. "
            "On the timeline below these are the white, hatched spans."
        )
    )
    commits = data.get("commits") or {}
    progress = metrics.get("committed_progress_records", 0)
    commit_count = metrics.get("offset_commits", 0)
    if commits:
        blocks.append(
            Paragraph(
                f"Committed-offset progress: {progress:,} records — over the {len(commits)} partitions "
                f"with commits, the last committed offset minus the first ({commit_count:,} "
                "commits read). A rebalance that stops the group shows as a flat stretch of the line below; "
                "a line that steps back is a reset or a commit of an older offset (reprocessing)."
            )
        )
        blocks.append(_progress_image(recording))
    else:
        blocks.append(
            Paragraph(
                "Committed-offset progress: the group committed no offset in this recording "
                "(consumers that commit nowhere, or commit to another store, leave none)."
            )
        )
    unowned_by = rec.get("unowned_ms") or [0] * len(rec["partitions"])
    rows = []
    for index, partition in enumerate(rec["partitions"]):
        points = commits.get(partition) or []
        first = points[0][1] if points else None
        last = points[-1][1] if points else None
        rows.append(
            (
                partition,
                round(unowned_by[index] / 1000, 1),
                first,
                last,
                None if first is None or last is None else last - first,
            )
        )
    assigned = set(rec["partitions"])
    rows += [
        (p, None, pts[0][1], pts[-1][1], pts[-1][1] - pts[0][1])
        for p, pts in commits.items()
        if p not in assigned
    ]
    shown = rows
    caption = "per partition"
    if len(rows) > _MAX_PARTITION_ROWS:
        shown = sorted(rows, key=lambda r: -(r[1] or 0))[:_MAX_PARTITION_ROWS]
        caption += f": the {_MAX_PARTITION_ROWS} with the most unowned time of {len(rows)}"
    blocks.append(
        Table(
            ("partition", "unowned (s)", "first committed", "last committed", "progress (records)"),
            tuple(shown),
            caption=caption,
        )
    )
    return tuple(blocks)


def _progress_image(recording: Recording) -> Image:
    """The committed offsets over time (summed over partitions, from the first commit of each),
    with the rebalance markers of the timeline."""
    from matplotlib.figure import Figure

    from kgroup.report.charts import figure_to_image

    data = recording.data
    rec = data["recording"]
    steps: list[tuple[int, int]] = []
    for points in data["commits"].values():
        base = points[0][1]
        previous = base
        for t, offset in points:
            steps.append((int(t), offset - previous))
            previous = offset
    steps.sort()
    times, totals, total = [0], [0], 0
    for t, delta in steps:
        total += delta
        times.append(t)
        totals.append(total)
    end = max(1, int(rec["duration_ms"]))
    times.append(end)
    totals.append(total)
    scale, unit = (60_000.0, "time (min)") if end >= 180_000 else (1000.0, "time (s)")
    figure = Figure(figsize=(12, 3.2), layout="constrained")
    axes = figure.add_subplot()
    axes.step([t / scale for t in times], totals, where="post", color="#4c78a8", linewidth=1.4)
    for t in rec.get("rebalance_starts", [])[:400]:
        axes.axvline(t / scale, color="#c0392b", linestyle="--", linewidth=0.7, alpha=0.8)
    for t in rec.get("stable_marks", [])[:400]:
        axes.axvline(t / scale, color="#27ae60", linestyle=":", linewidth=0.7, alpha=0.8)
    axes.set_xlim(0, end / scale)
    axes.set_xlabel(unit)
    axes.set_ylabel("records committed past")
    axes.spines[["top", "right"]].set_visible(False)
    return figure_to_image(
        figure,
        alt="committed-offset progress over time",
        caption="Records committed past since each partition's first commit read, summed over partitions. "
        "Dashed red: a rebalance starts (KIP-848: the group epoch is bumped; classic groups recorded from "
        "__consumer_offsets have none); dotted green: the group is Stable.",
        element_id="rec-progress",
        fmt="png",
    )


def _members_table(members: list[dict[str, Any]]) -> Table:
    """Every member seen, with what Kafka's ``kafka-consumer-groups.sh --describe --members`` shows of
    it (member id, instance id, client id, host) and when it was in the group."""
    rows = tuple(
        (
            m["member_id"],
            m.get("group_instance_id"),
            m.get("client_id"),
            m.get("client_host"),
            m.get("joined_ms"),
            m.get("left_ms"),
            _reason(m.get("left_reason")),
            m.get("partitions"),
        )
        for m in members
    )
    return Table(
        (
            "member id",
            "group.instance.id",
            "client id",
            "host",
            "joined (ms)",
            "left (ms)",
            "why it left",
            "partitions at the end",
        ),
        rows,
        caption="as Kafka's describe shows them (client id and host as the coordinator has them)",
    )


def _reason(reason: str | None) -> str | None:
    return {"leave_group": "LeaveGroup", "expired": "session/rebalance timeout"}.get(reason or "", reason)


def _event_kind(event: dict[str, Any]) -> str:
    reasons = {"leave_group": "LeaveGroup", "expired": "session/rebalance timeout"}
    reason = reasons.get(event.get("reason", ""))
    return f"{event['kind']} ({reason})" if reason else str(event["kind"])


def _event_subject(event: dict[str, Any]) -> str:
    subject = str(event.get("state") or event.get("member_id") or "")
    if event.get("replaces"):
        subject += f" (static {event.get('group_instance_id')}, replaces {event['replaces']})"
    return subject
