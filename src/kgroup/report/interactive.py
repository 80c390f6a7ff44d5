"""The interactive partition-owner timeline: one self-contained HTML page to explore a group's
rebalances — zoom, hover a bar for its member, generation and why it began and ended, pick a member to
highlight its own row and bars — drawn with Plotly, whose JavaScript is inlined (the page needs no
network to open).

The figure is plain data (:func:`timeline_figure`: Plotly's figure dictionary, traces and layout), so
what it shows is tested without a browser; :func:`timeline_page` wraps it in a page and
``tests/report/test_interactive_timeline.py`` opens that page in a real headless Chromium. Used by
``kgroup simulate --report`` and ``kgroup report`` (``timeline.html`` beside ``index.html``).

Layout: the top panel has one row per partition, a bar per owner interval coloured by its member, the
hatched grey "no owner" spans between them (while the group has members), KIP-848's "revoking" spans
over their owner, and the rebalance starts (dashed red) and Stable points (dotted green); the panel
below has **one row per member**: when it owned partitions and how many. Every member is one legend
entry for both panels (click: hide it; double-click: only it) and one entry of the "highlight member"
menu, which dims every other member's bars. Colours: :func:`member_colours` (distinct for any number of
members, neighbours far apart in hue and lightness).
"""

from __future__ import annotations

import bisect
import colorsys
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgroup.kafka_release import exact_to
from kgroup.sim.result import SimResult

__all__ = [
    "MAX_BARS",
    "TIMELINE_FILE",
    "member_colours",
    "timeline_figure",
    "timeline_page",
    "write_timeline",
]

#: the page's file name beside a report's ``index.html``
TIMELINE_FILE = "timeline.html"
#: owner intervals drawn at most (a browser stays responsive); the page says when it left some out
MAX_BARS = 40_000
#: tab20 without its greys: the first members' colours (as the static chart's)
_TAB18 = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd",
    "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)  # fmt: skip
_GOLDEN = 0.6180339887498949
_DIMMED = 0.12
#: the events that start a rebalance, as the hover names the last one before a bar began
_TRIGGERS = frozenset(
    {
        "left_group",
        "crash",
        "restart",
        "rejoin_requested",
        "scale",
        "add_partitions",
        "subscribe",
        "slow_poll",
        "network_partition",
        "group_epoch",
        "joined_group",
    }
)


