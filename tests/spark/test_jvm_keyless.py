"""kgroup's JVM placement of keyless records (``java/KeylessPartition.java`` and what it uses) gives
the Python model's partitions: its parts — BLAKE2b against ``hashlib``, Python's MT19937 seeding and
``getrandbits(32)`` against ``random.Random``, ``KeylessProducer`` against the Python
``KeylessProducer`` — driven through the test session's JVM gateway, and ``with_kafka_partitions``
with null keys, row for row against both Python paths, with no Python UDF in the plan."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.partitioning import partition_for_key
from kgroup.spark.null_keys import task_seed
from kgroup.spark.partitioning import jvm
from kgroup.spark.partitioning.partition_column import (
    JVM_FUNCTION_NAME,
    KeylessProducer,
    with_kafka_partitions,
)

pytestmark = pytest.mark.spark

STRATEGIES = ("adaptive", "uniform-sticky", "round-robin", "legacy-round-robin")
#: the name kgroup's JVM placement carries in Spark's plans (KeylessPartition.FUNCTION_NAME)
KEYLESS_FUNCTION = "kgroup_keyless_partition"
#: a batch.size five records of 250 bytes and the batch header fill exactly: the sticky switches
#: then fall on the model's boundaries
EXACT_BATCH = 61 + 5 * 250


def _kgroup_classes(spark: Any) -> Any:
    """``kgroup.spark`` in the session's JVM (its jar is on ``spark.jars``)."""
    assert jvm.kgroup_jar() is not None, jvm.jar_problem()
    return spark._jvm.kgroup.spark


@settings(max_examples=150)
@given(message=st.binary(max_size=600), digest_size=st.integers(1, 64))
def test_blake2b_is_hashlibs(spark: Any, message: bytes, digest_size: int) -> None:
    got = bytes(_kgroup_classes(spark).Blake2b.digest(bytearray(message), digest_size))
    assert got == hashlib.blake2b(message, digest_size=digest_size).digest()


def test_blake2b_at_every_block_edge(spark: Any) -> None:
    """Lengths either side of each 128-byte block edge (the last block is the one flagged final)."""
    classes = _kgroup_classes(spark)
    for length in (0, 1, 111, 112, 127, 128, 129, 255, 256, 257, 384, 1000):
        message = bytes(range(256)) * 4
        assert (
            bytes(classes.Blake2b.digest(bytearray(message[:length]), 8))
            == hashlib.blake2b(message[:length], digest_size=8).digest()
        ), length


@settings(max_examples=200)
@given(
    seed=st.one_of(st.integers(), st.integers(-(2**80), 2**80), st.just(0)),
    task=st.integers(0, 2**31 - 1),
    count=st.integers(1, 2**31 - 1),
)
def test_task_seed_is_pythons(spark: Any, seed: int, task: int, count: int) -> None:
    got = _kgroup_classes(spark).KeylessPartition.taskSeed(str(seed), task, count)
    assert got % 2**64 == task_seed(seed, task, count)


