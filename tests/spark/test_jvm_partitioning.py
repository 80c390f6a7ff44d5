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


STRATEGIES = ("adaptive", "round-robin", "uniform-sticky", "legacy-round-robin")


def _random_keys(seed: int, count: int) -> list[tuple[int, str | None, bytes | None]]:
    """Rows (id, string key, binary key): random lengths 0-24 (non-ASCII text too), a third null."""
    import random

    rng = random.Random(seed)
    alphabet = "abcxyz019-é€😀"
    rows: list[tuple[int, str | None, bytes | None]] = []
    for i in range(count):
        if rng.random() < 0.3:
            rows.append((i, None, None))
            continue
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(25)))
        rows.append((i, text, rng.randbytes(rng.randrange(25))))
    return rows


@pytest.mark.speed
def test_nullable_keys_take_the_jvm_path_with_the_python_placement(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nullable key column holding null keys takes the JVM path too, null keys included: they are
    placed by kgroup's Java port of the modelled producers (no Python UDF in the plan), and every
    partition is the one the Python-worker path gives (each strategy once, string and binary keys
    in turn; tests/spark/test_jvm_keyless.py has the rest)."""
    import kgroup.spark.partitioning.partition_column as partitioning

    df = spark.createDataFrame(_random_keys(7, 3000), "i long, s string, b binary").repartition(3).cache()
    counts = [3, 12]
    try:
        for strategy, column in zip(STRATEGIES, ["s", "b", "s", "b"], strict=True):

            def partitioned(strategy: str = strategy, column: str = column) -> Any:
                return with_kafka_partitions(
                    df, column, counts, strategy, 5, record_bytes=300, batch_size=2000
                )

            jvm_df = partitioned()
            plan = _plan(jvm_df)
            assert JVM_FUNCTION_NAME in plan and "kgroup_keyless_partition" in plan, strategy
            assert "ArrowEvalPython" not in plan and "MapInArrow" not in plan, strategy
            got = sorted(tuple(r) for r in jvm_df.collect())
            with monkeypatch.context() as patch:
                patch.setattr(partitioning, "_register_jvm_function", lambda df: False)
                arrow_df = partitioned()
                assert JVM_FUNCTION_NAME not in _plan(arrow_df)
                expected = sorted(tuple(r) for r in arrow_df.collect())
            assert len(got) == 3000
            assert got == expected, strategy
            assert jvm_df.columns == arrow_df.columns
            assert all(p is not None for row in got for p in row[3:])  # null keys placed too
    finally:
        df.unpersist()


@pytest.mark.speed
def test_a_nullable_key_column_without_null_keys_never_leaves_the_jvm(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Parquet column is nullable even when it holds no null: every partition is computed in the
    JVM (no Python UDF in the plan), and no Spark job runs before the action. Where only Python
    models the strategy (a size beyond Java's int), kgroup looks for a null key first and, finding
    none, stays in the JVM as well; a null key met later (the input changed since) then fails the
    job rather than getting a partition that could differ from the Python path's."""
    import kgroup.spark.partitioning.partition_column as partitioning
    from kgroup.partitioning import partition_for_key

    keyed = [(i, s, b) for i, s, b in _random_keys(3, 800) if s is not None]
    spark.createDataFrame(keyed, "i long, s string, b binary").write.parquet(str(tmp_path / "keys"))
    df = spark.read.parquet(str(tmp_path / "keys"))
    assert all(f.nullable for f in df.schema.fields)
    jobs = spark.sparkContext.statusTracker()
    for index, column in ((1, "s"), (2, "b")):
        before = len(jobs.getJobIdsForGroup(None))
        partitioned = with_kafka_partitions(df, column, [5, 1000])
        assert len(jobs.getJobIdsForGroup(None)) == before  # lazy: no look at the data
        plan = _plan(partitioned)
        assert JVM_FUNCTION_NAME in plan and "ArrowEvalPython" not in plan and "MapInArrow" not in plan
        got = {r["i"]: (r["partition_5"], r["partition_1000"]) for r in partitioned.collect()}
        assert got == {
            row[0]: (partition_for_key(row[index], 5), partition_for_key(row[index], 1000)) for row in keyed
        }
    # a strategy only Python models: the look finds no null key, and every partition stays in the JVM
    python_only = {"record_bytes": 2**31}
    partitioned = with_kafka_partition(df, "s", 5, **python_only)
    plan = _plan(partitioned)
    assert JVM_FUNCTION_NAME in plan and "ArrowEvalPython" not in plan and "MapInArrow" not in plan
    assert {r["i"]: r["partition"] for r in partitioned.collect()} == {
        row[0]: partition_for_key(row[1], 5) for row in keyed
    }
    with_nulls = spark.createDataFrame([("a",), (None,)], "k string")
    # as if kgroup had looked before the input changed
    monkeypatch.setattr(partitioning, "_holds_null_keys", lambda df, key_column: False)
    guarded = with_kafka_partition(with_nulls, "k", 3, **python_only)
    with pytest.raises(Exception, match="had no null key when with_kafka_partition looked"):
        guarded.collect()


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


@pytest.mark.speed
def test_a_users_own_session_gets_the_jvm_function(own_process_sessions: dict[str, Any]) -> None:
    """A session kgroup did not start (nothing of kgroup's in its configuration) gets the jar and
    the function from ``with_kafka_partition`` itself and from ``kgroup.spark.register``. Runs in its
    own process (``own_process_sessions.py``, its ``user_session`` part, the process's first
    session): a plain ``SparkSession.builder`` session needs a SparkContext of its own. Its null
    keys are placed in the JVM too, from the thread that added the jar and from another."""
    from kgroup.partitioning import partition_for_key

    out = own_process_sessions["user_session"]
    assert "error" not in out, out.get("error")
    assert "kgroup" not in out["jars"]  # the user's session had no kgroup jar …
    assert out["before"] == "AnalysisException"  # … and no function
    assert out["auto_plan"] is True  # with_kafka_partition added both and took the JVM path
    assert out["auto_keyless_plan"] is True  # null keys included
    # another thread of the user's program too, with the same placement
    assert out["thread_keyless_plan"] is True and out["thread"] == out["auto"]
    keyed = [(k, p) for k, p in out["auto"] if k is not None]
    assert len(keyed) == 500
    assert all(p == partition_for_key(k, 12) for k, p in keyed)
    assert [p for k, p in out["auto"] if k is None] != [] and all(
        0 <= p < 12 for k, p in out["auto"] if k is None
    )
    assert out["register"] is None and out["other"] is None
    assert out["sql"] == out["other_sql"] == partition_for_key(b"a", 12)
    assert out["jar"] and out["jar"].endswith(".jar")
