"""A real group's rebalances, recorded by ``kgroup serve --record``, as report sections.

The recording (``<dir>/<group>/result.json``, written by :mod:`kgroup.broker.recorder`) has the
simulator's result shape, so the simulator's timeline draws it. Used by ``kgroup report DIR`` and by
the demo's pipeline stage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError
from kgroup.report.html import Facts, Section, Table

__all__ = ["Recording", "load_recording", "recording_sections"]


@dataclass(frozen=True, slots=True)
class Recording:
    path: Path
    data: dict[str, Any]
    result: Any  # kgroup.sim.result.SimResult

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.data["metrics"])


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


def recording_sections(recording: Recording, *, title_prefix: str = "", events: bool = True) -> list[Section]:
    """Facts, the partition-owner timeline and (optionally) the event table of one recording."""
    from kgroup.report.timeline import timeline_image

    metrics = recording.metrics
    sections = [
        Section(
            f"{title_prefix}Recording",
            (
                Facts(
                    tuple(
                        (k, v if isinstance(v, int | str | float) or v is None else str(v))
                        for k, v in metrics.items()
                    )
                ),
            ),
            anchor="rec-facts",
        ),
        Section(
            f"{title_prefix}Partition owners over time",
            (timeline_image(recording.result),),
            anchor="rec-owners",
        ),
    ]
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


def _event_kind(event: dict[str, Any]) -> str:
    reasons = {"leave_group": "LeaveGroup", "expired": "session/rebalance timeout"}
    reason = reasons.get(event.get("reason", ""))
    return f"{event['kind']} ({reason})" if reason else str(event["kind"])


def _event_subject(event: dict[str, Any]) -> str:
    subject = str(event.get("state") or event.get("member_id") or "")
    if event.get("replaces"):
        subject += f" (static {event.get('group_instance_id')}, replaces {event['replaces']})"
    return subject
