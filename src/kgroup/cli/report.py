"""``kgroup report DIR``: the HTML timeline of groups recorded by ``kgroup serve --record DIR``.

Each recorded group (``DIR/<group>/result.json``) gets ``DIR/<group>/index.html`` with the
simulator's partition-owner timeline (:func:`kgroup.report.timeline.timeline_image`), the facts of the
recording and its events.
"""

from __future__ import annotations

from pathlib import Path

import typer

from kgroup.model import KgroupError

RECORDING_FILE = "result.json"


def write_recording_report(path: Path) -> Path:
    """``index.html`` beside one recording; returns its path."""
    from kgroup.report.html import Report
    from kgroup.report.recording import load_recording, recording_sections

    recording = load_recording(path)
    report = Report(
        title=f"kgroup: {recording.data['scenario']}",
        subtitle="a real group, recorded by kgroup serve --record",
    )
    report.extend(recording_sections(recording))
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
