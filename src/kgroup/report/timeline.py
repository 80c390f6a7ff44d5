"""The simulator's charts and report sections: partition ownership over time, lag, comparisons.

* :func:`timeline_image` – one row per partition, a bar per owner interval coloured by consumer, the
  background showing through where nobody of the current generation owned the partition (the
  stop-the-world gaps); dashed red lines where a rebalance started, dotted green where the group
  became Stable.
* :func:`lag_image` – total committed lag and total position lag of the subscribed partitions.
* :func:`simulation_sections` / :func:`comparison_sections` – report sections (for
  :class:`kgroup.report.html.Report`, e.g. the demo's report), and :func:`write_simulation_report` /
  :func:`write_comparison_report`, which write a self-contained report folder.

Charts use matplotlib's object API (no pyplot state), imported inside the functions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgroup.report.charts import figure_to_image
from kgroup.report.html import Facts, Image, Paragraph, Report, Section, Table
from kgroup.sim.compare import SUMMARY_COLUMNS
from kgroup.sim.demo_stage import RebalanceStageData
from kgroup.sim.result import SimResult

__all__ = [
    "RebalanceStageResult",
    "comparison_image",
    "comparison_sections",
    "lag_image",
    "simulation_sections",
    "timeline_image",
    "write_comparison_report",
    "write_simulation_report",
]

_GAP_COLOUR = "#f6d5d5"
_MAX_MARKERS = 400


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _markers(ax: Any, result: SimResult, scale: float) -> None:
    for t in result.rebalance_starts[:_MAX_MARKERS]:
        ax.axvline(t / scale, color="#c0392b", linestyle="--", linewidth=0.7, alpha=0.8)
    for t in result.stable_marks[:_MAX_MARKERS]:
        ax.axvline(t / scale, color="#27ae60", linestyle=":", linewidth=0.7, alpha=0.8)


def _time_unit(duration_ms: int) -> tuple[float, str]:
    if duration_ms >= 3 * 3_600_000:
        return 3_600_000.0, "time (h)"
    if duration_ms >= 3 * 60_000:
        return 60_000.0, "time (min)"
    return 1000.0, "time (s)"


def timeline_image(result: SimResult, element_id: str = "sim-timeline") -> Image:
    """Each partition's owner over time, gaps and rebalances visible."""
    from matplotlib import colormaps
    from matplotlib.patches import Patch

    n = max(1, len(result.partitions))
    scale, unit = _time_unit(result.scenario.duration_ms)
    fig = _figure(12, min(18.0, max(3.0, 0.22 * n + 1.5)))
    ax = fig.add_subplot()
    ax.set_facecolor(_GAP_COLOUR)
    cmap = colormaps["tab20"]
    colours = {c: cmap(i % 20) for i, c in enumerate(result.consumers)}
    spans: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p, owner, start, end in result.intervals:
        spans.setdefault((owner, p), []).append((start / scale, (end - start) / scale))
    for (owner, p), bars in spans.items():
        ax.broken_barh(bars, (p - 0.45, 0.9), facecolors=colours.get(owner, "#888888"), linewidth=0)
    _markers(ax, result, scale)
    ax.set_xlim(0, result.scenario.duration_ms / scale)
    ax.set_ylim(n - 0.5, -0.5)
    if n <= 60:
        ax.set_yticks(range(n))
        ax.set_yticklabels(result.partitions, fontsize=7)
    else:
        ax.set_ylabel(f"{n} partitions")
    ax.set_xlabel(unit)
    owners = {owner for owner, _ in spans}
    handles = [Patch(facecolor=colours[c], label=c) for c in result.consumers if c in owners][:30]
    handles.append(Patch(facecolor=_GAP_COLOUR, label="no owner"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return figure_to_image(
        fig,
        alt="partition owners over time",
        caption="Coloured: the consumer of the current generation owning the partition; pink: nobody "
        "(stop-the-world). Dashed red: a rebalance starts; dotted green: the group is Stable.",
        element_id=element_id,
        fmt="png",
    )


def lag_image(result: SimResult) -> Image:
    """Total lag of the subscribed partitions over time."""
    scale, unit = _time_unit(result.scenario.duration_ms)
    fig = _figure(12, 3.5)
    ax = fig.add_subplot()
    ts = [s.t_ms / scale for s in result.lag]
    ax.plot(ts, [s.committed_lag for s in result.lag], label="log end - committed", linewidth=1.2)
    ax.plot(ts, [s.position_lag for s in result.lag], label="log end - position", linewidth=1.2)
    _markers(ax, result, scale)
    ax.set_xlim(0, result.scenario.duration_ms / scale)
    ax.set_xlabel(unit)
    ax.set_ylabel("records")
    ax.legend(loc="upper left", fontsize=8)
    return figure_to_image(
        fig,
        alt="consumer lag over time",
        caption="Total lag of the subscribed partitions, sampled; rebalance markers as above.",
        element_id="sim-lag",
        fmt="png",
    )


def comparison_image(summary: Sequence[dict[str, Any]], metrics: Sequence[str]) -> Image:
    """Horizontal bars per variant, one panel per metric."""
    labels = [str(r["variant"]) for r in summary]
    fig = _figure(4.2 * len(metrics), 0.35 * len(labels) + 1.5)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for k, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        ax.barh(range(len(labels)), [float(r[metric]) for r in summary], color="#4c78a8")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels if k == 0 else [], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(metric, fontsize=9)
    return figure_to_image(fig, alt="strategies compared", element_id="sim-compare", fmt="png")


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (int, float, str)):
        return value
    return json.dumps(value)


def simulation_sections(result: SimResult) -> list[Section]:
    """The report sections of one simulation run."""
    sc = result.scenario
    g = sc.group
    m = result.metrics
    facts = Facts(
        (
            ("scenario", sc.name),
            ("seed", sc.seed),
            ("virtual time (ms)", sc.duration_ms),
            ("assignors", ", ".join(g.assignors)),
            ("session.timeout.ms", g.session_timeout_ms),
            ("heartbeat.interval.ms", g.heartbeat_interval_ms),
            ("max.poll.interval.ms", g.max_poll_interval_ms),
        )
    )
    scalar = tuple((k, _cell(v)) for k, v in m.items() if not isinstance(v, (list, dict)))
    times = ", ".join("never" if t is None else f"{t} ms" for t in m["time_to_stable_ms"]) or "(no events)"
    violations = m["invariant_violations"]
    checks: list[Paragraph] = (
        [Paragraph("All invariants held after every step.")]
        if not violations
        else [Paragraph(v) for v in violations]
    )
    return [
        Section("Simulation", (facts,), anchor="sim-run"),
        Section("Partition owners over time", (timeline_image(result),), anchor="sim-owners"),
        Section("Lag over time", (lag_image(result),), anchor="sim-lag-over-time"),
        Section(
            "Metrics",
            (
                Table(("metric", "value"), scalar),
                Paragraph(f"Time to stable after each scenario event: {times}."),
                Paragraph("Definitions of every metric: docs/simulator.md."),
            ),
            anchor="sim-metrics",
        ),
        Section("Invariants", tuple(checks), anchor="sim-invariants"),
    ]


def comparison_sections(
    title: str,
    summary: Sequence[dict[str, Any]],
    columns: Sequence[str],
    skipped: Sequence[tuple[str, str]],
) -> list[Section]:
    """The report sections of a comparison (a summary table, bar charts, what Kafka cannot run)."""
    charts = [c for c in ("unowned_partition_ms", "rebalances", "records_reprocessed") if c in columns]
    blocks: list[Any] = [
        Table(
            tuple(columns), tuple(tuple(r[c] for c in columns) for r in summary), caption="means over seeds"
        ),
    ]
    if summary and charts:
        blocks.append(comparison_image(summary, charts))
    blocks.extend(Paragraph(f"Not run: {label}: {why}.") for label, why in skipped)
    return [Section(title, tuple(blocks), anchor="sim-comparison")]


def write_simulation_report(result: SimResult, out_dir: str | Path) -> Path:
    """A report folder for one run (``index.html`` + ``result.json``); returns the page's path."""
    report = Report(
        title=f"kgroup simulation: {result.scenario.name}", subtitle="deterministic rebalance simulator"
    )
    report.extend(simulation_sections(result))
    report.attach("result.json", result.to_json())
    return report.write(out_dir)


def write_comparison_report(
    title: str,
    summary: Sequence[dict[str, Any]],
    columns: Sequence[str],
    skipped: Sequence[tuple[str, str]],
    out_dir: str | Path,
    rows: Sequence[dict[str, Any]] = (),
) -> Path:
    """A report folder for a comparison (``index.html`` + ``runs.json``); returns the page's path."""
    report = Report(title=title, subtitle="kgroup simulate --compare")
    report.extend(comparison_sections("Strategies compared", summary, columns, skipped))
    report.attach("runs.json", json.dumps(list(rows), indent=2) + "\n")
    return report.write(out_dir)


class RebalanceStageResult:
    """The demo's rebalance stage as a ``kgroup.demo`` stage result (JSON, terminal lines, sections)."""

    def __init__(self, data: RebalanceStageData) -> None:
        self.data = data

    def to_json(self) -> dict[str, Any]:
        return self.data.to_json()

    def summary_lines(self) -> list[str]:
        lines = [
            f"rebalance simulations: {len(self.data.rows)} runs of {self.data.scenario.name} "
            f"({len(self.data.summary)} variants × {len(self.data.seeds)} seeds)"
        ]
        best = min(self.data.summary, key=lambda r: r["unowned_partition_ms"], default=None)
        worst = max(self.data.summary, key=lambda r: r["unowned_partition_ms"], default=None)
        if best is not None and worst is not None:
            lines.append(
                f"least stop-the-world: {best['variant']} "
                f"({best['unowned_partition_ms']:,.0f} partition-ms); "
                f"most: {worst['variant']} ({worst['unowned_partition_ms']:,.0f})"
            )
        return lines

    def report_sections(self) -> list[Section]:
        data = self.data
        sc = data.scenario
        intro = Paragraph(
            f"{len(sc.consumers)} consumers of {', '.join(f'{t} ({n} partitions)' for t, n in sc.topics)} "
            "go through a rolling restart, a crash and a scale-out, simulated with kgroup's coordinator and "
            f"members under every strategy and protocol Kafka can run, {len(data.seeds)} seed(s) each "
            "(one Spark task per simulation). unowned_partition_ms is the stop-the-world cost: partition-"
            "milliseconds with no owner in the current generation."
        )
        sections = comparison_sections("Rebalances compared", data.summary, SUMMARY_COLUMNS, data.skipped)
        sections[0] = Section(sections[0].title, (intro, *sections[0].blocks), anchor="sim-rebalances")
        for label, result in data.highlights:
            slug = label.replace("/", "-")
            sections.append(
                Section(
                    f"Timeline: {label}",
                    (timeline_image(result, element_id=f"sim-timeline-{slug}"),),
                    anchor=f"sim-timeline-{slug}",
                )
            )
        return sections
