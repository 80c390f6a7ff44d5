"""``kgroup partition --input``: partition a dataset on Spark as a Kafka producer would, and report.

Called by ``kgroup partition`` (``kgroup/cli/partition.py``) when ``--input`` is given. Also holds
the terminal pieces the demo reuses: the per-stage progress display and the summary tables.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kgroup.cli.output import console, emit_json, err_console
from kgroup.model import KgroupError
from kgroup.spark.partitioning.results import CountSummary, PartitionSummary

__all__ = ["StageProgress", "print_partition_summary", "run_input_mode"]

#: Above this many partitions the per-partition table shows only the fullest and emptiest ones.
FULL_TABLE_LIMIT = 64


class StageProgress:
    """A spinner per stage on stderr, then a ``✓ stage (seconds)`` line; silent when ``enabled`` is
    false (``--json``) or stderr is not a terminal (logs and pipes get no spinner noise)."""

    def __init__(self, enabled: bool, stream: Console | None = None) -> None:
        self._console = stream or err_console
        self.enabled = enabled and self._console.is_terminal
        self.timings: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, description: str) -> Iterator[None]:
        started = time.perf_counter()
        if self.enabled:
            with self._console.status(f"{description} …", spinner="dots"):
                yield
        else:
            yield
        elapsed = time.perf_counter() - started
        self.timings.append((description, elapsed))
        if self.enabled:
            self._console.print(f"[green]✓[/green] {description} [dim]({elapsed:.1f} s)[/dim]")


def _per_partition_table(count: CountSummary) -> Table:
    hot = {h.partition for h in count.hottest}
    mean = count.mean
    table = Table(title=f"{count.num_partitions} partitions", title_justify="left")
    table.add_column("partition", justify="right")
    table.add_column("records", justify="right")
    table.add_column("× mean", justify="right")
    rows = list(range(count.num_partitions))
    if count.num_partitions > FULL_TABLE_LIMIT:
        order = sorted(rows, key=lambda p: (-count.per_partition[p], p))
        rows = sorted(order[:10] + order[-5:])
        table.caption = f"the 10 fullest and 5 emptiest of {count.num_partitions} partitions"
    for p in rows:
        records = count.per_partition[p]
        ratio = records / mean if mean else 0.0
        style = "bold yellow" if p in hot else None
        table.add_row(str(p), f"{records:,}", f"{ratio:.2f}", style=style)
    return table


def _hot_table(count: CountSummary) -> Table:
    table = Table(title=f"hottest of {count.num_partitions} partitions", title_justify="left")
    table.add_column("partition", justify="right")
    table.add_column("records", justify="right")
    table.add_column("top keys (records)")
    for h in count.hottest:
        keys = ", ".join(f"{k.key} ({k.records:,})" for k in h.top_keys) or "(keyless records only)"
        table.add_row(str(h.partition), f"{h.records:,}", keys)
    return table


def print_partition_summary(summary: PartitionSummary, out: Console | None = None) -> None:
    """The human form of a partitioning summary: tables per count, skew, movement."""
    out = out or console
    source = f"{summary.input} ({summary.input_format})" if summary.input else "generated events"
    out.print(
        f"[bold]{source}[/bold]: {summary.records:,} records — {summary.keyed_records:,} keyed "
        f"({summary.distinct_keys:,} distinct keys), {summary.keyless_records:,} keyless; "
        f"key column {summary.key_column!r} ({summary.key_type}); null-key strategy "
        f"{summary.null_key_strategy}, seed {summary.seed}"
    )
    for count in summary.counts:
        out.print()
        out.print(_per_partition_table(count))
        out.print(
            f"skew: max/mean [bold]{count.max_over_mean:.2f}[/bold] "
            f"(max {max(count.per_partition):,}, mean {count.mean:,.0f}, min {min(count.per_partition):,})"
        )
        if count.hottest:
            out.print(_hot_table(count))
    if summary.moved:
        out.print()
        table = Table(title="what moves when the partition count changes", title_justify="left")
        table.add_column("from → to")
        table.add_column("keys moved", justify="right")
        table.add_column("records moved", justify="right")
        table.add_column("uniform hash", justify="right")
        for m in summary.moved:
            table.add_row(
                f"{m.from_count} → {m.to_count}",
                f"{m.keys_moved:,} of {m.distinct_keys:,} ({m.keys_moved_share:.1%})",
                f"{m.records_moved:,} of {m.keyed_records:,} ({m.records_moved_share:.1%})",
                f"{m.uniform_keys_moved_share:.1%}",
            )
        out.print(table)
        out.print("[dim]uniform hash: the share of keys expected to move if hashes were uniform[/dim]")
    if summary.output:
        counts = [c.num_partitions for c in summary.counts]
        column = "partition" if len(counts) == 1 else f"partition_{counts[0]}"
        names = ", ".join(f"partition_{n}" for n in counts)
        also = "" if len(counts) == 1 else f"; each record has its {names}"
        out.print(
            f"\nrecords written to [bold]{summary.output}[/bold] (Parquet, one folder per {column} "
            f"value: {column}=0/ … {column}={counts[0] - 1}/{also})"
        )


def run_input_mode(
    input_path: Path,
    key_column: str,
    partition_counts: list[int],
    output_dir: Path | None,
    null_key_strategy: str,
    seed: int,
    master: str,
    input_format: str,
    json_output: bool,
    key_serializer: str | None = None,
) -> int:
    """Run the partitioning job on Spark and print the summary (or JSON); returns the exit code.

    Bad input raises :class:`~kgroup.model.KgroupError` (the CLI prints one line, exit 2).
    """
    from kgroup.spark.partitioning.job import PartitionJob, run_partition_job
    from kgroup.spark.session import spark_session

    if not key_column:
        raise KgroupError("key-column: missing; pass --key-column NAME (the column holding the record keys)")
    path = Path(input_path)
    if not path.exists():
        raise KgroupError(
            f"input: {path} does not exist; give a Parquet, CSV or JSON file or a directory of them"
        )
    if output_dir is not None and Path(output_dir).exists():
        raise KgroupError(f"output: {output_dir} already exists; remove it or choose a new directory")
    job = PartitionJob(
        input_path=path,
        key_column=key_column,
        partition_counts=tuple(partition_counts),
        null_key_strategy=null_key_strategy,
        seed=seed,
        input_format=input_format,
        output_dir=Path(output_dir) if output_dir is not None else None,
        key_serializer=key_serializer,
    )
    from kgroup.spark.partitioning.job import detect_format

    detect_format(path, input_format)  # a bad --format or a folder without data fails before Spark starts
    progress = StageProgress(enabled=not json_output)
    with ExitStack() as stack:
        with progress.stage(f"starting Spark ({master})"):
            spark = stack.enter_context(spark_session(master))
        summary = run_partition_job(spark, job, progress)
    if json_output:
        emit_json(summary.to_json())
    else:
        print_partition_summary(summary)
    return 0
