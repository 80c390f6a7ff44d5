"""Benchmark (not a test): Kafka's keyed partitioning of 2M rows on local Spark, side by side.

Run:  .venv/bin/python benchmarks/bench_spark_partition.py [--rows 2000000] [--runs 5] [--master local[2]]

One run measures two sessions, each in its own process (Spark allows one SparkContext per JVM):

* ``kgroup`` — the session kgroup starts (``kgroup.spark.get_spark``: kgroup's jar is on
  ``spark.jars``);
* ``plain`` — a user's own ``SparkSession.builder…getOrCreate()`` with nothing of kgroup's, on which
  ``kgroup.spark.register(spark)`` then adds kgroup's jar and function.

Rows: ``key`` (a 16-character string), ``key_bytes`` (the same as binary), ``key_long`` (a long,
carried along: ``with_kafka_partition`` asks for a string or binary key column, cast it), ``value``
(a 50-character string), cached in memory first so every figure is the partitioning, not
the data generation; once with every key column declared non-nullable and once with the same rows
declared nullable (as every Parquet column is). Each figure is one action writing every column to
Spark's ``noop`` sink (so nothing is pruned), median of ``--runs`` after one warm-up, measured in
turns (one run of each, then the next round), so a busy machine skews them alike. For each key
column and nullability: Spark's built-in ``pmod(hash(key), 12)`` (murmur3, not Kafka's: the ceiling
for a per-row hash) on the same rows, then ``with_kafka_partition`` (``adaptive`` null-key strategy).
``--pandas`` adds a ``pandas_udf`` over kafka-python's murmur2 (what a PySpark user writes without
kgroup; slow). ``--null-keys`` measures instead a nullable string key column that holds null keys
(one row in ten): ``hash()``, ``with_kafka_partition`` (every row in the JVM, null keys placed by
kgroup's Java producer), the same with the null flag through the Arrow UDF to the Python producer
(the path kgroup takes when the JVM does not model the strategy, and took for every strategy
before), and an Arrow UDF on the same flag that only returns nulls — Spark's Python UDF machinery
alone, without kgroup's placement. ``--sessions kgroup`` measures one session only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pandas as pd  # module level: pandas_udf resolves its type hints in this module's globals

PARTITIONS = 12
KEYS = ("key", "key_bytes")


def frames(spark: Any, rows: int) -> tuple[Any, Any]:
    """The cached rows, once with non-nullable keys and once with the same keys declared nullable."""
    from pyspark.sql import functions as F

    key = F.format_string("key-%012d", "id")
    base = spark.range(rows).select(
        key.alias("key"),
        key.cast("binary").alias("key_bytes"),
        (F.col("id") * 7919).alias("key_long"),
        F.repeat(F.lit("v"), 50).alias("value"),
    )
    strict = base.cache()
    strict.count()
    loose_schema = strict.schema.__class__(
        [f.__class__(f.name, f.dataType, True) for f in strict.schema.fields]
    )
    loose = spark.createDataFrame(strict.rdd, loose_schema).cache()
    loose.count()
    return strict, loose


def pandas_kafka_python(df: Any) -> Any:
    from pyspark.sql import functions as F

    @F.pandas_udf("int")  # type: ignore[call-overload,misc]
    def partition(keys: pd.Series) -> pd.Series:
        from kafka.partitioner.default import murmur2

        return keys.map(lambda k: (murmur2(k.encode()) & 0x7FFFFFFF) % PARTITIONS).astype("int32")

    return df.withColumn("partition", partition(F.col("key")))


def _session(kind: str, master: str) -> Any:
    if kind == "kgroup":
        from kgroup.spark.session import get_spark

        return get_spark(master, app_name="kgroup-bench-spark")
    from pyspark.sql import SparkSession

    from kgroup.spark import register

    # the Python workers run this interpreter, as a user sets PYSPARK_PYTHON (or activates the
    # virtualenv); without it PySpark starts "python3" from PATH, which here has no numpy
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("user-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def bare_arrow_udf(df: Any) -> Any:
    """The null flag through an Arrow UDF that places nothing: what Spark's Python UDF path costs."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    def nothing(flags: Any) -> Any:
        for flag in flags:
            yield pa.nulls(len(flag), pa.int32())

    udf = arrow_udf(nothing, "int", ArrowUDFType.SCALAR_ITER).asNondeterministic()  # type: ignore[call-overload]
    return df.withColumn("partition", udf(F.col("key").isNull()))


def arrow_udf_placement(df: Any) -> Any:
    """``with_kafka_partition`` with the null keys placed by the Python producer behind the Arrow
    UDF (kgroup's JVM placement taken away): the path before the JVM placement, in the same run."""
    from kgroup.spark.partitioning import partition_column

    jvm_columns = partition_column._jvm_keyless_columns
    partition_column._jvm_keyless_columns = lambda *args: None
    try:
        partitioned = partition_column.with_kafka_partition(df, "key", PARTITIONS)
    finally:
        partition_column._jvm_keyless_columns = jvm_columns
    assert "ArrowEvalPython" in str(partitioned._jdf.queryExecution().executedPlan().toString())
    return partitioned


