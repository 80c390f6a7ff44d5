"""``kgroup report DIR``: the HTML timeline of groups recorded by ``kgroup serve --record DIR``.

Each recorded group (``DIR/<group>/result.json``) gets ``DIR/<group>/index.html`` with the
simulator's partition-owner timeline (:func:`kgroup.report.timeline.timeline_image`), the facts of the
recording and its events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from kgroup.model import KgroupError

RECORDING_FILE = "result.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KgroupError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); re-record it") from None
    if not isinstance(data, dict) or not isinstance(data.get("recording"), dict):
        raise KgroupError(f"{path}: not a recording of `kgroup serve --record` (no 'recording' object)")
    return data


def write_recording_report(path: Path) -> Path:
    """``index.html`` beside one recording; returns its path."""
    from kgroup.report.html import Facts, Report, Section, Table
    from kgroup.report.timeline import timeline_image
    from kgroup.sim.result import SimResult
    from kgroup.sim.scenario import Scenario

    data = _load(path)
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
    )
    metrics = data["metrics"]
    report = Report(
        title=f"kgroup: {data['scenario']}", subtitle="a real group, recorded by kgroup serve --record"
    )
    report.add(
        Section(
            "Recording",
            (
                Facts(
                    tuple(
                        (k, v if isinstance(v, int | str | float) or v is None else str(v))
                        for k, v in metrics.items()
                    )
                ),
            ),
            anchor="rec-facts",
        )
    )
    report.add(Section("Partition owners over time", (timeline_image(result),), anchor="rec-owners"))
    rows = tuple(
        (e["t_ms"], e["kind"], e.get("state") or e.get("member_id") or "", e.get("generation", ""))
        for e in data["events"]
    )
    report.add(
        Section(
            "Events", (Table(("t (ms)", "event", "state / member", "generation"), rows),), anchor="rec-events"
        )
    )
    report.attach("result.json", path.read_text(encoding="utf-8"))
    return report.write(path.parent)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_command(
        directory: Path = typer.Argument(..., help="The folder given to `kgroup serve --record`."),  # noqa: B008
    ) -> None:
        """Draw the rebalance timeline of every group recorded by `kgroup serve --record DIR`."""
        if not directory.is_dir():
            raise KgroupError(f"{directory}: not a folder; give the folder of `kgroup serve --record`")
        recordings = sorted(directory.glob(f"*/{RECORDING_FILE}"))
        if not recordings:
            raise KgroupError(f"{directory}: no recorded group (no */{RECORDING_FILE}); record with --record")
        for path in recordings:
            typer.echo(str(write_recording_report(path)))
