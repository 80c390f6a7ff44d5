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
from kgroup.sim.compare import table_columns
from kgroup.sim.demo_stage import RebalanceStageData
from kgroup.sim.result import SimResult

__all__ = [
    "RebalanceStageResult",
    "comparison_image",
    "comparison_sections",
    "lag_image",
    "metric_label",
    "metric_value",
    "scenario_section",
    "simulation_sections",
    "timeline_image",
    "write_comparison_report",
    "write_simulation_report",
]

#: "no owner": white with grey hatching, so it cannot be taken for any consumer's colour
_GAP_FACE = "#ffffff"
_GAP_HATCH_COLOUR = "#9a9a9a"
_MAX_MARKERS = 400
#: consumer protocol: partitions pending revocation at their owner (over the owner's colour), and
#: partitions the target gives to a member that does not hold them yet
_REVOKING_HATCH, _REVOKING_COLOUR = "xxx", "#1a1a1a"
_UNRELEASED_HATCH, _UNRELEASED_COLOUR = "\\\\\\", "#d35400"
_LABEL_SIZE = 10
_TICK_SIZE = 9

#: how the comparison's columns read in a report: (header, how a value in the row's unit is
#: converted to the unit shown). Durations in partition-milliseconds are shown in
#: partition-seconds, times in seconds.
METRIC_LABELS: dict[str, tuple[str, float]] = {
    "variant": ("strategy / protocol / membership", 1.0),
    "runs": ("runs", 1.0),
    "rebalances": ("rebalances", 1.0),
    "unowned_partition_ms": ("stop-the-world (partition-s without owner)", 1000.0),
    "double_owned_ms": ("double-owned (partition-s)", 1000.0),
    "zombie_owned_ms": ("zombie-owned (partition-s)", 1000.0),
    "zombie_overlap_ms": ("zombie and owner at once (partition-s)", 1000.0),
    "moved_partitions": ("partitions moved", 1.0),
    "max_time_to_stable_ms": ("longest time to stable, from an event's start (s)", 1000.0),
    "max_lag_records": ("peak lag (records)", 1.0),
    "records_reprocessed": ("records reprocessed", 1.0),
    "invariant_violations": ("invariant violations", 1.0),
    # share groups only (KIP-932; "—" on the other protocols)
    "records_redelivered": ("records redelivered (share)", 1.0),
    "records_archived": ("records archived (share)", 1.0),
    "delivery_p99_ms": ("p99 produce to acknowledged (share, s)", 1000.0),
}


#: the comparison's columns only share groups measure (kgroup.sim.compare.SHARE_COLUMNS)
_SHARE_ONLY = frozenset({"records_redelivered", "records_archived", "delivery_p99_ms"})
#: the comparison's recovery per scenario event (kgroup.sim.compare.recovery_column)
_RECOVERY_PREFIX = "recovery_ms_"


def metric_label(column: str, events: Sequence[Any] = ()) -> str:
    """The header a report shows for a comparison column (the column name when it has none); a
    recovery column names its scenario event from ``events`` (the scenario's)."""
    if column.startswith(_RECOVERY_PREFIX):
        k = int(column[len(_RECOVERY_PREFIX) :]) - 1
        what = f"event {k + 1}"
        if k < len(events):
            event = events[k]
            kind = "crash" if event.kind == "restart" and not event.graceful else event.kind.replace("_", " ")
            what = f"{kind} at {_duration(event.at_ms)}"
        return f"recovery after {what} (s)"
    return METRIC_LABELS.get(column, (column.replace("_", " "), 1.0))[0]


def metric_value(column: str, value: Any) -> Any:
    """A comparison cell in the unit :func:`metric_label` names (``max_time_to_stable_ms`` or a
    recovery of -1: no run settled, shown as "never")."""
    recovery = column.startswith(_RECOVERY_PREFIX)
    if (recovery or column == "max_time_to_stable_ms") and isinstance(value, (int, float)) and value < 0:
        return "never"
    if recovery and isinstance(value, (int, float)):
        return round(value / 1000, 1)
    if column in _SHARE_ONLY and isinstance(value, (int, float)) and value < 0:
        return "—"  # measured on share groups only
    divisor = METRIC_LABELS.get(column, ("", 1.0))[1]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and divisor != 1.0:
        return round(value / divisor, 1)
    return value


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


