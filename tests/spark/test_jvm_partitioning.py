"""kgroup's JVM partitioning function (``kgroup.spark.partitioning.jvm``): exact to Kafka on every
murmur2 vector, taken for key columns that cannot be null, and compiled (or cleanly skipped) on this
machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgroup.spark.partitioning import jvm
from kgroup.spark.partitioning.partition_column import (
    JVM_FUNCTION_NAME,
    with_kafka_partition,
    with_kafka_partitions,
)

pytestmark = pytest.mark.spark

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "murmur2" / "murmur2.json").read_text()
)
COUNTS: list[int] = VECTORS[0]["input"]["numPartitions"]


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def test_jvm_function_matches_every_vector_at_every_count(spark: Any) -> None:
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    assert jvm.kgroup_jar() is not None, jvm.jar_problem()  # this machine has JDK 17
    rows = [(i, bytes.fromhex(v["input"]["keyHex"])) for i, v in enumerate(VECTORS)]
    schema = StructType([StructField("i", IntegerType(), False), StructField("k", BinaryType(), False)])
    df = spark.createDataFrame(rows, schema)
    names = [f"p{n}" for n in COUNTS]
    partitioned = with_kafka_partitions(df, "k", COUNTS, output_columns=names)
    assert JVM_FUNCTION_NAME in _plan(partitioned)  # the JVM path, not the Python workers
    got = {r["i"]: r for r in partitioned.collect()}
    assert len(got) == len(VECTORS)
    for i, v in enumerate(VECTORS):
        for n, name in zip(COUNTS, names, strict=True):
            assert got[i][name] == v["expected"]["partitions"][str(n)], (v["input"]["keyHex"], n)


def test_string_keys_hash_as_utf8_in_the_jvm(spark: Any) -> None:
    from pyspark.sql.types import StringType, StructField, StructType

    with_text = [v for v in VECTORS if "keyUtf8" in v["input"]]
    schema = StructType([StructField("k", StringType(), nullable=False)])
    df = spark.createDataFrame([(v["input"]["keyUtf8"],) for v in with_text], schema)
    partitioned = with_kafka_partition(df, "k", 1000)
    assert JVM_FUNCTION_NAME in _plan(partitioned)
    got = {r["k"]: r["partition"] for r in partitioned.collect()}
    for v in with_text:
        assert got[v["input"]["keyUtf8"]] == v["expected"]["partitions"]["1000"]


def test_nullable_key_columns_keep_the_arrow_path(spark: Any) -> None:
    """A column that may hold nulls needs the null-key strategies, which run in Python."""
    df = spark.createDataFrame([("a",), (None,)], "k string")
    partitioned = with_kafka_partition(df, "k", 3, "round-robin")
    assert JVM_FUNCTION_NAME not in _plan(partitioned)
    assert len(partitioned.collect()) == 2


@pytest.mark.parametrize("jvm_path", [True, False])
def test_no_null_key_strategy_gives_null_keys_a_null_partition(
    spark: Any, jvm_path: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``null_key_strategy=None``: keys are meant to be present; a null one gets no partition. The
    same answer in the JVM and, when the session has no JVM function, in the Python workers."""
    import kgroup.spark.partitioning.partition_column as partitioning
    from kgroup.partitioning import partition_for_key

    if not jvm_path:
        monkeypatch.setattr(partitioning, "_register_jvm_function", lambda df: False)
    df = spark.createDataFrame([("a",), (None,), ("b",)], "k string")
    partitioned = with_kafka_partition(df, "k", 7, None)
    assert (JVM_FUNCTION_NAME in _plan(partitioned)) is jvm_path
    assert [f.nullable for f in partitioned.schema.fields] == [True, True]
    got = [(r["k"], r["partition"]) for r in partitioned.collect()]
    assert sorted(got, key=str) == sorted(
        [("a", partition_for_key("a", 7)), (None, None), ("b", partition_for_key("b", 7))], key=str
    )


def test_without_javac_there_is_no_jar_and_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    monkeypatch.setattr(jvm, "_state", {})
    assert jvm.kgroup_jar() is None
    assert "javac" in (jvm.jar_problem() or "")


def test_the_jar_is_compiled_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm, "_state", {})
    jar = jvm.kgroup_jar()
    assert jar is not None and Path(jar).is_relative_to(tmp_path), jvm.jar_problem()
    assert "kgroup/spark/KafkaPartition.class" in zipfile.ZipFile(jar).namelist()
    monkeypatch.setattr(jvm, "_state", {})
    monkeypatch.setattr(jvm, "_javac", lambda: None)  # a second start finds the cached jar
    assert jvm.kgroup_jar() == jar


def test_an_unwritable_cache_means_no_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the cache directory cannot be created
    monkeypatch.setattr(jvm, "_state", {})
    assert jvm.kgroup_jar() is None
    assert "could not write the jar" in (jvm.jar_problem() or "")
