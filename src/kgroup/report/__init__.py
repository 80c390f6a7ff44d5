"""Self-contained HTML reports (one folder, images inlined) and the charts that go in them.

Used by ``kgroup demo`` (partitioning) and the simulator (timelines). See ``docs/demo.md``.
"""

from kgroup.report.html import (
    Block,
    Cell,
    Facts,
    Image,
    Paragraph,
    Report,
    Section,
    Table,
    format_cell,
    format_number,
    table_from_records,
)

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