def _unowned(result: SimResult, scale: float, duration: float) -> dict[int, list[tuple[float, float]]]:
    """Per partition row, the (start, width) spans no owner interval covers, in chart units."""
    owned: dict[int, list[tuple[int, int]]] = {}
    for p, _owner, start, end in result.intervals:
        owned.setdefault(p, []).append((start, end))
    gaps: dict[int, list[tuple[float, float]]] = {}
    end_ms = result.scenario.duration_ms
    for p in range(len(result.partitions)):
        at = 0
        spans: list[tuple[float, float]] = []
        for start, end in sorted(owned.get(p, [])):
            if start > at:
                spans.append((at / scale, (start - at) / scale))
            at = max(at, end)
        if at < end_ms:
            spans.append((at / scale, min(duration, (end_ms - at) / scale)))
        if spans:
            gaps[p] = spans
    return gaps


def timeline_image(result: SimResult, element_id: str = "sim-timeline") -> Image:
    """Each partition's owner over time, gaps and rebalances visible."""
    from matplotlib.patches import Patch

    from kgroup.report.interactive import member_colours

    n = max(1, len(result.partitions))
    scale, unit = _time_unit(result.scenario.duration_ms)
    fig = _figure(12, min(18.0, max(3.2, 0.28 * n + 1.8)))
    ax = fig.add_subplot()
    duration = result.scenario.duration_ms / scale
    ax.set_facecolor(_GAP_FACE)
    # distinct for any number of consumers (tab20 without its greys up to 18, then generated)
    colours = dict(zip(result.consumers, member_colours(len(result.consumers)), strict=True))
    spans: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p, owner, start, end in result.intervals:
        spans.setdefault((owner, p), []).append((start / scale, (end - start) / scale))
    for (owner, p), bars in spans.items():
        ax.broken_barh(bars, (p - 0.45, 0.9), facecolors=colours.get(owner, "#888888"), linewidth=0)
    # where nobody owns a partition: hatched, unlike any consumer's colour
    for p, gaps in _unowned(result, scale, duration).items():
        ax.broken_barh(
            gaps,
            (p - 0.45, 0.9),
            facecolors=_GAP_FACE,
            edgecolors=_GAP_HATCH_COLOUR,
            hatch="///",
            linewidth=0,
        )
    statuses = _handover(ax, result, scale)
    _markers(ax, result, scale)
    ax.set_xlim(0, duration)
    ax.set_ylim(n - 0.5, -0.5)
    if n <= 60:
        ax.set_yticks(range(n))
        ax.set_yticklabels(result.partitions, fontsize=_TICK_SIZE if n <= 30 else _TICK_SIZE - 1)
    else:
        ax.set_ylabel(f"{n} partitions", fontsize=_LABEL_SIZE)
    ax.set_xlabel(unit, fontsize=_LABEL_SIZE)
    ax.tick_params(axis="x", labelsize=_TICK_SIZE)
    owners = {owner for owner, _ in spans}
    shown = [c for c in result.consumers if c in owners]
    handles = [Patch(facecolor=colours[c], label=c) for c in shown[:30]]
    if len(shown) > 30:  # the interactive timeline (timeline.html) names every one on hover
        handles.append(Patch(facecolor="none", edgecolor="none", label=f"… {len(shown) - 30} more"))
    handles.append(Patch(facecolor=_GAP_FACE, edgecolor=_GAP_HATCH_COLOUR, hatch="///", label="no owner"))
    if "revoking" in statuses:
        handles.append(
            Patch(facecolor="none", edgecolor=_REVOKING_COLOUR, hatch=_REVOKING_HATCH, label="revoking")
        )
    if "unreleased" in statuses:
        handles.append(
            Patch(facecolor="none", edgecolor=_UNRELEASED_COLOUR, hatch=_UNRELEASED_HATCH, label="unreleased")
        )
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=_LABEL_SIZE,
        frameon=False,
        title="owner",
        title_fontsize=_LABEL_SIZE,
    )
    return figure_to_image(
        fig,
        alt="partition owners over time",
        caption=_timeline_caption(result),
        element_id=element_id,
        fmt="png",
    )


