"""``kgroup report DIR``: the HTML report of groups recorded by ``kgroup record`` or
``kgroup serve --record DIR``.

Each recorded group (``DIR/<group>/result.json``) gets ``DIR/<group>/index.html`` with the facts of
the recording, what its rebalances cost, the simulator's partition-owner timeline
(:func:`kgroup.report.timeline.timeline_image`), its members and its events, and
``DIR/<group>/timeline.html``, the interactive timeline (:mod:`kgroup.report.interactive`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from kgroup.model import KgroupError

RECORDING_FILE = "result.json"


def write_recording_report(path: Path) -> Path:
    """``index.html`` beside one recording; returns its path."""
    from kgroup.report.html import Report
    from kgroup.report.interactive import TIMELINE_FILE, timeline_page
    from kgroup.report.recording import load_recording, recorded_by, recording_sections
    from kgroup.report.share import is_share_recording

    recording = load_recording(path)
    report = Report(
        title=f"kgroup: {recording.data['scenario']}",
        subtitle=f"a real group, recorded by {recorded_by(recording.data)}",
    )
    share = is_share_recording(recording.data)  # a share group owns no partition: no owner timeline
    report.extend(recording_sections(recording, interactive=not share))
    report.attach("result.json", path.read_text(encoding="utf-8"))
    title = f"kgroup: {recording.data['scenario']}"
    if not share:
        report.attach(
            TIMELINE_FILE,
            timeline_page(recording.result, title, f"Recorded by {recorded_by(recording.data)}."),
        )
    return report.write(path.parent)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_command(
        directory: Path = typer.Argument(  # noqa: B008
            ..., help="The folder given to `kgroup record --out` or `kgroup serve --record`."
        ),
    ) -> None:
        """Draw the report of every group recorded by `kgroup record` or `kgroup serve --record DIR`."""
        if not directory.is_dir():
            raise KgroupError(
                f"{directory}: not a folder; give the folder of `kgroup record --out` "
                "or `kgroup serve --record`"
            )
        recordings = sorted(directory.glob(f"*/{RECORDING_FILE}"))
        if not recordings:
            raise KgroupError(f"{directory}: no recorded group (no */{RECORDING_FILE}); record with --record")
        for path in recordings:
            typer.echo(str(write_recording_report(path)))