def member_colours(count: int) -> list[str]:
    """``count`` distinct colours: up to 18 the static chart's tab20 ones; beyond, hues a golden angle
    apart in three lightness and two saturation steps (neighbouring members never look alike, and none
    is grey or near white, which mean "no owner")."""
    if count <= len(_TAB18):
        return list(_TAB18[:count])
    out: list[str] = []
    for i in range(count):
        hue = (i * _GOLDEN) % 1.0
        lightness = (0.42, 0.62, 0.30)[i % 3]
        saturation = (0.80, 0.55)[(i // 3) % 2]
        r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


def _seconds(ms: int) -> float:
    return round(ms / 1000, 3)


def _partition_bars(
    name: str,
    spans: list[tuple[int, int, int]],
    partitions: list[str],
    marker: dict[str, Any],
    hovertemplate: str,
    **more: Any,
) -> dict[str, Any]:
    """A bar trace on the partitions' chart: one bar per (partition index, start ms, end ms) span
    (``more``: further fields, e.g. ``customdata``)."""
    return {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "legendgroup": name,
        "y": [partitions[p] for p, _, _ in spans],
        "base": [_seconds(start) for _, start, _ in spans],
        "x": [_seconds(end - start) for _, start, end in spans],
        **more,
        "marker": marker,
        "hovertemplate": hovertemplate,
        "xaxis": "x",
        "yaxis": "y",
    }


def _event_text(event: dict[str, Any]) -> str:
    who = event.get("consumer") or event.get("member_id") or ""
    reason = event.get("reason")
    text = f"{event['kind'].replace('_', ' ')} {who}".strip()
    if event["kind"] == "group_epoch":
        text = f"group epoch {event.get('generation')}"
    if reason:
        text += f" ({reason})"
    return f"{text} at {_seconds(int(event['t_ms']))} s"


class _Why:
    """What the ownership log and the events say about one owner interval."""

    def __init__(self, result: SimResult) -> None:
        # per member, its generation from each ownership entry on (the simulator also splits an
        # owner's interval at a rebalance it keeps the partition through: no entry at that start)
        self.generations: dict[str, tuple[list[int], list[Any]]] = {}
        self.ended: dict[tuple[str, int, str], str] = {}
        for entry in result.ownership:
            member, t = entry["member"], int(entry["t_ms"])
            times, values = self.generations.setdefault(member, ([], []))
            times.append(t)
            values.append(entry["generation"])
            for p in entry["revoked"]:
                self.ended[(member, t, p)] = "revoked"
            for p in entry["lost"]:
                self.ended[(member, t, p)] = "lost (the coordinator removed its member)"
        # a simulated member's joined_group names its generation: an answer, not a cause
        triggers = [
            e
            for e in result.events
            if e["kind"] in _TRIGGERS and not (e["kind"] == "joined_group" and "generation" in e)
        ]
        triggers.sort(key=lambda e: int(e["t_ms"]))
        self.trigger_times = [int(e["t_ms"]) for e in triggers]
        self.triggers = triggers
        self.stables = sorted(result.stable_marks)
        self.rebalance_starts = sorted(result.rebalance_starts)
        self.next_owner: dict[tuple[int, str, int], tuple[str, int] | None] = {}
        by_partition: dict[int, list[tuple[int, int, str]]] = {}
        for p, member, start, end in result.intervals:
            by_partition.setdefault(p, []).append((start, end, member))
        for p, spans in by_partition.items():
            spans.sort()
            for k, (start, _end, member) in enumerate(spans):
                following = spans[k + 1] if k + 1 < len(spans) else None
                self.next_owner[(p, member, start)] = (
                    None if following is None else (following[2], following[0])
                )

    def generation(self, member: str, start: int) -> Any:
        times, values = self.generations.get(member, ([], []))
        k = bisect.bisect_right(times, start) - 1
        return values[k] if k >= 0 else "?"

    def began(self, start: int) -> str:
        """Why the rebalance that handed a bar out at ``start`` happened: the last trigger before
        that rebalance began (or before ``start`` where the recording has no rebalance starts)."""
        r = bisect.bisect_right(self.rebalance_starts, start) - 1
        anchor = self.rebalance_starts[r] if r >= 0 else start
        s = bisect.bisect_left(self.stables, anchor) - 1
        floor = self.stables[s] if s >= 0 else -1
        k = bisect.bisect_right(self.trigger_times, anchor) - 1
        if k >= 0 and self.trigger_times[k] >= floor:
            return _event_text(self.triggers[k])
        if floor < 0:
            return "the group formed"
        return f"a rebalance at {_seconds(anchor)} s" if r >= 0 else "a new generation"

    def end(self, p: int, partition: str, member: str, start: int, end: int, duration_ms: int) -> str:
        if end >= duration_ms:
            return "still owned at the end"
        said = self.ended.get((member, end, partition))
        following = self.next_owner.get((p, member, start))
        if following is None:
            return said or "nobody owned it after"
        owner, at = following
        if owner == member:
            return f"{said or 'its generation ended'}; {member} held it again from {_seconds(at)} s"
        return f"{said or 'handed over'}; {owner} owned it from {_seconds(at)} s"


def _gaps(result: SimResult, duration_ms: int) -> list[tuple[int, int, int]]:
    """(partition, start, end) spans with no owner, from each partition's first owner on."""
    owned: dict[int, list[tuple[int, int]]] = {}
    for p, _member, start, end in result.intervals:
        owned.setdefault(p, []).append((start, end))
    out: list[tuple[int, int, int]] = []
    for p, spans in owned.items():
        spans.sort()
        at = spans[0][0]
        for start, end in spans:
            if start > at:
                out.append((p, at, start))
            at = max(at, end)
        if at < duration_ms:
            out.append((p, at, duration_ms))
    return out


def _member_rows(
    result: SimResult, intervals: Sequence[tuple[int, str, int, int]]
) -> dict[str, list[tuple[int, int, int]]]:
    """Per member, the spans in which it owned partitions and how many (a step per change)."""
    changes: dict[str, dict[int, int]] = {}
    for _p, member, start, end in intervals:
        steps = changes.setdefault(member, {})
        steps[start] = steps.get(start, 0) + 1
        steps[end] = steps.get(end, 0) - 1
    rows: dict[str, list[tuple[int, int, int]]] = {}
    for member, steps in changes.items():
        count, since, spans = 0, 0, []
        for t in sorted(steps):
            if count > 0 and t > since:
                spans.append((since, t, count))
            count += steps[t]
            since = t
        rows[member] = spans
    return rows


def timeline_figure(result: SimResult, title: str = "") -> dict[str, Any]:
    """The timeline as Plotly's figure dictionary (``data``, ``layout``)."""
    duration = max(1, result.scenario.duration_ms)
    partitions = list(result.partitions)
    drawn = sorted(result.intervals, key=lambda i: (i[2], i[0]))[:MAX_BARS]
    owners = {m for _, m, _, _ in drawn}
    # the consumers in their own order (the static chart's), then anyone else who owned something
    members = [m for m in dict.fromkeys([*result.consumers, *sorted(owners)]) if m in owners]
    colours = dict(zip(members, member_colours(len(members)), strict=True))
    why = _Why(result)
    traces: list[dict[str, Any]] = []
    gaps = [g for g in _gaps(result, duration) if g[2] > g[1]]
    if gaps:
        traces.append(
            _partition_bars(
                "no owner",
                gaps,
                partitions,
                {
                    "color": "#ffffff",
                    "line": {"color": "#9a9a9a", "width": 0.5},
                    "pattern": {"shape": "/", "fgcolor": "#9a9a9a", "size": 6},
                },
                "partition %{y}<br>no owner from %{base} s for %{x} s<extra></extra>",
            )
        )
    by_member: dict[str, list[tuple[int, int, int]]] = {}
    for p, member, start, end in drawn:
        by_member.setdefault(member, []).append((p, start, end))
    for member in members:
        bars = by_member.get(member, [])
        custom = [
            [
                member,
                why.generation(member, start),
                why.began(start),
                why.end(p, partitions[p], member, start, end, duration),
                _seconds(start),
                _seconds(end),
            ]
            for p, start, end in bars
        ]
        traces.append(
            _partition_bars(
                member,
                bars,
                partitions,
                {"color": colours[member], "line": {"width": 0}},
                "<b>%{customdata[0]}</b> owns %{y}<br>%{customdata[4]} s – %{customdata[5]} s"
                "<br>generation %{customdata[1]}<br>began after: %{customdata[2]}"
                "<br>ended: %{customdata[3]}<extra></extra>",
                customdata=custom,
            )
        )
    revoking = [(p, s, e) for p, status, s, e in result.handover_intervals if status == "revoking" and e > s]
    if revoking:
        traces.append(
            _partition_bars(
                "revoking",
                revoking,
                partitions,
                {
                    "color": "rgba(0,0,0,0)",
                    "pattern": {"shape": "x", "fgcolor": "#1a1a1a", "size": 5},
                },
                "%{y} pending revocation at its owner<br>from %{base} s for %{x} s<extra></extra>",
            )
        )
    rows = _member_rows(result, drawn)
    for member in members:
        spans = rows.get(member, [])
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": member,
                "legendgroup": member,
                "showlegend": False,
                "y": [member] * len(spans),
                "base": [_seconds(a) for a, _, _ in spans],
                "x": [_seconds(b - a) for a, b, _ in spans],
                "customdata": [[member, n, _seconds(a), _seconds(b)] for a, b, n in spans],
                "marker": {"color": colours[member], "line": {"width": 0}},
                "hovertemplate": (
                    "<b>%{customdata[0]}</b><br>owns %{customdata[1]} partition(s)"
                    "<br>%{customdata[2]} s – %{customdata[3]} s<extra></extra>"
                ),
                "xaxis": "x",
                "yaxis": "y2",
            }
        )
    member_traces = {m: [k for k, t in enumerate(traces) if t["name"] == m] for m in members}
    buttons = [
        {"label": "every member", "method": "restyle", "args": [{"opacity": [1.0] * len(traces)}]},
        *(
            {
                "label": member,
                "method": "restyle",
                "args": [
                    {
                        "opacity": [
                            1.0
                            if k in member_traces[member] or t["name"] in ("no owner", "revoking")
                            else _DIMMED
                            for k, t in enumerate(traces)
                        ]
                    }
                ],
            }
            for member in members
        ),
    ]
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": _seconds(t),
            "x1": _seconds(t),
            "y0": 0,
            "y1": 1,
            "line": {"color": colour, "width": 1, "dash": dash},
        }
        for times, colour, dash in (
            (result.rebalance_starts, "#c0392b", "dash"),
            (result.stable_marks, "#27ae60", "dot"),
        )
        for t in times[:400]
    ]
    part_rows, member_count = max(1, len(partitions)), max(1, len(members))
    height = min(2400, 160 + 14 * part_rows + 14 * member_count)
    share = part_rows / (part_rows + member_count)
    layout: dict[str, Any] = {
        "title": {"text": html.escape(title)} if title else None,
        "barmode": "overlay",
        "bargap": 0.1,
        "height": height,
        "hovermode": "closest",
        "dragmode": "zoom",
        "legend": {"title": {"text": "member"}, "groupclick": "togglegroup", "itemsizing": "constant"},
        "xaxis": {"title": {"text": "time (s)"}, "range": [0, _seconds(duration)], "anchor": "y2"},
        "yaxis": {
            "title": {"text": f"{len(partitions)} partitions"},
            "categoryorder": "array",
            "categoryarray": partitions,
            "autorange": "reversed",
            "domain": [1 - share + 0.04, 1.0],
            "automargin": True,
        },
        "yaxis2": {
            "title": {"text": f"{len(members)} members"},
            "categoryorder": "array",
            "categoryarray": members,
            "autorange": "reversed",
            "domain": [0.0, 1 - share - 0.02],
            "automargin": True,
        },
        "shapes": shapes,
        "updatemenus": [
            {
                "type": "dropdown",
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.0,
                "yanchor": "bottom",
                "showactive": True,
                "buttons": buttons,
                "pad": {"t": 4},
            }
        ],
        "annotations": [
            {
                "text": "highlight member:",
                "x": 0.0,
                "xref": "paper",
                "xanchor": "right",
                "y": 1.0,
                "yref": "paper",
                "yanchor": "bottom",
                "showarrow": False,
            }
        ],
        "margin": {"l": 90, "r": 20, "t": 90, "b": 50},
        "plot_bgcolor": "#ffffff",
    }
    return {"data": traces, "layout": layout}