def measure(
    kind: str, rows: int, runs: int, master: str, with_pandas: bool, null_keys: bool
) -> dict[str, Any]:
    """One session's figures: {case: [seconds per run, warm-up first]}."""
    from pyspark.sql import functions as F

    from kgroup.partitioning import partition_for_key
    from kgroup.spark.partitioning.partition_column import JVM_FUNCTION_NAME, with_kafka_partition

    spark = _session(kind, master)
    strict, loose = frames(spark, rows)
    if null_keys:  # the null keys are placed in the JVM, and as the Python path places them
        from pyspark.sql import functions as F

        sample = loose.where(F.col("key_long") < 7919 * 20_000)  # the first 20,000 rows, in their tasks
        sample = sample.withColumn("key", F.when(F.col("key_long") % 10 != 0, F.col("key")))
        placed = with_kafka_partition(sample, "key", PARTITIONS)
        assert "kgroup_keyless_partition" in str(placed._jdf.queryExecution().executedPlan().toString())
        jvm_rows = {r["key_long"]: r["partition"] for r in placed.collect()}
        python_rows = {r["key_long"]: r["partition"] for r in arrow_udf_placement(sample).collect()}
        assert jvm_rows == python_rows and len(jvm_rows) == 20_000, "the JVM and Python placements differ"
    for df in (strict, loose):
        partitioned = with_kafka_partition(df, "key", PARTITIONS)
        plan = str(partitioned._jdf.queryExecution().executedPlan().toString())
        assert JVM_FUNCTION_NAME in plan, "the JVM function was not used"
        sample = partitioned.limit(2000).collect()
        assert all(r["partition"] == partition_for_key(r["key"], PARTITIONS) for r in sample), "not Kafka's"

    cases: dict[str, Callable[[], Any]] = {}
    if null_keys:
        nulled = loose.withColumn("key", F.when(F.col("key_long") % 10 != 0, F.col("key"))).cache()
        nulled.count()
        cases["key with null keys: hash()"] = lambda: nulled.withColumn(
            "partition", F.pmod(F.hash("key"), F.lit(PARTITIONS))
        )
        cases["key with null keys: kgroup"] = lambda: with_kafka_partition(nulled, "key", PARTITIONS)
        cases["key with null keys: kgroup, Arrow UDF"] = lambda: arrow_udf_placement(nulled)
        cases["key with null keys: bare Arrow UDF"] = lambda: bare_arrow_udf(nulled)
    for nullability, df in () if null_keys else (("non-null", strict), ("nullable", loose)):
        for key in KEYS:
            cases[f"{key} {nullability}: hash()"] = lambda df=df, key=key: df.withColumn(
                "partition", F.pmod(F.hash(key), F.lit(PARTITIONS))
            )
            cases[f"{key} {nullability}: kgroup"] = lambda df=df, key=key: with_kafka_partition(
                df, key, PARTITIONS
            )
    if with_pandas:
        cases["key non-null: pandas_udf kafka-python"] = lambda: pandas_kafka_python(strict)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs + 1):
        for name, make in cases.items():
            start = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            times[name].append(time.perf_counter() - start)
    spark.stop()
    return times


def report(kind: str, times: dict[str, list[float]]) -> None:
    print(f"session: {kind}")
    print(f"  {'case':<44} {'median s':>9} {'vs hash()':>10}   runs")
    for name, runs in times.items():
        median = statistics.median(runs[1:])
        peer = statistics.median(times[name.split(":")[0] + ": hash()"][1:])  # same key column and rows
        ratio = median / peer
        print(f"  {name:<44} {median:>9.3f} {ratio:>9.2f}x   {[round(r, 2) for r in runs[1:]]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--pandas", action="store_true", help="add the kafka-python pandas_udf")
    parser.add_argument("--null-keys", action="store_true", help="a key column holding null keys (see above)")
    parser.add_argument("--sessions", default="kgroup,plain", help="the sessions to measure, comma-separated")
    parser.add_argument(
        "--session", choices=["kgroup", "plain"], help="measure one session (a child process)"
    )
    args = parser.parse_args()

    if args.session:  # the child: one session, its figures as JSON on the last line
        print(
            json.dumps(measure(args.session, args.rows, args.runs, args.master, args.pandas, args.null_keys))
        )
        return
    from kgroup.spark.partitioning.jvm import jar_problem, kgroup_jar

    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; rows {args.rows:,}, master {args.master}, ")
    print(f"{PARTITIONS} partitions, median of {args.runs} after one warm-up")
    print(f"kgroup JVM function: {kgroup_jar() or jar_problem()}")
    for kind in args.sessions.split(","):
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        command = [
            sys.executable,
            __file__,
            "--session",
            kind,
            "--rows",
            str(args.rows),
            "--runs",
            str(args.runs),
        ]
        command += ["--master", args.master, *(["--pandas"] if args.pandas else [])]
        command += ["--null-keys"] if args.null_keys else []
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
        if done.returncode != 0:
            sys.exit(f"the {kind} session failed:\n{done.stderr[-3000:]}")
        report(kind, json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