def _handover(ax: Any, result: SimResult, scale: float) -> set[str]:
    """Consumer protocol: overlay the revoking and unreleased spans; returns the statuses drawn."""
    spans: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p, status, start, end in result.handover_intervals:
        spans.setdefault((status, p), []).append((start / scale, (end - start) / scale))
    for (status, p), bars in spans.items():
        revoking = status == "revoking"
        ax.broken_barh(
            bars,
            (p - 0.45, 0.9),
            facecolors="none",
            edgecolors=_REVOKING_COLOUR if revoking else _UNRELEASED_COLOUR,
            hatch=_REVOKING_HATCH if revoking else _UNRELEASED_HATCH,
            linewidth=0,
        )
    return {status for status, _ in spans}


def _timeline_caption(result: SimResult) -> str:
    if not result.scenario.group.consumer_protocol:
        return (
            "Coloured: the consumer of the current generation owning the partition; white, hatched: "
            "nobody (stop-the-world). Dashed red: a rebalance starts; dotted green: the group is Stable."
        )
    return (
        "Consumer protocol (KIP-848). Coloured: the consumer the coordinator counts in the group owning "
        "the partition; white, grey-hatched: nobody. Black cross-hatch: revoking (pending revocation at "
        "its owner, which still holds it); orange hatch: unreleased (the target assignment gives it to a "
        "member that does not hold it yet: its previous owner has not released it, or the new owner "
        "has not heartbeated since). Dashed red: the group epoch is bumped; dotted green: every member "
        "is reconciled (Stable)."
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
    ax.set_xlabel(unit, fontsize=_LABEL_SIZE)
    ax.set_ylabel("records", fontsize=_LABEL_SIZE)
    ax.tick_params(labelsize=_TICK_SIZE)
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    ax.legend(loc="upper left", fontsize=_LABEL_SIZE)
    return figure_to_image(
        fig,
        alt="consumer lag over time",
        caption="Total lag of the subscribed partitions, sampled; rebalance markers as above.",
        element_id="sim-lag",
        fmt="png",
    )


def comparison_image(summary: Sequence[dict[str, Any]], metrics: Sequence[str]) -> Image:
    """Horizontal bars per variant, one panel per metric."""
    from matplotlib.ticker import FuncFormatter

    labels = [str(r["variant"]) for r in summary]
    fig = _figure(12, 0.42 * len(labels) + 1.6)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for k, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        values = [metric_value(metric, r[metric]) for r in summary]
        ax.barh(
            range(len(labels)), [v if isinstance(v, (int, float)) else 0 for v in values], color="#4c78a8"
        )
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels if k == 0 else [], fontsize=_TICK_SIZE)
        ax.invert_yaxis()
        ax.set_title(metric_label(metric), fontsize=_LABEL_SIZE, wrap=True)
        ax.tick_params(axis="x", labelsize=_TICK_SIZE - 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    return figure_to_image(fig, alt="strategies compared", element_id="sim-compare", fmt="png")


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (int, float, str)):
        return value
    return json.dumps(value)


def _duration(ms: int) -> str:
    if ms == 0:
        return "0 s"
    if ms % 3_600_000 == 0:
        return f"{ms // 3_600_000} h"
    if ms % 60_000 == 0:
        return f"{ms // 60_000} min"
    return f"{ms / 1000:g} s"


def _event_text(event: Any) -> str:
    kind = event.kind
    who = event.consumer or (", ".join(event.consumers) if event.consumers else "all consumers")
    if kind == "scale":
        return f"scale {event.count:+d} consumers"
    if kind == "add_partitions":
        return f"add {event.count} partitions to {event.topic}"
    if kind == "rolling_restart":
        gap, down = _duration(event.gap_ms), _duration(event.downtime_ms)
        return f"rolling restart of {who}, {gap} apart, {down} down each"
    if kind == "restart":
        return f"restart {who}, {_duration(event.downtime_ms)} down" + ("" if event.graceful else " (crash)")
    if kind in ("slow_poll", "network_partition"):
        return f"{kind.replace('_', ' ')} of {who} for {_duration(event.duration_ms)}"
    if kind == "subscribe":
        return f"{who} subscribes to {', '.join(event.topics or ())}"
    return f"{kind} {who}"


