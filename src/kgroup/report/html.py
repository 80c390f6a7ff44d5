"""A small builder for self-contained HTML reports: a title, then sections of blocks.

A report is one folder: ``index.html`` with every image inlined (SVG markup or a base64 PNG), plus
optional attachments (for example the run's JSON) written beside it and linked from the page. So a
report can be zipped, mailed or served as static files without anything else.

Blocks are frozen values: :class:`Paragraph`, :class:`Facts` (label/value pairs), :class:`Table`
and :class:`Image`. Producers of results (the demo's stages, the simulator) turn their results into
:class:`Section` objects and append them; the builder knows nothing about what they measure.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.kafka_release import exact_to
from kgroup.model import KgroupError

__all__ = [
    "Block",
    "Cell",
    "Facts",
    "Image",
    "Paragraph",
    "Report",
    "Section",
    "Table",
    "format_cell",
    "format_number",
    "table_from_records",
]

#: A table cell or fact value. Numbers render with thousands separators and never in exponent
#: form (``1,513,000``, ``12.5``, ``0.1234``), ``None`` as an empty cell, strings as given (escaped).
Cell = str | int | float | None


def format_cell(value: Cell) -> str:
    """The text a cell shows (before HTML escaping)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return format_number(value)
    return value


def format_number(value: float) -> str:
    """A float for people: whole numbers and anything from 1,000 up without decimals (thousands
    separated), smaller ones with four significant digits; never ``1.513e+06``."""
    if value != value or value in (float("inf"), float("-inf")):  # NaN, infinities
        return str(value)
    size = abs(value)
    if size >= 1000 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.4g}" if size >= 1e-4 else f"{value:.2e}"


@dataclass(frozen=True, slots=True)
class Paragraph:
    """A paragraph of plain text (escaped; no markup)."""

    text: str


@dataclass(frozen=True, slots=True)
class Facts:
    """A short list of label → value pairs, e.g. the run's parameters or headline figures."""

    items: tuple[tuple[str, Cell], ...]


@dataclass(frozen=True, slots=True)
class Table:
    """A table: column headers, rows of cells, an optional caption.

    ``highlight`` holds indices of rows to emphasise (e.g. the hot partitions).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    highlight: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        for index, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise KgroupError(
                    f"table row {index}: {len(row)} cells for {len(self.columns)} columns; "
                    "give one cell per column"
                )


@dataclass(frozen=True, slots=True)
class Image:
    """A chart or picture, inlined into the page: SVG markup or PNG bytes (base64-embedded)."""

    alt: str
    svg: str | None = None
    png: bytes | None = None
    caption: str = ""
    element_id: str = ""

    def __post_init__(self) -> None:
        if (self.svg is None) == (self.png is None):
            raise KgroupError("image: give exactly one of 'svg' or 'png'")


Block = Paragraph | Facts | Table | Image


@dataclass(frozen=True, slots=True)
class Section:
    """A titled part of a report; ``anchor`` (derived from the title if empty) is its HTML id."""

    title: str
    blocks: tuple[Block, ...]
    anchor: str = ""

    def html_id(self) -> str:
        if self.anchor:
            return self.anchor
        slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")
        return slug or "section"


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 76rem;
       padding: 0 1rem; color: #1d2430; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } .subtitle { color: #5b6575; margin-top: 0; }
nav ul { padding-left: 1.2rem; } section { margin-top: 2.2rem; }
h2 { border-bottom: 2px solid #e3e7ee; padding-bottom: 0.3rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d5dae3; padding: 0.25rem 0.6rem; }
th { background: #f3f5f9; text-align: left; vertical-align: bottom; } td.num { text-align: right; }
table.wide { width: 100%; font-size: 0.88rem; } table.wide th { font-size: 0.82rem; }
td.label { white-space: nowrap; }
tr.hot td { background: #fff1e6; font-weight: 600; }
caption { caption-side: top; text-align: left; color: #5b6575; padding-bottom: 0.3rem; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1.2rem; }
dl.facts dt { color: #5b6575; } dl.facts dd { margin: 0; font-weight: 600; }
figure { margin: 1rem 0; } figure svg, figure img { max-width: 100%; height: auto; }
figcaption { color: #5b6575; font-size: 0.92rem; }
footer { margin-top: 3rem; color: #8a93a3; font-size: 0.85rem; }
"""


