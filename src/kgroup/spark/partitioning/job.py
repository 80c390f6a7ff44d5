"""The partitioning job: read a keyed dataset, partition it as Kafka would, measure skew and movement.

All counting is done by Spark aggregations. The partitioned records are first reduced to one row per
(key, partition for each count) with its record count — at most one row per distinct key, plus one
per partition combination of the keyless records — and every figure (per-partition counts, hottest
partitions and their top keys, keys and records that move between counts) is a small aggregation of
that table. Only those small answers reach the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError
from kgroup.spark.null_keys import DEFAULT_NULL_KEY_STRATEGY
from kgroup.spark.partitioning.partition_column import (
    _quoted,
    check_key_column,
    with_kafka_partitions,
)
from kgroup.spark.partitioning.results import (
    CountSummary,
    HotPartition,
    KeyCount,
    MovedShare,
    NullProgress,
    PartitionSummary,
    Progress,
)

__all__ = [
    "FORMATS",
    "PartitionJob",
    "detect_format",
    "read_input",
    "run_partition_job",
    "summarize_partitions",
]

#: Input formats and the file name endings that identify them.
FORMATS: dict[str, tuple[str, ...]] = {
    "parquet": (".parquet", ".pq"),
    "csv": (".csv", ".csv.gz", ".tsv"),
    "json": (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz"),
}


def _format_of(name: str) -> str | None:
    lowered = name.lower()
    for fmt, endings in FORMATS.items():
        if lowered.endswith(endings):
            return fmt
    return None


def detect_format(path: Path, requested: str = "auto") -> str:
    """The input format: ``requested`` if not ``auto``, else from the file name or the data files of
    a directory (Spark's ``_SUCCESS`` and hidden files ignored)."""
    requested = (requested or "auto").lower()
    if requested != "auto":
        if requested not in FORMATS:
            raise KgroupError(f"format: {requested!r} is not supported; use parquet, csv, json or auto")
        return requested
    if path.is_file():
        fmt = _format_of(path.name)
        if fmt is None:
            raise KgroupError(
                f"input: cannot tell the format of {path} from its name; pass --format parquet, csv or json"
            )
        return fmt
    found: set[str] = set()
    for file in path.rglob("*"):
        if file.is_file() and not any(part.startswith((".", "_")) for part in file.relative_to(path).parts):
            fmt = _format_of(file.name)
            if fmt is not None:
                found.add(fmt)
    if len(found) == 1:
        return found.pop()
    if not found:
        raise KgroupError(
            f"input: no .parquet, .csv or .json files in {path}; point at the data files or pass --format"
        )
    raise KgroupError(
        f"input: {path} mixes formats ({', '.join(sorted(found))}); pass --format to choose one"
    )


def read_input(spark: Any, path: Path | str, fmt: str = "auto") -> tuple[Any, str]:
    """Read a Parquet/CSV/JSON file or directory into a DataFrame; returns it and the format used.

    CSV files need a header row; every CSV column is read as a string (a key ``007`` stays the
    string ``"007"``, as a producer would send it). JSON is one object per line.
    """
    source = Path(path)
    if not source.exists():
        raise KgroupError(
            f"input: {source} does not exist; give a Parquet, CSV or JSON file or a directory of them"
        )
    chosen = detect_format(source, fmt)
    reader = spark.read
    try:
        if chosen == "parquet":
            df = reader.parquet(str(source))
        elif chosen == "csv":
            df = reader.option("header", "true").option("inferSchema", "false").csv(str(source))
        else:
            df = reader.json(str(source))
    except Exception as exc:
        raise KgroupError(
            f"input: Spark could not read {source} as {chosen} ({_first_line(exc)}); "
            "check the file or pass --format"
        ) from exc
    if chosen == "json" and df.columns == ["_corrupt_record"]:
        raise KgroupError(
            f"input: {source} is not JSON lines (one object per line); fix the file or pass --format"
        )
    return df, chosen


def _first_line(exc: BaseException) -> str:
    """The one line of a Spark failure that says what went wrong: py4j's "An error occurred while
    calling o42.parquet." says nothing, the Java exception's own message (``[ERROR_CLASS] …``) does."""
    import re

    for line in str(exc).strip().splitlines():
        line = line.strip().removeprefix(": ")
        if not line or line.startswith("An error occurred while calling"):
            continue
        # "org.apache.spark.SparkException: [FAILED_READ_FILE…] …" -> "[FAILED_READ_FILE…] …"
        line = re.sub(r"^(?:[\w$]+\.)+[\w$]*(?:Exception|Error): ", "", line)
        return line[:240]
    return type(exc).__name__


def _hot_partitions(per_partition: Sequence[int], how_many: int) -> list[int]:
    """The fullest partitions, most records first, lower id first on ties; empty ones never."""
    order = sorted(range(len(per_partition)), key=lambda p: (-per_partition[p], p))
    return [p for p in order[:how_many] if per_partition[p] > 0]


def _render_key(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return str(value)


def summarize_partitions(
    partitioned: Any,
    key_column: str,
    partition_counts: Sequence[int],
    partition_columns: Sequence[str],
    *,
    key_type: str,
    null_key_strategy: str,
    seed: int,
    hottest: int = 3,
    top_keys: int = 5,
    source: str | None = None,
    source_format: str | None = None,
) -> PartitionSummary:
    """Aggregate a partitioned DataFrame (one partition column per count) into a :class:`PartitionSummary`."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    counts = list(partition_counts)
    key = F.col(_quoted(key_column))
    part_cols = [F.col(_quoted(c)) for c in partition_columns]
    # One row per key (a key's partitions are a function of the key) and per keyless combination.
    grouped = (
        partitioned.groupBy(key.alias("k"), *[c.alias(f"p{i}") for i, c in enumerate(part_cols)])
        .agg(F.count(F.lit(1)).alias("n"))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        keyed = F.col("k").isNotNull()
        totals_exprs = [
            F.coalesce(F.sum("n"), F.lit(0)).alias("records"),
            F.coalesce(F.sum(F.when(keyed, F.col("n"))), F.lit(0)).alias("keyed_records"),
            F.count(F.when(keyed, F.lit(1))).alias("distinct_keys"),
        ]
        for i in range(len(partition_counts) - 1):
            differs = keyed & (F.col(f"p{i}") != F.col(f"p{i + 1}"))
            totals_exprs.append(F.count(F.when(differs, F.lit(1))).alias(f"keys_moved_{i}"))
            totals_exprs.append(
                F.coalesce(F.sum(F.when(differs, F.col("n"))), F.lit(0)).alias(f"records_moved_{i}")
            )
        totals = grouped.agg(*totals_exprs).collect()[0]
        records = int(totals["records"])
        keyed_records = int(totals["keyed_records"])
        distinct_keys = int(totals["distinct_keys"])

        # One row per (count index, partition, key) — the counts stacked, so that one job answers
        # for every partition count.
        stacked = grouped.select(
            F.explode(
                F.array(
                    *[F.struct(F.lit(i).alias("c"), F.col(f"p{i}").alias("p")) for i in range(len(counts))]
                )
            ).alias("cp"),
            "k",
            "n",
        ).select("cp.c", "cp.p", "k", "n")
        per_partition = [[0] * n for n in counts]
        for row in stacked.groupBy("c", "p").agg(F.sum("n").alias("records")).collect():
            per_partition[int(row["c"])][int(row["p"])] = int(row["records"])
        hot = [_hot_partitions(per_partition[i], hottest) for i in range(len(counts))]
        top: dict[tuple[int, int], list[KeyCount]] = {(i, p): [] for i in range(len(counts)) for p in hot[i]}
        if top and top_keys > 0:
            is_hot = F.lit(False)
            for i in range(len(counts)):
                if hot[i]:
                    is_hot = is_hot | ((F.col("c") == i) & F.col("p").isin(hot[i]))
            ranked = Window.partitionBy("c", "p").orderBy(F.col("n").desc(), F.col("k").asc())
            key_rows = (
                stacked.where(F.col("k").isNotNull() & is_hot)
                .withColumn("rank", F.row_number().over(ranked))
                .where(F.col("rank") <= top_keys)
                .collect()
            )
            for row in sorted(key_rows, key=lambda r: (int(r["c"]), int(r["p"]), int(r["rank"]))):
                top[(int(row["c"]), int(row["p"]))].append(KeyCount(_render_key(row["k"]), int(row["n"])))
        summaries = [
            CountSummary(
                num_partitions=n,
                per_partition=tuple(per_partition[i]),
                hottest=tuple(HotPartition(p, per_partition[i][p], tuple(top[(i, p)])) for p in hot[i]),
            )
            for i, n in enumerate(counts)
        ]
        moved = tuple(
            MovedShare(
                from_count=partition_counts[i],
                to_count=partition_counts[i + 1],
                keys_moved=int(totals[f"keys_moved_{i}"]),
                distinct_keys=distinct_keys,
                records_moved=int(totals[f"records_moved_{i}"]),
                keyed_records=keyed_records,
            )
            for i in range(len(partition_counts) - 1)
        )
    finally:
        grouped.unpersist()
    return PartitionSummary(
        input=source,
        input_format=source_format,
        key_column=key_column,
        key_type=key_type,
        records=records,
        keyed_records=keyed_records,
        distinct_keys=distinct_keys,
        null_key_strategy=null_key_strategy,
        seed=seed,
        counts=tuple(summaries),
        moved=moved,
    )


@dataclass(frozen=True, slots=True)
class PartitionJob:
    """The parameters of ``kgroup partition --input``."""

    input_path: Path
    key_column: str
    partition_counts: tuple[int, ...]
    null_key_strategy: str = DEFAULT_NULL_KEY_STRATEGY
    seed: int = 0
    input_format: str = "auto"
    output_dir: Path | None = None
    hottest: int = 3
    top_keys: int = 5
    #: how an integer key column's producer serializes it (``partition_column.KEY_SERIALIZERS``)
    key_serializer: str | None = None

    def partition_columns(self) -> list[str]:
        """``partition`` for a single count, ``partition_<N>`` per count otherwise."""
        if len(self.partition_counts) == 1:
            return ["partition"]
        return [f"partition_{n}" for n in self.partition_counts]


def run_partition_job(spark: Any, job: PartitionJob, progress: Progress | None = None) -> PartitionSummary:
    """Read, partition, summarise and (with ``output_dir``) write the records partitioned by partition.

    The output is Parquet under ``output_dir``, laid out by the first count's partition column
    (``partition=3/part-….parquet``); further counts' columns are ordinary columns.
    """
    progress = progress or NullProgress()
    output = job.output_dir
    if output is not None and output.exists():
        raise KgroupError(f"output: {output} already exists; remove it or choose a new directory")
    with progress.stage(f"reading {job.input_path}"):
        df, fmt = read_input(spark, job.input_path, job.input_format)
        key_type = check_key_column(df, job.key_column, job.key_serializer)
    columns = job.partition_columns()
    partitioned = with_kafka_partitions(
        df,
        job.key_column,
        job.partition_counts,
        job.null_key_strategy,
        job.seed,
        columns,
        key_serializer=job.key_serializer,
    )
    if output is not None:
        # Partitioned once, used twice (the write and the summary).
        from pyspark import StorageLevel

        partitioned = partitioned.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts_text = ", ".join(str(n) for n in job.partition_counts)
        with progress.stage(f"partitioning and counting ({counts_text} partitions)"):
            summary = _spark_errors_as_input_errors(
                lambda: summarize_partitions(
                    partitioned,
                    job.key_column,
                    job.partition_counts,
                    columns,
                    key_type=key_type,
                    null_key_strategy=job.null_key_strategy,
                    seed=job.seed,
                    hottest=job.hottest,
                    top_keys=job.top_keys,
                    source=str(job.input_path),
                    source_format=fmt,
                ),
                job.input_path,
                fmt,
            )
        if summary.records == 0:
            raise KgroupError(
                f"input: {job.input_path} holds no records; give a dataset with at least one record"
            )
        if output is not None:
            with progress.stage(f"writing {output}"):
                partitioned.write.mode("errorifexists").partitionBy(columns[0]).parquet(str(output))
    finally:
        if output is not None:
            partitioned.unpersist()
    return replace(summary, output=str(output) if output is not None else None)


def _spark_errors_as_input_errors(action: Any, path: Path, fmt: str) -> PartitionSummary:
    """Run a Spark action; a failure reading the data becomes a one-line input error."""
    try:
        result: PartitionSummary = action()
    except KgroupError:
        raise
    except Exception as exc:
        from pyspark.errors import PySparkException

        py4j_error = type(exc).__name__ == "Py4JJavaError"
        if not isinstance(exc, PySparkException) and not py4j_error:
            raise
        raise KgroupError(
            f"input: Spark failed on {path} read as {fmt} ({_first_line(exc)}); "
            "check the data or pass --format"
        ) from exc
    return result