@settings(max_examples=40)
@given(
    seed=st.one_of(
        st.integers(0, 2**64 - 1), st.integers(0, 2**200), st.sampled_from([0, 1, 2**32, 2**64 - 1])
    )
)
def test_python_random_is_pythons(spark: Any, seed: int) -> None:
    """``random.Random(seed)`` then ``getrandbits(32)``, past the first regeneration of the state
    (624 words): seeded from the whole int, and from the 64-bit value ``task_seed`` gives."""
    classes = _kgroup_classes(spark)
    magnitude = seed.to_bytes(max(1, (seed.bit_length() + 7) // 8), "little") + b"\0"  # a high zero byte
    generators = [classes.PythonRandom.forMagnitude(bytearray(magnitude))]
    if seed < 2**64:
        generators.append(classes.PythonRandom.forUnsignedLong(seed - 2**64 if seed >= 2**63 else seed))
    for generator in generators:
        expected = random.Random(seed)
        for _ in range(640):
            assert generator.nextInt() % 2**32 == expected.getrandbits(32)


@st.composite
def _sizes(draw: st.DrawFn) -> tuple[int, int]:
    """(record_bytes, batch_size): any, and often a batch.size that a batch header and whole
    records fill exactly, or miss by one byte — where every ``>=`` of the model must be right."""
    record_bytes = draw(st.one_of(st.integers(1, 400), st.sampled_from([1, 100, 16_384, 40_000])))
    if draw(st.booleans()):
        records = draw(st.integers(1, 40))
        return record_bytes, max(1, 61 + record_bytes * records + draw(st.sampled_from([0, -1, 1])))
    return record_bytes, draw(st.one_of(st.integers(1, 3000), st.sampled_from([16_384, 2**31 - 1])))


@settings(max_examples=300)
@given(
    strategy=st.sampled_from(STRATEGIES),
    seed=st.integers(-(2**70), 2**70),
    task=st.integers(0, 10_000),
    count=st.one_of(st.integers(1, 16), st.integers(1, 1200)),
    sizes=_sizes(),
    chunks=st.lists(st.integers(0, 900), min_size=1, max_size=4),
)
def test_java_producer_places_as_the_python_model(
    spark: Any,
    strategy: str,
    seed: int,
    task: int,
    count: int,
    sizes: tuple[int, int],
    chunks: list[int],
) -> None:
    """The Java producer of a task, seeded by the Java ``taskSeed``, gives the Python
    ``KeylessProducer``'s partitions, its state kept across calls as across Arrow batches."""
    record_bytes, batch_size = sizes
    classes = _kgroup_classes(spark)
    rng = classes.PythonRandom.forUnsignedLong(classes.KeylessPartition.taskSeed(str(seed), task, count))
    java = classes.KeylessProducer(strategy, rng, count, record_bytes, batch_size)
    python = KeylessProducer(
        strategy,
        random.Random(task_seed(seed, task, count)),
        count,
        record_bytes=record_bytes,
        batch_size=batch_size,
    )
    for size in chunks:
        text = java.nextText(size)
        assert [int(p) for p in text.split(",") if p] == python.place(size), (strategy, size)


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _keys(seed: int, count: int) -> list[tuple[int, str | None]]:
    """Rows (id, key): one key in four null, in runs (the sticky strategies switch inside a task)."""
    rng = random.Random(seed)
    return [(i, None if rng.random() < 0.25 else f"key-{rng.randrange(10**6)}") for i in range(count)]


def _python_paths(monkeypatch: pytest.MonkeyPatch, make: Any) -> tuple[list[Any], list[Any]]:
    """``make()``'s rows on the two Python paths: the Arrow UDF on the null flag (kgroup's JVM placement
    unavailable), and whole batches through ``mapInArrow`` (no JVM function at all)."""
    import kgroup.spark.partitioning.partition_column as partitioning

    with monkeypatch.context() as patch:
        patch.setattr(partitioning, "_jvm_keyless_columns", lambda *args: None)
        flag = make()
        assert "ArrowEvalPython" in _plan(flag) and KEYLESS_FUNCTION not in _plan(flag)
        flag_rows = sorted(tuple(r) for r in flag.collect())
    with monkeypatch.context() as patch:
        patch.setattr(partitioning, "_register_jvm_function", lambda df: False)
        batches = make()
        assert "MapInArrow" in _plan(batches)
        batch_rows = sorted(tuple(r) for r in batches.collect())
    return flag_rows, batch_rows


@pytest.mark.parametrize("strategy", [*STRATEGIES, "keyed"])
def test_null_keys_are_placed_in_the_jvm_as_in_python(
    spark: Any, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every strategy (``keyed`` places its null keys as ``adaptive``), counts 1 to 100, three
    Spark partitions: the JVM placement gives every row the partition both Python paths give, and
    the plan has no Python UDF."""
    counts = [1, 2, 7, 12, 100]
    df = spark.createDataFrame(_keys(len(strategy), 2400), "i long, k string").repartition(3).cache()
    try:

        def make() -> Any:
            return with_kafka_partitions(
                df, "k", counts, strategy, 9, record_bytes=250, batch_size=EXACT_BATCH
            )

        placed = make()
        plan = _plan(placed)
        assert JVM_FUNCTION_NAME in plan and KEYLESS_FUNCTION in plan, plan
        assert "ArrowEvalPython" not in plan and "MapInArrow" not in plan and "PythonUDF" not in plan
        got = sorted(tuple(r) for r in placed.collect())
        flag_rows, batch_rows = _python_paths(monkeypatch, make)
        assert len(got) == 2400
        assert got == flag_rows, strategy
        assert got == batch_rows, strategy
        for _i, key, *partitions in got:
            if key is not None:
                assert partitions == [partition_for_key(key, n) for n in counts]
        keyless = [tuple(row[2:]) for row in got if row[1] is None]
        assert keyless and all(0 <= p < n for row in keyless for p, n in zip(row, counts, strict=True))
        assert len({row[3] for row in keyless}) > 1  # count 12: spread, not all on one partition
    finally:
        df.unpersist()


def test_a_task_reading_several_partitions_starts_a_producer_for_each(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``coalesce(1)`` after the partitioning: one task reads the three partitions one after the
    other; the Python paths start a new producer for each (seeded by the task's id), and so does
    the JVM placement (the partition index tells it)."""
    df = spark.createDataFrame(_keys(5, 1500), "i long, k string").repartition(3).cache()
    try:

        def make() -> Any:
            return with_kafka_partitions(df, "k", [5], "uniform-sticky", 3, batch_size=700).coalesce(1)

        got = sorted(tuple(r) for r in make().collect())
        flag_rows, batch_rows = _python_paths(monkeypatch, make)
        assert got == flag_rows == batch_rows
    finally:
        df.unpersist()


def test_a_filter_after_the_placement_is_not_pushed_below_it(spark: Any) -> None:
    """The placement depends on the rows before it in the task: a filter written after it must see
    the placement of the whole input, not a placement of the filtered rows."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame(_keys(11, 1200), "i long, k string").repartition(2).cache()
    try:
        placed = with_kafka_partitions(df, "k", [6], "adaptive", 1, record_bytes=300, batch_size=900)
        everything = {r["i"]: r["partition_6"] for r in placed.collect()}
        filtered = placed.where(F.col("i") % 3 == 0)
        assert KEYLESS_FUNCTION in _plan(filtered)
        assert {r["i"]: r["partition_6"] for r in filtered.collect()} == {
            i: p for i, p in everything.items() if i % 3 == 0
        }
    finally:
        df.unpersist()


def test_sizes_beyond_a_java_int_take_the_arrow_udf(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record size beyond Java's int is left to Python (the flag through the Arrow UDF): the same
    partitions as the ``mapInArrow`` path."""
    import kgroup.spark.partitioning.partition_column as partitioning

    df = spark.createDataFrame(_keys(2, 600), "i long, k string").repartition(2)

    def make() -> Any:
        return with_kafka_partitions(df, "k", [4], "adaptive", 0, record_bytes=2**31)

    placed = make()
    assert "ArrowEvalPython" in _plan(placed) and KEYLESS_FUNCTION not in _plan(placed)
    got = sorted(tuple(r) for r in placed.collect())
    with monkeypatch.context() as patch:
        patch.setattr(partitioning, "_register_jvm_function", lambda df: False)
        assert got == sorted(tuple(r) for r in make().collect())