_HELP = (
    "Drag to zoom (double-click: back), scroll to zoom in time, hover a bar for its member, "
    "generation and why it began and ended. Pick a member in “highlight member” to dim everybody "
    "else; click a member in the legend to hide it, double-click to show only it. Top: one row per "
    "partition, coloured by its owner, hatched grey where nobody owned it; bottom: one row per "
    "member, with how many partitions it owned. Dashed red: a rebalance starts; dotted green: the "
    "group is Stable."
)


def timeline_page(result: SimResult, title: str, note: str = "") -> str:
    """A self-contained HTML page (Plotly's JavaScript inlined) with the interactive timeline."""
    return timelines_page(title, [("", result)], note)


def timelines_page(title: str, timelines: Sequence[tuple[str, SimResult]], note: str = "") -> str:
    """One self-contained page with several interactive timelines, each under its heading (Plotly's
    JavaScript inlined once); the first one's element id is ``kgroup-timeline``, the next ones'
    ``kgroup-timeline-2``, …"""
    import plotly.io

    config = {"scrollZoom": True, "displaylogo": False, "responsive": True}
    parts: list[str] = []
    for k, (heading, result) in enumerate(timelines):
        left_out = len(result.intervals) - MAX_BARS
        if heading:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        if left_out > 0:
            shown = f"Only the first {MAX_BARS:,} owner intervals are drawn ({left_out:,} left out)."
            parts.append(f"<p><b>{shown}</b></p>")
        parts.append(
            plotly.io.to_html(
                timeline_figure(result),
                config=config,
                include_plotlyjs=k == 0,
                include_mathjax=False,
                full_html=False,
                div_id="kgroup-timeline" if k == 0 else f"kgroup-timeline-{k + 1}",
                validate=False,  # checked against Plotly's schema in the tests (1 s for 100 members here)
            )
        )
    names = ", ".join(json.dumps(result.scenario.name) for _, result in timelines)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1rem 2rem;"
        "color:#1d2430}p{max-width:76rem;color:#3b4556}footer{color:#8a93a3;font-size:.85rem}</style>"
        "</head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(_HELP)}</p>"
        + (f"<p>{html.escape(note)}</p>" if note else "")
        + "".join(parts)
        + f"<footer><p>Generated by kgroup, exact to {html.escape(exact_to())}. "
        f"Data: {html.escape(names)}.</p></footer></body></html>\n"
    )


def write_timeline(result: SimResult, folder: str | Path, title: str, note: str = "") -> Path:
    """Write ``folder/timeline.html``; returns its path."""
    path = Path(folder) / TIMELINE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(timeline_page(result, title, note), encoding="utf-8")
    return path
