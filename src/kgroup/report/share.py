"""A recorded share group (KIP-932) as report sections: what its share partitions delivered (the
totals, explained), its members and each partition's sharers over time, and deliveries, redeliveries,
archives and the acknowledgements over time — for the group and per partition.

A share group owns no partition (its members share them), so its report has no partition-owner
timeline; the recording's ``share`` object (:mod:`kgroup.record.share`) is what is drawn.
"""

from __future__ import annotations

from typing import Any

from kgroup.report.html import Image, Paragraph, Section, Table

__all__ = ["is_share_recording", "share_sections"]

#: what each counter is, as the page says it
_COUNTERS = (
    (
        "deliveries",
        "deliveries",
        "records acquired by a member (each delivery, the first and every redelivery)",
    ),
    ("redeliveries", "redeliveries", "of those, records delivered again (delivery count above 1)"),
    ("accepted", "accepted", "acknowledged ACCEPT: processed, done"),
    ("released", "released", "acknowledged RELEASE: given back, to be delivered again"),
    ("rejected", "rejected", "acknowledged REJECT: unprocessable, archived"),
    (
        "lock_timeouts",
        "lock timeouts",
        "acquired records whose acquisition lock expired before an acknowledgement",
    ),
    (
        "released_on_leave",
        "released on leave",
        "acquired records given back when their member's share session closed",
    ),
    (
        "archived",
        "archived at the limit",
        "records archived at the delivery-count limit (released or timed out once too often)",
    ),
)
_COLOURS = {
    "deliveries": "#4c78a8",
    "redeliveries": "#f58518",
    "archived": "#c0392b",
    "accepted": "#54a24b",
    "released": "#b279a2",
    "rejected": "#9d755d",
    "lock_timeouts": "#e45756",
}


def is_share_recording(data: dict[str, Any]) -> bool:
    return isinstance(data.get("share"), dict)


def share_sections(data: dict[str, Any], *, title_prefix: str = "") -> list[Section]:
    """The share group's sections of a recording's page (see the module)."""
    share = data["share"]
    end = max(1, int(data["recording"]["duration_ms"]))
    totals = share["totals"]
    explained = Table(
        ("count", "records", "what it counts"),
        tuple((label, int(totals.get(name, 0)), text) for name, label, text in _COUNTERS),
        caption="What the group's share partitions did, counted per record",
    )
    partitions = share["partitions"]
    per_partition = Table(
        ("partition", "sharers at the end", *(label for _, label, _ in _COUNTERS)),
        tuple(
            (
                p,
                len(info["sharers"][-1][1]) if info["sharers"] else 0,
                *(int(info["series"]["totals"].get(name, 0)) for name, _, _ in _COUNTERS),
            )
            for p, info in partitions.items()
        ),
        caption="Per share partition",
    )
    sections = [
        Section(
            f"{title_prefix}What the share partitions delivered",
            (
                Paragraph(
                    "A share group's members share its partitions: each record is acquired by one member "
                    "under a lock, then acknowledged (accepted, released or rejected). A released record, "
                    "or one whose lock expired, is delivered again; at the delivery-count limit it is "
                    "archived instead. Recorded by kgroup serve --record from its share partitions; "
                    "kgroup record (from __consumer_offsets) has the members and sharers only."
                ),
                explained,
                per_partition,
            ),
            anchor="share-delivered",
        ),
        Section(
            f"{title_prefix}Members and sharers over time",
            (_sharers_image(share, data, end),),
            anchor="share-sharers",
        ),
        Section(
            f"{title_prefix}Deliveries, redeliveries and archives over time",
            (_deliveries_image(share, end),),
            anchor="share-deliveries",
        ),
    ]
    return sections


def _scale(end: int) -> tuple[float, str]:
    return (60_000.0, "time (min)") if end >= 180_000 else (1000.0, "time (s)")


def _steps(points: list[list[Any]], end: int, value: Any) -> tuple[list[float], list[int]]:
    times, values = [0.0], [0]
    for t, v in points:
        times.append(float(t))
        values.append(int(value(v)))
    times.append(float(end))
    values.append(values[-1])
    return times, values


def _sharers_image(share: dict[str, Any], data: dict[str, Any], end: int) -> Image:
    """The group's members over time (top) and each partition's number of sharers (below)."""
    from matplotlib.figure import Figure

    from kgroup.report.charts import figure_to_image

    scale, unit = _scale(end)
    rec = data["recording"]
    figure = Figure(figsize=(12, 4.6), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    times, values = _steps(share["members_over_time"], end, lambda v: v)
    top.step([t / scale for t in times], values, where="post", color="#4c78a8", linewidth=1.6)
    top.set_ylabel("members")
    for t in rec.get("rebalance_starts", [])[:400]:
        top.axvline(t / scale, color="#c0392b", linestyle="--", linewidth=0.7, alpha=0.8)
    for index, (p, info) in enumerate(share["partitions"].items()):
        times, values = _steps(info["sharers"], end, len)
        bottom.step(
            [t / scale for t in times],
            [v + 0.06 * index for v in values],  # drawn apart a little where they are equal
            where="post",
            linewidth=1.3,
            label=p,
        )
    bottom.set_ylabel("sharers per partition")
    bottom.set_xlabel(unit)
    bottom.set_xlim(0, end / scale)
    if share["partitions"]:
        bottom.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    for axes in (top, bottom):
        axes.spines[["top", "right"]].set_visible(False)
    return figure_to_image(
        figure,
        alt="share group members and partition sharers over time",
        caption="Top: the group's members (dashed red: the group epoch is bumped, a new assignment). "
        "Below: how many members each partition is assigned to (its sharers).",
        element_id="share-sharers-chart",
        fmt="png",
    )


def _deliveries_image(share: dict[str, Any], end: int) -> Image:
    """Cumulative over time: deliveries, redeliveries, archives (top) and the acknowledgements and
    lock timeouts (below), from the per-second counts."""
    from matplotlib.figure import Figure

    from kgroup.report.charts import figure_to_image

    scale, unit = _scale(end)
    series = share["series"]
    bucket = int(share.get("bucket_ms", 1000))
    # each second's counts land at its end (at most the recording's end)
    times = [0.0] + [min(end, t + bucket) / scale for t in series["t_ms"]] + [end / scale]
    figure = Figure(figsize=(12, 4.6), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    for axes, names in (
        (top, ("deliveries", "redeliveries", "archived")),
        (bottom, ("accepted", "released", "rejected", "lock_timeouts")),
    ):
        for name in names:
            total, values = 0, [0]
            for n in series[name]:
                total += n
                values.append(total)
            values.append(total)
            axes.step(
                times, values, where="post", linewidth=1.5, color=_COLOURS[name], label=f"{name} ({total:,})"
            )
        axes.set_ylabel("records, cumulative")
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        axes.spines[["top", "right"]].set_visible(False)
    bottom.set_xlabel(unit)
    bottom.set_xlim(0, end / scale)
    return figure_to_image(
        figure,
        alt="share deliveries, redeliveries and archives over time",
        caption=f"Counted per {bucket / 1000:g} s, summed since the recording began. Top: records "
        "delivered, delivered again, archived at the delivery-count limit. Below: the acknowledgements "
        "(accepted, released, rejected) and the acquisition locks that expired.",
        element_id="share-deliveries-chart",
        fmt="png",
    )