def _is_number(value: Cell) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _render_block(block: Block) -> str:
    if isinstance(block, Paragraph):
        return f"<p>{html.escape(block.text)}</p>"
    if isinstance(block, Facts):
        items = "".join(
            f"<dt>{html.escape(label)}</dt><dd>{html.escape(format_cell(value))}</dd>"
            for label, value in block.items
        )
        return f'<dl class="facts">{items}</dl>'
    if isinstance(block, Table):
        head = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
        body: list[str] = []
        # in a wide table the first column names the row: kept on one line, never broken at a dash
        first = ' class="label"' if len(block.columns) >= 7 else ""
        for index, row in enumerate(block.rows):
            cells = "".join(
                f'<td class="num">{html.escape(format_cell(v))}</td>'
                if _is_number(v)
                else f"<td{first if k == 0 else ''}>{html.escape(format_cell(v))}</td>"
                for k, v in enumerate(row)
            )
            row_class = ' class="hot"' if index in block.highlight else ""
            body.append(f"<tr{row_class}>{cells}</tr>")
        caption = f"<caption>{html.escape(block.caption)}</caption>" if block.caption else ""
        # a table of many columns takes the page's width and a smaller font instead of overflowing
        wide = ' class="wide"' if len(block.columns) >= 7 else ""
        return f"<table{wide}>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    # Image
    id_attr = f' id="{html.escape(block.element_id)}"' if block.element_id else ""
    if block.svg is not None:
        content = block.svg
    else:
        assert block.png is not None
        encoded = base64.b64encode(block.png).decode("ascii")
        content = f'<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{encoded}">'
    caption = f"<figcaption>{html.escape(block.caption)}</figcaption>" if block.caption else ""
    return f'<figure{id_attr} role="img" aria-label="{html.escape(block.alt)}">{content}{caption}</figure>'


@dataclass
class Report:
    """A report being built: add sections (in reading order) and attachments, then :meth:`write`.

    Mutable on purpose: several producers (the demo's stages, one after another) append to the same
    report.
    """

    title: str
    subtitle: str = ""
    sections: list[Section] = field(default_factory=list)
    attachments: dict[str, bytes] = field(default_factory=dict)
    footer: str = field(
        default_factory=lambda: (
            "Generated by kgroup — Kafka's partitioning and consumer-group rebalancing, "
            f"exact to {exact_to()}."
        )
    )

    def add(self, section: Section) -> None:
        """Append a section; its anchor must be unique within the report."""
        if any(s.html_id() == section.html_id() for s in self.sections):
            raise KgroupError(
                f"report section {section.title!r}: anchor {section.html_id()!r} is used twice; "
                "give the section a distinct title or anchor"
            )
        self.sections.append(section)

    def extend(self, sections: Iterable[Section]) -> None:
        for section in sections:
            self.add(section)

    def attach(self, name: str, content: bytes | str) -> None:
        """Add a file written beside ``index.html`` (a plain file name such as ``summary.json``)."""
        if not name or "/" in name or "\\" in name or name.startswith(".") or name == "index.html":
            raise KgroupError(f"attachment name {name!r}: give a plain file name such as 'summary.json'")
        self.attachments[name] = content.encode("utf-8") if isinstance(content, str) else content

    def to_html(self) -> str:
        toc = ""
        if len(self.sections) > 1:
            links = "".join(
                f'<li><a href="#{html.escape(s.html_id())}">{html.escape(s.title)}</a></li>'
                for s in self.sections
            )
            toc = f"<nav><ul>{links}</ul></nav>"
        parts: list[str] = []
        for s in self.sections:
            blocks = "\n".join(_render_block(b) for b in s.blocks)
            parts.append(
                f'<section id="{html.escape(s.html_id())}">'
                f"<h2>{html.escape(s.title)}</h2>\n{blocks}</section>"
            )
        files = ""
        if self.attachments:
            links = ", ".join(
                f'<a href="{html.escape(n)}">{html.escape(n)}</a>' for n in sorted(self.attachments)
            )
            files = f"<p>Files: {links}</p>"
        subtitle = f'<p class="subtitle">{html.escape(self.subtitle)}</p>' if self.subtitle else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head>\n"
            f"<body><header><h1>{html.escape(self.title)}</h1>{subtitle}</header>\n{toc}\n"
            + "\n".join(parts)
            + f"\n<footer>{files}<p>{html.escape(self.footer)}</p></footer></body></html>\n"
        )

    def write(self, directory: Path | str) -> Path:
        """Write ``index.html`` and the attachments into ``directory`` (created if needed).

        Returns the path of ``index.html``. Files of an earlier report in the same folder are
        overwritten, other files are left alone.
        """
        folder = Path(directory)
        if folder.exists() and not folder.is_dir():
            raise KgroupError(f"report: {folder} exists and is not a directory; choose a directory path")
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in self.attachments.items():
            (folder / name).write_bytes(content)
        index = folder / "index.html"
        index.write_text(self.to_html(), encoding="utf-8")
        return index


def table_from_records(
    columns: Sequence[str],
    records: Iterable[Sequence[Cell]],
    caption: str = "",
    highlight: Iterable[int] = (),
) -> Table:
    """Build a :class:`Table` from any iterable of row sequences."""
    return Table(tuple(columns), tuple(tuple(r) for r in records), caption, frozenset(highlight))