def scenario_section(scenario: Any, seeds: Sequence[int], how: str = "") -> Section:
    """What was simulated: the group, its consumers, its settings and its events in time order."""
    g = scenario.group
    statics = sum(1 for c in scenario.consumers if c.static)
    facts = Facts(
        (
            ("scenario", scenario.name),
            ("virtual time", _duration(scenario.duration_ms)),
            ("topics", ", ".join(f"{t} ({n} partitions)" for t, n in scenario.topics)),
            (
                "consumers",
                f"{len(scenario.consumers)} ({statics} static)" if statics else len(scenario.consumers),
            ),
            ("seeds", ", ".join(str(s) for s in seeds)),
            ("session.timeout.ms", g.session_timeout_ms),
            ("heartbeat.interval.ms", g.heartbeat_interval_ms),
            ("max.poll.interval.ms", g.max_poll_interval_ms),
            ("group.initial.rebalance.delay.ms", g.initial_rebalance_delay_ms),
            (
                "network latency",
                f"{scenario.network.latency_ms} ms (jitter {scenario.network.jitter_ms} ms, "
                f"loss {scenario.network.loss:.1%})",
            ),
            (
                "workload",
                f"{scenario.workload.produce_per_partition_per_s:,} records/s per partition produced, "
                f"{scenario.workload.consume_per_consumer_per_s:,} records/s per consumer consumed",
            ),
        )
    )
    blocks: list[Any] = []
    if how:
        blocks.append(Paragraph(how))
    blocks.append(facts)
    if scenario.events:
        blocks.append(
            Table(
                ("at", "event"),
                tuple((_duration(e.at_ms), _event_text(e)) for e in scenario.events),
                caption="the scenario's events, in time order",
            )
        )
    return Section("Scenario", tuple(blocks), anchor="sim-scenario")


#: the demo report's interactive timelines (kgroup.report.interactive), beside its index.html
TIMELINES_FILE = "timelines.html"
#: the paragraph that links a report's interactive timeline (kgroup.report.interactive)
EXPLORE = (
    "Explore this timeline: timeline.html, beside this page — zoom, hover a bar for its member, "
    "generation and why it began and ended, highlight one member's row and bars (it opens without a network)."
)


