"""``with_kafka_partition(s)`` inside Spark: keyless records placed by one modelled producer per task,
exactly as :func:`kgroup.partitioning.spread_unkeyed` places them; keyed and binary keys exact."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from kgroup.model import KgroupError
from kgroup.partitioning import partition_for_key, spread_unkeyed
from kgroup.spark.null_keys import task_seed
from kgroup.spark.partitioning.partition_column import with_kafka_partition, with_kafka_partitions

pytestmark = pytest.mark.spark

STRATEGIES = ("round-robin", "uniform-sticky", "adaptive", "legacy-round-robin")
COUNTS = (7, 12)
RECORDS = 4_000


def _keys_frame(spark: Any) -> Any:
    """Two Spark partitions of ids 0..3999; one record in ten has a key, the rest none."""
    from pyspark.sql import functions as F

    ids = spark.range(0, RECORDS, 1, 2)
    key = F.when(F.col("id") % 10 == 0, F.concat(F.lit("k"), F.col("id").cast("string")))
    return ids.withColumn("key", key)


def _placements(spark: Any, strategy: str, seed: int) -> list[tuple[int, int, str | None, int, int]]:
    from pyspark.sql import functions as F

    df = with_kafka_partitions(_keys_frame(spark), "key", COUNTS, strategy, seed=seed)
    rows = df.withColumn("task", F.spark_partition_id()).collect()
    return sorted((r["task"], r["id"], r["key"], r["partition_7"], r["partition_12"]) for r in rows)


def test_null_key_strategies_one_seeded_producer_per_task(spark: Any) -> None:
    # One Spark run per strategy and seed; the per-task expectations are computed without Spark.
    for strategy in STRATEGIES:
        rows = _placements(spark, strategy, seed=11)
        assert len(rows) == RECORDS
        keyless: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for task, _id, key, p7, p12 in rows:  # sorted by task, then id: each task's record order
            if key is None:
                keyless[task].append((p7, p12))
            else:
                assert (p7, p12) == (partition_for_key(key, 7), partition_for_key(key, 12))
        assert sorted(keyless) == [0, 1]
        for task, placed in keyless.items():
            for column, n in enumerate(COUNTS):
                expected = spread_unkeyed(
                    strategy, len(placed), n, seed=task_seed(11, task, n), record_bytes=100
                )
                assert [p[column] for p in placed] == expected.tolist(), (strategy, task, n)
                # spread over several partitions, not stuck on one
                assert len({p[column] for p in placed}) >= 3, (strategy, task, n)
        if strategy in ("uniform-sticky", "adaptive"):
            # the random strategies follow the seed
            assert _placements(spark, strategy, seed=12) != rows


def test_binary_keys_are_hashed_as_is_and_partition_column_named(spark: Any) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    keys = [bytes([i, 255 - i, 0, i % 7]) for i in range(64)] + [b"", None]
    schema = StructType([StructField("k", BinaryType(), True)])
    df = spark.createDataFrame([(k,) for k in keys], schema)
    rows = with_kafka_partition(df, "k", 5, "round-robin", output_column="p").collect()
    assert len(rows) == len(keys)
    for row in rows:
        if row["k"] is not None:
            assert row["p"] == partition_for_key(bytes(row["k"]), 5)
        else:
            assert 0 <= row["p"] < 5


def test_bad_arguments_fail_on_the_driver(spark: Any) -> None:
    df = spark.createDataFrame([("a", 1)], "k string, n long")
    with pytest.raises(KgroupError, match=r"key column 'n' has type bigint; .*string or binary"):
        with_kafka_partition(df, "n", 3)
    with pytest.raises(KgroupError, match=r"key column 'x' is not in the data \(columns: 'k', 'n'\)"):
        with_kafka_partition(df, "x", 3)
    with pytest.raises(KgroupError, match="output column 'n' already exists"):
        with_kafka_partition(df, "k", 3, output_column="n")
    with pytest.raises(KgroupError, match="partitions: 0 is not a partition count"):
        with_kafka_partition(df, "k", 0)
    with pytest.raises(KgroupError, match="lists a count twice"):
        with_kafka_partitions(df, "k", [3, 3])
    with pytest.raises(KgroupError, match="partitioner 'nope' is unknown"):
        with_kafka_partition(df, "k", 3, "nope")
    with pytest.raises(KgroupError, match="record_bytes: 0"):
        with_kafka_partition(df, "k", 3, record_bytes=0)
