"""Charts for reports, drawn with matplotlib's object API on the Agg/SVG canvases.

No ``pyplot``: nothing global is touched (no backend switch, no figure registry), so charts can be
drawn from any thread or process, including Spark's driver. matplotlib is imported inside the
functions so that importing kgroup stays fast.

SVG output keeps text as text (``svg.fonttype = none``) and is made reproducible (fixed hash salt,
no date), so a chart's labels can be searched in the page and the same data gives the same bytes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from kgroup.report.html import Image

__all__ = ["figure_to_image", "partition_counts_chart"]

# Calm default, orange for what needs attention.
BAR_COLOUR = "#4c78a8"
HOT_COLOUR = "#f58518"
MEAN_COLOUR = "#54a24b"


def figure_to_image(
    figure: Any, alt: str, caption: str = "", element_id: str = "", fmt: str = "svg"
) -> Image:
    """Render a matplotlib ``Figure`` into an :class:`~kgroup.report.html.Image` (``svg`` or ``png``)."""
    import matplotlib

    buffer = io.BytesIO()
    if fmt == "svg":
        from matplotlib.backends.backend_svg import FigureCanvasSVG

        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kgroup"}):
            FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None})
        text = buffer.getvalue().decode("utf-8")
        # Drop the XML prolog and DOCTYPE (the markup is inlined into an HTML page) and the RDF
        # metadata block (matplotlib's name and version: noise in a report).
        svg = re.sub(r"\s*<metadata>.*?</metadata>", "", text[text.find("<svg") :], count=1, flags=re.DOTALL)
        return Image(alt=alt, svg=svg, caption=caption, element_id=element_id)
    if fmt == "png":
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})
        return Image(alt=alt, png=buffer.getvalue(), caption=caption, element_id=element_id)
    raise ValueError(f"fmt must be 'svg' or 'png', not {fmt!r}")


def partition_counts_chart(
    per_partition: Sequence[int],
    hot: Sequence[int] = (),
    title: str = "",
    caption: str = "",
    element_id: str = "",
    fmt: str = "svg",
) -> Image:
    """A bar chart of records per partition: hot partitions highlighted, the mean as a line."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    count = len(per_partition)
    mean = sum(per_partition) / count if count else 0.0
    hot_set = set(hot)
    figure = Figure(figsize=(min(14.0, max(6.0, 0.35 * count + 2.0)), 3.6), dpi=100)
    axes = figure.add_subplot(1, 1, 1)
    colours = [HOT_COLOUR if p in hot_set else BAR_COLOUR for p in range(count)]
    axes.bar(range(count), per_partition, color=colours, width=0.8)
    axes.axhline(mean, color=MEAN_COLOUR, linestyle="--", linewidth=1.4)
    # Legend entries drawn explicitly: one swatch per colour, whatever the bars' order.
    handles: list[Any] = [Patch(color=BAR_COLOUR, label="records")]
    if hot_set:
        handles.append(Patch(color=HOT_COLOUR, label="hottest partitions"))
    handles.append(Line2D([], [], color=MEAN_COLOUR, linestyle="--", label=f"mean {mean:,.0f}"))
    axes.set_xlabel("partition")
    axes.set_ylabel("records")
    if count <= 64:
        axes.set_xticks(range(count))
        axes.tick_params(axis="x", labelsize=8 if count > 24 else 9)
    axes.set_xlim(-0.6, count - 0.4)
    axes.yaxis.set_major_formatter(_thousands_formatter())
    axes.spines[["top", "right"]].set_visible(False)
    if title:
        axes.set_title(title)
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    figure.tight_layout()
    alt = title or f"records per partition over {count} partitions"
    return figure_to_image(figure, alt=alt, caption=caption, element_id=element_id, fmt=fmt)


def _thousands_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _pos: f"{value:,.0f}")
