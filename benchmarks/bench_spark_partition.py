"""Benchmark (not a test): Kafka's keyed partitioning of 2M rows on local Spark, side by side.

Run:  .venv/bin/python benchmarks/bench_spark_partition.py [--rows 2000000] [--runs 5] [--master local[2]]

Rows: ``key`` (a 16-character string, never null), ``id`` (long), ``value`` (a 50-character string),
cached in memory first so every figure is the partitioning, not the data generation. Each figure is
one action writing every column to Spark's ``noop`` sink (so nothing is pruned), median of ``--runs``
after one warm-up, measured in turns (one run of each, then the next round), so a busy machine skews
them alike:

* Spark's built-in ``pmod(hash(key), n)`` — murmur3, not Kafka's: the ceiling for a per-row hash;
* ``with_kafka_partition`` on the non-nullable key — kgroup's JVM function (no row leaves the JVM);
* ``with_kafka_partition`` on the same key declared nullable — the Arrow path (whole batches through
  the Python workers, where the null-key strategies run);
* a ``pandas_udf`` over kafka-python's murmur2 — what a PySpark user writes today (``--no-pandas``
  leaves it out; it is slow).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import pandas as pd  # module level: pandas_udf resolves its type hints in this module's globals

PARTITIONS = 12


def frames(spark: Any, rows: int) -> tuple[Any, Any]:
    """The cached rows, once with a non-nullable key and once with the same key declared nullable."""
    from pyspark.sql import functions as F

    base = spark.range(rows).select(
        F.format_string("key-%012d", "id").alias("key"), F.col("id"), F.repeat(F.lit("v"), 50).alias("value")
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-pandas", action="store_true", help="leave out the kafka-python pandas_udf")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from kgroup.partitioning import partition_for_key
    from kgroup.spark.partitioning.jvm import jar_problem, kgroup_jar
    from kgroup.spark.partitioning.partition_column import JVM_FUNCTION_NAME, with_kafka_partition
    from kgroup.spark.session import get_spark

    spark = get_spark(args.master, app_name="kgroup-bench-spark")
    print(f"rows {args.rows:,}, master {args.master}, {PARTITIONS} partitions, median of {args.runs}")
    print(f"kgroup JVM function: {kgroup_jar() or jar_problem()}")
    strict, loose = frames(spark, args.rows)
    sample = with_kafka_partition(strict, "key", PARTITIONS).limit(2000).collect()
    assert all(r["partition"] == partition_for_key(r["key"], PARTITIONS) for r in sample), "not Kafka's"
    jvm_plan = with_kafka_partition(strict, "key", PARTITIONS)._jdf.queryExecution().executedPlan().toString()
    assert JVM_FUNCTION_NAME in str(jvm_plan), "the JVM function was not used"

    cases: dict[str, Callable[[], Any]] = {
        "Spark built-in pmod(hash(key)) (murmur3)": lambda: strict.withColumn(
            "partition", F.pmod(F.hash("key"), F.lit(PARTITIONS))
        ),
        "with_kafka_partition, JVM function": lambda: with_kafka_partition(strict, "key", PARTITIONS),
        "with_kafka_partition, nullable key (Arrow)": lambda: with_kafka_partition(loose, "key", PARTITIONS),
    }
    if not args.no_pandas:
        cases["pandas_udf over kafka-python murmur2"] = lambda: pandas_kafka_python(strict)
    times: dict[str, list[float]] = {name: [] for name in cases}
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for _ in range(args.runs + 1):
        for name, make in cases.items():
            start = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            times[name].append(time.perf_counter() - start)
    ceiling = statistics.median(times[next(iter(cases))][1:])
    print(f"  {'implementation':<44} {'median s':>9} {'vs built-in':>12}   runs")
    for name, runs in times.items():
        median = statistics.median(runs[1:])
        print(f"  {name:<44} {median:>9.3f} {median / ceiling:>11.2f}x   {[round(r, 2) for r in runs[1:]]}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