def simulation_sections(result: SimResult, *, interactive: bool = False) -> list[Section]:
    """The report sections of one simulation run (``interactive``: say where its timeline.html is)."""
    sc = result.scenario
    g = sc.group
    m = result.metrics
    settings: tuple[tuple[str, Any], ...]
    if g.consumer_protocol:
        settings = (
            ("group.protocol", "consumer (KIP-848)"),
            ("group.remote.assignor", g.server_assignor or "uniform (the coordinator's default)"),
            ("group.consumer.session.timeout.ms", g.consumer_session_timeout_ms),
            ("group.consumer.heartbeat.interval.ms", g.consumer_heartbeat_interval_ms),
        )
    else:
        settings = (
            ("assignors", ", ".join(g.assignors)),
            ("session.timeout.ms", g.session_timeout_ms),
            ("heartbeat.interval.ms", g.heartbeat_interval_ms),
        )
    facts = Facts(
        (
            ("scenario", sc.name),
            ("seed", sc.seed),
            ("virtual time (ms)", sc.duration_ms),
            *settings,
            ("max.poll.interval.ms", g.max_poll_interval_ms),
        )
    )
    # known metrics read as in the comparison (names with units); the others by their JSON name
    scalar = tuple(
        (metric_label(k), _cell(metric_value(k, v))) if k in METRIC_LABELS else (k, _cell(v))
        for k, v in m.items()
        if not isinstance(v, (list, dict))
    )
    times = ", ".join("never" if t is None else f"{t} ms" for t in m["time_to_stable_ms"]) or "(no events)"
    violations = m["invariant_violations"]
    checks: list[Paragraph] = (
        [Paragraph("All invariants held after every step.")]
        if not violations
        else [Paragraph(v) for v in violations]
    )
    return [
        Section("Simulation", (facts,), anchor="sim-run"),
        Section(
            "Partition owners over time",
            (*((Paragraph(EXPLORE),) if interactive else ()), timeline_image(result)),
            anchor="sim-owners",
        ),
        Section("Lag over time", (lag_image(result),), anchor="sim-lag-over-time"),
        Section(
            "Metrics",
            (
                Table(("metric", "value"), scalar, caption="partition-s: partition-seconds"),
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
    events: Sequence[Any] = (),
) -> list[Section]:
    """The report sections of a comparison (a summary table, bar charts, what Kafka cannot run);
    ``events`` (the scenario's) name the recovery columns."""
    charts = [c for c in ("unowned_partition_ms", "rebalances", "records_reprocessed") if c in columns]
    recovery = (
        "; recovery after an event: from its last action (a rolling restart's last restart) to the "
        "group being stable again, mean over the seeds in which it settled"
        if any(c.startswith(_RECOVERY_PREFIX) for c in columns)
        else ""
    )
    blocks: list[Any] = [
        Table(
            tuple(metric_label(c, events) for c in columns),
            tuple(tuple(metric_value(c, r.get(c)) for c in columns) for r in summary),
            caption="means over the seeds; partition-s: partition-seconds (one partition for one second)"
            + recovery,
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
    from kgroup.report.interactive import TIMELINE_FILE, timeline_page

    report.extend(simulation_sections(result, interactive=True))
    report.attach("result.json", result.to_json())
    report.attach(TIMELINE_FILE, timeline_page(result, f"kgroup simulation: {result.scenario.name}"))
    return report.write(out_dir)


def write_comparison_report(
    title: str,
    summary: Sequence[dict[str, Any]],
    columns: Sequence[str],
    skipped: Sequence[tuple[str, str]],
    out_dir: str | Path,
    rows: Sequence[dict[str, Any]] = (),
    scenario: Any = None,
    seeds: Sequence[int] = (),
    how: str = "",
) -> Path:
    """A report folder for a comparison (``index.html`` + ``runs.json``); returns the page's path.
    With ``scenario`` (and the ``seeds`` run) the page opens with what was simulated."""
    report = Report(title=title, subtitle="kgroup simulate --compare")
    if scenario is not None:
        report.add(scenario_section(scenario, seeds, how))
    events = scenario.events if scenario is not None else ()
    report.extend(comparison_sections("Strategies compared", summary, columns, skipped, events))
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
                f"({best['unowned_partition_ms'] / 1000:,.0f} partition-s); "
                f"most: {worst['variant']} ({worst['unowned_partition_ms'] / 1000:,.0f} partition-s)"
            )
        return lines

    def report_sections(self) -> list[Section]:
        data = self.data
        sc = data.scenario
        intro = Paragraph(
            f"{len(sc.consumers)} consumers of {', '.join(f'{t} ({n} partitions)' for t, n in sc.topics)} "
            "go through a rolling restart, a crash and a scale-out, simulated with kgroup's coordinator and "
            f"members under every strategy and protocol Kafka can run, {len(data.seeds)} seed(s) each "
            "(one Spark task per simulation). Stop-the-world is the cost of a rebalance: partition-seconds "
            "(one partition for one second) with no owner in the current generation."
        )
        sections = comparison_sections(
            "Rebalances compared", data.summary, table_columns(len(sc.events)), data.skipped, sc.events
        )
        sections[0] = Section(sections[0].title, (intro, *sections[0].blocks), anchor="sim-rebalances")
        sections.insert(1, scenario_section(sc, data.seeds))
        for label, result in data.highlights:
            slug = label.replace("/", "-")
            sections.append(
                Section(
                    f"Timeline: {label}",
                    (
                        Paragraph(
                            f"Explore it: {TIMELINES_FILE}, beside this page (zoom, hover, highlight)."
                        ),
                        timeline_image(result, element_id=f"sim-timeline-{slug}"),
                    ),
                    anchor=f"sim-timeline-{slug}",
                )
            )
        return sections

    def report_attachments(self) -> dict[str, str]:
        """The files beside the report: the highlighted timelines, interactive, on one page."""
        if not self.data.highlights:
            return {}
        from kgroup.report.interactive import timelines_page

        title = f"kgroup demo: {self.data.scenario.name}, timelines"
        return {
            TIMELINES_FILE: timelines_page(
                title, [(f"Timeline: {label}", r) for label, r in self.data.highlights]
            )
        }
