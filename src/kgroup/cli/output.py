"""Output helpers shared by the sub-commands: JSON for machines, tables for people.

Tables stay fast whatever their size: rich lays a table out cell by cell (tens of seconds for
200,000 rows), so a long table is summarised to its first :data:`SUMMARY_ROWS` rows unless the
user asks for ``--full``, and a table of more than :data:`RICH_ROW_LIMIT` rows is printed as plain
aligned text (a second for 200,000 rows).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from kgroup.model import KgroupError, jsonable

__all__ = [
    "RICH_ROW_LIMIT",
    "SUMMARY_ROWS",
    "Column",
    "console",
    "emit_json",
    "err_console",
    "prepare_report_dir",
    "print_table",
    "step_progress",
]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

#: a table longer than this is cut to its first rows unless ``--full`` is given
SUMMARY_ROWS = 50
#: beyond this many rows a table is printed as plain text (rich's layout is too slow)
RICH_ROW_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its header and whether its cells are right-aligned (numbers)."""

    name: str
    right: bool = False


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON (kgroup values converted, keys in insertion order) on stdout."""
    sys.stdout.write(json.dumps(jsonable(data), indent=2, ensure_ascii=False) + "\n")


def print_table(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    full: bool = False,
    what: str = "rows",
    out: Console | None = None,
) -> None:
    """Print ``rows`` under ``title``: every row with ``full``, else the first :data:`SUMMARY_ROWS`
    and a line saying how many more there are and how to see them."""
    out = out or console
    shown = rows if full or len(rows) <= SUMMARY_ROWS else rows[:SUMMARY_ROWS]
    if len(shown) <= RICH_ROW_LIMIT:
        from rich.table import Table

        out.print(f"[bold]{escape(title)}[/bold]", soft_wrap=True)
        table = Table()
        for column in columns:
            table.add_column(column.name, justify="right" if column.right else "left", overflow="fold")
        for row in shown:
            table.add_row(*row)
        out.print(table)
    else:
        out.file.flush()
        write_plain_table(title, columns, shown, sys.stdout)
    hidden = len(rows) - len(shown)
    if hidden:
        out.print(
            f"… {hidden:,} more {what} not shown (of {len(rows):,}): --full prints them all, --json too",
            soft_wrap=True,
        )


def write_plain_table(
    title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], file: TextIO
) -> None:
    """A plain aligned text table: one pass for the widths, one write per block of lines."""
    widths = [len(c.name) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            if len(cell) > widths[i]:
                widths[i] = len(cell)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(w) if column.right else cell.ljust(w)
            for cell, w, column in zip(cells, widths, columns, strict=True)
        ).rstrip()

    file.write(f"{title}\n{line([c.name for c in columns])}\n{line(['-' * w for w in widths])}\n")
    block: list[str] = []
    for row in rows:
        block.append(line(row))
        if len(block) >= 10_000:
            file.write("\n".join(block) + "\n")
            block.clear()
    if block:
        file.write("\n".join(block) + "\n")


def prepare_report_dir(path: Path, option: str = "--report") -> None:
    """Create the report folder now, before any long work, so that an unwritable path fails in
    the first second rather than after the whole run."""
    if path.exists() and not path.is_dir():
        raise KgroupError(f"{option}: {path} exists and is not a folder; choose a folder path")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".kgroup-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise KgroupError(
            f"{option}: cannot write to {path} ({exc.strerror or exc}); choose a writable folder"
        ) from None


@contextmanager
def step_progress(description: str, total: int, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for ``total`` steps, shown only when ``enabled`` (not ``--json``)
    and stderr is a terminal (logs and pipes get nothing). Yields ``done(n)``: ``n`` steps are
    complete; it may be called from another thread (rich's progress is locked)."""
    if not (enabled and err_console.is_terminal):
        yield lambda n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.update(task, completed=n)
