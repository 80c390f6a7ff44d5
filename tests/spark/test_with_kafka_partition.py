"""``with_kafka_partition(s)`` inside Spark: keyless records placed by one modelled producer per task,
exactly as :func:`kgroup.partitioning.spread_unkeyed` places them; keyed and binary keys exact."""

from __future__ import annotations

import struct
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
    with pytest.raises(
        KgroupError,
        match=r"key column 'n' has type bigint; .*\(key_serializer=, or --key-serializer\): long, integer",
    ):
        with_kafka_partition(df, "n", 3)
    with pytest.raises(KgroupError, match=r"type bigint, which Kafka's IntegerSerializer .* does not write"):
        with_kafka_partition(df, "n", 3, key_serializer="integer")
    with pytest.raises(KgroupError, match=r"key_serializer: 'int32' is not one of string, bytes, short"):
        with_kafka_partition(df, "n", 3, key_serializer="int32")
    doubles = spark.createDataFrame([(1.5,)], "d double")
    with pytest.raises(KgroupError, match=r"key column 'd' has type double; .*string or binary"):
        with_kafka_partition(doubles, "d", 3)
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


#: every edge of each width, and values either side of zero
_INTEGER_KEYS = [
    0,
    1,
    -1,
    127,
    -128,
    255,
    32767,
    -32768,
    65535,
    2**31 - 1,
    -(2**31),
    2**63 - 1,
    -(2**63),
    12345,
]


@pytest.mark.parametrize("path", ["jvm", "arrow"])
def test_integer_keys_hash_as_their_serializer_writes_them(
    spark: Any, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integer key column with the serializer its producer uses: the partition of the bytes Kafka's
    Long/Integer/ShortSerializer writes (big-endian two's complement) or StringSerializer of its
    decimal text; a null key is keyless. Both paths: kgroup's JVM function and the Arrow batches."""
    from pyspark.sql import functions as F

    from kgroup.spark.partitioning import partition_column

    if path == "arrow":
        monkeypatch.setattr(partition_column, "_register_jvm_function", lambda df: False)
    rows = [
        (k, k, k if -(2**31) <= k < 2**31 else None, k if -(2**15) <= k < 2**15 else None)
        for k in _INTEGER_KEYS
    ]
    rows.append((None, None, None, None))
    df = spark.createDataFrame(rows, "id long, l long, i int, s smallint").withColumn("i_not_null", F.lit(7))
    cases = [
        ("l", "long", ">q"),
        ("i", "integer", ">i"),
        ("i", "long", ">q"),
        ("s", "short", ">h"),
        ("s", "integer", ">i"),
    ]
    for column, serializer, layout in cases:
        got = with_kafka_partitions(
            df, column, [5, 12], "round-robin", output_columns=["p5", "p12"], key_serializer=serializer
        ).collect()
        assert [r["id"] for r in got] == [r[0] for r in rows]  # the rows and their order are kept
        for row in got:
            if row[column] is None:  # keyless: placed by the null-key strategy
                assert 0 <= row["p5"] < 5 and 0 <= row["p12"] < 12
                continue
            key = struct.pack(layout, row[column])
            assert (row["p5"], row["p12"]) == (partition_for_key(key, 5), partition_for_key(key, 12)), (
                column,
                serializer,
                row[column],
            )
    text = with_kafka_partition(df, "l", 12, key_serializer="string").collect()
    for row in text:
        if row["l"] is not None:
            assert row["partition"] == partition_for_key(str(row["l"]).encode(), 12)
    # a column that cannot be null stays known as such: the JVM path needs no null-key job
    never_null = with_kafka_partition(df, "i_not_null", 3, key_serializer="integer").collect()
    assert {r["partition"] for r in never_null} == {partition_for_key(struct.pack(">i", 7), 3)}
    assert set(never_null[0].asDict()) == {*df.columns, "partition"}  # the serialized key is not kept
