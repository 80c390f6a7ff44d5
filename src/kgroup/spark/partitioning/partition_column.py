"""Kafka's producer partitioning as a DataFrame transformation, computed inside Spark over Arrow batches.

:func:`with_kafka_partition` (one partition count) and :func:`with_kafka_partitions` (several) add
the partition every record would get from a Kafka producer:

* a keyed record: ``toPositive(murmur2(keyBytes)) % numPartitions``, exact to Kafka, computed by the
  vectorised :func:`kgroup.partitioning.partitions_for_keys_multi` on each Arrow batch
  (``DataFrame.mapInArrow`` — whole batches, never a row-at-a-time UDF); a string key is hashed as
  its UTF-8 bytes (Kafka's ``StringSerializer``), a binary key as is, an integer key as the
  ``key_serializer`` named for it writes it (``integer``/``long``/``short``: Kafka's
  ``IntegerSerializer``/``LongSerializer``/``ShortSerializer``, big-endian two's complement;
  ``string``: ``StringSerializer`` of its decimal text);
* a keyless record (null key): the named null-key strategy (``round-robin``, ``uniform-sticky``,
  ``adaptive``, ``legacy-round-robin``), one partitioner instance per Spark task and per partition
  count — as if each task were its own producer. Its ``random.Random`` is seeded from the user's
  seed, the task's partition id and the partition count (:func:`task_seed`), so a run is
  reproducible for the same input layout and seed.

Usable from your own PySpark code::

    from kgroup.spark import with_kafka_partition
    df = with_kafka_partition(orders, "customer_id", 12)   # adds an int column "partition"
"""

from __future__ import annotations

import random
import uuid
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from kgroup.model import KgroupError
from kgroup.spark.null_keys import DEFAULT_NULL_KEY_STRATEGY, task_seed
from kgroup.spark.partitioning.jvm import FUNCTION_NAME

__all__ = [
    "JVM_FUNCTION_NAME",
    "KEY_SERIALIZERS",
    "KeylessProducer",
    "check_key_column",
    "check_key_serializer",
    "with_kafka_partition",
    "with_kafka_partitions",
]

#: Kafka 3.3+'s built-in behaviour for records without a key (KIP-794).
#: a topic's partition count is a Java int
_MAX_PARTITIONS = 0x7FFFFFFF
#: the name kgroup's JVM function is registered under in a session
JVM_FUNCTION_NAME = FUNCTION_NAME


def _quoted(name: str) -> str:
    """A column name as Spark SQL reads it, whatever characters it holds (dots, spaces …)."""
    return "`" + name.replace("`", "``") + "`"


#: ``key_serializer`` names: the Kafka serializer a producer writes the key with, its byte width
#: for the integer ones, and the Spark column types it takes
KEY_SERIALIZERS: dict[str, tuple[str, int, frozenset[str]]] = {
    "string": ("StringSerializer", 0, frozenset({"string", "tinyint", "smallint", "int", "bigint"})),
    "bytes": ("ByteArraySerializer", 0, frozenset({"binary"})),
    "short": ("ShortSerializer", 2, frozenset({"tinyint", "smallint"})),
    "integer": ("IntegerSerializer", 4, frozenset({"tinyint", "smallint", "int"})),
    "long": ("LongSerializer", 8, frozenset({"tinyint", "smallint", "int", "bigint"})),
}
_INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})


def check_key_serializer(key_serializer: str | None, field: str = "key_serializer") -> None:
    """Fail, naming ``field`` and the choices, for a key serializer kgroup does not know (before
    any Spark job)."""
    if key_serializer is not None and key_serializer not in KEY_SERIALIZERS:
        names = ", ".join(KEY_SERIALIZERS)
        raise KgroupError(f"{field}: {key_serializer!r} is not one of {names}; give one of them")


def check_key_column(df: Any, key_column: str, key_serializer: str | None = None) -> str:
    """Validate that ``key_column`` exists and that its type can be serialized as Kafka would:
    strings and bytes as they are, an integer column with the ``key_serializer`` its producer uses.
    Return the key's type as reports show it (``"string"``, ``"binary"``, ``"bigint as long"`` …)."""
    check_key_serializer(key_serializer)
    fields = {f.name: f for f in df.schema.fields}
    if key_column not in fields:
        columns = ", ".join(repr(n) for n in fields) or "none"
        raise KgroupError(
            f"key column {key_column!r} is not in the data (columns: {columns}); "
            "pass one of them as the key column"
        )
    type_name = fields[key_column].dataType.simpleString()
    if key_serializer is None:
        if type_name in ("string", "binary"):
            return type_name
        if type_name in _INTEGER_TYPES:
            raise KgroupError(
                f"key column {key_column!r} has type {type_name}; Kafka hashes the key's serialized bytes, "
                "so name the serializer its producer uses (key_serializer=, or --key-serializer): long, "
                "integer or short (Kafka's LongSerializer, IntegerSerializer, ShortSerializer: big-endian) "
                "or string (StringSerializer of its decimal text)"
            )
        raise KgroupError(
            f"key column {key_column!r} has type {type_name}; Kafka hashes serialized key bytes, "
            f"so give a string or binary column (e.g. cast it: df.withColumn({key_column!r}, "
            f"col({key_column!r}).cast('string')))"
        )
    serializer, _, takes = KEY_SERIALIZERS[key_serializer]
    if type_name not in takes:
        fits = ", ".join(sorted(takes))
        raise KgroupError(
            f"key column {key_column!r} has type {type_name}, which Kafka's {serializer} (key serializer "
            f"{key_serializer!r}) does not write; it takes {fits} columns: name another key serializer "
            "or cast the column"
        )
    if type_name in ("string", "binary"):
        return type_name
    return f"{type_name} as {key_serializer}"


def _serialized_key(df: Any, key_column: str, key_serializer: str | None) -> Any | None:
    """The key column as the bytes ``key_serializer`` writes, or ``None`` when the column is used as
    it is (a string or binary column). Integers become big-endian two's complement of the
    serializer's width (Spark's ANSI mode refuses casting integers to binary, so through their hex
    text), or their decimal text for ``string``; a null stays null."""
    from pyspark.sql import functions as F

    data_type = next(f.dataType.simpleString() for f in df.schema.fields if f.name == key_column)
    if data_type in ("string", "binary"):
        return None
    column = F.col(_quoted(key_column))
    if key_serializer == "string":
        return column.cast("string")
    width = KEY_SERIALIZERS[str(key_serializer)][1]
    value = column.cast("bigint")
    if width < 8:  # the low bytes of the sign-extended value: Java's int/short bits
        value = value.bitwiseAND(F.lit((1 << (8 * width)) - 1).cast("bigint"))
    return F.unhex(F.lpad(F.hex(value), 2 * width, "0"))


def _check_counts(partition_counts: Sequence[int]) -> list[int]:
    counts = list(partition_counts)
    if not counts:
        raise KgroupError("partitions: no partition count given; give at least one, e.g. 12")
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise KgroupError(f"partitions: {n!r} is not a partition count; give whole numbers of 1 or more")
        if n > _MAX_PARTITIONS:
            raise KgroupError(f"partitions: {n} does not fit Java's int; give at most {_MAX_PARTITIONS}")
    if len(set(counts)) != len(counts):
        raise KgroupError(f"partitions: {counts} lists a count twice; give each partition count once")
    return counts


class KeylessProducer:
    """One producer placing keyless records with a null-key strategy, its batches kept across calls.

    Drives :class:`kgroup.partitioning.ProducerModel` as
    :func:`kgroup.partitioning.spread_unkeyed` does — the broker keeps up: a batch is sent as soon
    as it is full and the sender then shows the queue sizes to the partitioner — but keeps the
    producer's state from one Arrow batch to the next, as a long-lived producer would.
    """

    TOPIC = "topic"

    def __init__(
        self, strategy: str, rng: random.Random, num_partitions: int, *, record_bytes: int, batch_size: int
    ) -> None:
        from kgroup.partitioning import ClusterView, ProducerModel, TopicState, create_partitioner

        config: dict[str, object] = {"batch_size": batch_size} if strategy in ("adaptive", "keyed") else {}
        partitioner = create_partitioner(strategy, rng=rng, **config)
        self._model = ProducerModel(
            partitioner, ClusterView({self.TOPIC: TopicState(num_partitions)}), batch_size=batch_size
        )
        self._record_bytes = record_bytes
        self._batches = 0

    def place(self, count: int) -> list[int]:
        """The partitions of the next ``count`` keyless records."""
        model = self._model
        out: list[int] = []
        for _ in range(count):
            out.append(model.send(self.TOPIC, None, None, size_bytes=self._record_bytes))
            if model.batches_created != self._batches:
                self._batches = model.batches_created
                model.drain(self.TOPIC, include_open=False)
                model.sender_ready()
        return out


def _task_producers(
    strategy: str, user_seed: int, task_id: int, counts: Sequence[int], record_bytes: int, batch_size: int
) -> list[KeylessProducer]:
    """One Spark task's modelled producers, one per partition count, each with its own seeded sequence."""
    return [
        KeylessProducer(
            strategy,
            random.Random(task_seed(user_seed, task_id, n)),
            n,
            record_bytes=record_bytes,
            batch_size=batch_size,
        )
        for n in counts
    ]


def _check_keyless_settings(strategy: str, record_bytes: int, batch_size: int) -> None:
    """Fail on the driver, before any Spark job starts, for a bad strategy name or size."""
    for name, value in (("record_bytes", record_bytes), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise KgroupError(f"{name}: {value!r}; give a size in bytes of 1 or more")
    KeylessProducer(strategy, random.Random(0), 1, record_bytes=record_bytes, batch_size=batch_size)


def with_kafka_partitions(
    df: Any,
    key_column: str,
    partition_counts: Sequence[int],
    null_key_strategy: str | None = DEFAULT_NULL_KEY_STRATEGY,
    seed: int = 0,
    output_columns: Sequence[str] | None = None,
    *,
    record_bytes: int = 100,
    batch_size: int = 16384,
    key_serializer: str | None = None,
) -> Any:
    """``df`` with one int column per partition count: each record's Kafka partition.

    ``output_columns`` defaults to ``partition_<N>`` for each count N. The key column is a string
    or binary column, or an integer column with ``key_serializer`` naming how its producer writes
    it (``long``, ``integer``, ``short`` or ``string``: :data:`KEY_SERIALIZERS`); other types, or
    an integer column without a serializer, raise :class:`~kgroup.model.KgroupError` naming the type.
    Keyless records are modelled as ``record_bytes`` each, in batches of ``batch_size`` bytes
    (``batch.size``; it decides when the sticky strategies switch partition).
    ``null_key_strategy=None`` (beyond Kafka, whose producer always places a keyless record) says
    the keys are never null: a null key then gets a null partition.
    Lazy, like any DataFrame transformation: nothing runs until an action.

    Where it runs: wherever kgroup's JVM function can be registered (:mod:`kgroup.spark.partitioning.jvm`:
    every session with a JDK — kgroup's own and any other, to which the jar is added), each keyed
    row's partition is computed inside Spark's JVM, and so is each null key's (a nullable key
    column and a strategy): kgroup's Java port of the modelled producer
    (:func:`_jvm_keyless_columns`) places them, so no row goes to Python and nothing runs before an
    action. Only a strategy (or size) the JVM does not model — a partitioner registered by the user —
    takes the Python workers: one quick Spark job first looks for a null key (reading the key column
    only; a streaming DataFrame is not looked at); with none, no row goes to Python; with some, each
    row's "key is null" flag goes to an Arrow UDF. Without the JVM function, whole Arrow batches go
    through the Python workers (``mapInArrow``). Every path is exact to Kafka and gives the same
    partitions.
    """
    from pyspark.sql.types import IntegerType, StructField, StructType

    counts = _check_counts(partition_counts)
    check_key_column(df, key_column, key_serializer)
    names = list(output_columns) if output_columns is not None else [f"partition_{n}" for n in counts]
    if len(names) != len(counts):
        raise KgroupError(
            f"output_columns: {len(names)} names for {len(counts)} partition counts; give one name per count"
        )
    for name in names:
        if name in df.columns:
            raise KgroupError(
                f"output column {name!r} already exists in the data; "
                "rename that column or choose another output name"
            )
    if len(set(names)) != len(names):
        raise KgroupError(f"output_columns: {names} repeats a name; give each partition column its own name")
    if null_key_strategy is not None:
        _check_keyless_settings(null_key_strategy, record_bytes, batch_size)
    serialized = _serialized_key(df, key_column, key_serializer)
    if serialized is not None:  # partition on the serialized bytes in a column of their own
        from pyspark.sql import functions as F

        if not _key_nullable(df, key_column):  # keep "never null" known (unhex's result is nullable)
            serialized = F.coalesce(serialized, F.lit(bytearray()))
        temporary = f"__kgroup_key_{uuid.uuid4().hex}"
        partitioned = with_kafka_partitions(
            df.withColumn(temporary, serialized),
            temporary,
            counts,
            null_key_strategy,
            seed,
            names,
            record_bytes=record_bytes,
            batch_size=batch_size,
        )
        return partitioned.drop(temporary)
    keyless_possible = null_key_strategy is not None and _key_nullable(df, key_column)
    if _register_jvm_function(df):
        keyless: Any | None = None
        if keyless_possible and null_key_strategy is not None:
            # The JVM places null keys as the Python path does, and only for rows with a null key
            # (the keyed partition comes first in a coalesce): no look at the data, and the result
            # stays lazy.
            keyless = _jvm_keyless_columns(
                df, key_column, null_key_strategy, int(seed), counts, record_bytes, batch_size
            )
            if keyless is None:  # a strategy (or size) only Python models: the flag to Python
                if df.isStreaming or _holds_null_keys(df, key_column):
                    keyless = _keyless_partitions_udf(
                        null_key_strategy, int(seed), counts, record_bytes, batch_size
                    )
                else:
                    keyless = _NO_NULL_KEYS
        return _with_jvm_partitions(df, key_column, counts, names, keyless)
    key_index = df.columns.index(key_column)
    out_schema = StructType(
        [
            *df.schema.fields,
            *(StructField(name, IntegerType(), nullable=null_key_strategy is None) for name in names),
        ]
    )
    user_seed = int(seed)

    def partition_batches(batches: Iterator[Any]) -> Iterator[Any]:
        # Runs in the Python worker of each Spark task.
        import pyarrow as pa
        from pyspark import TaskContext

        from kgroup.partitioning import partitions_for_keys_multi
        from kgroup.spark.worker_gc import task_started

        task_started()
        context = TaskContext.get()
        task_id = context.partitionId() if context is not None else 0
        producers: list[KeylessProducer] | None = None
        for batch in batches:
            keys = batch.column(key_index)
            parts = partitions_for_keys_multi(keys, counts)
            if keys.null_count and null_key_strategy is None:  # no strategy: a null partition
                missing = keys.is_null().to_numpy(zero_copy_only=False)
                columns = [
                    *batch.columns,
                    *(pa.array(parts[row], type=pa.int32(), mask=missing) for row in range(len(counts))),
                ]
                yield pa.RecordBatch.from_arrays(columns, names=[*batch.schema.names, *names])
                continue
            if keys.null_count and null_key_strategy is not None:
                if producers is None:  # one producer per task: created on its first keyless record
                    producers = _task_producers(
                        null_key_strategy, user_seed, task_id, counts, record_bytes, batch_size
                    )
                positions = np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))
                for row, producer in enumerate(producers):
                    parts[row, positions] = producer.place(len(positions))
            columns = [*batch.columns, *(pa.array(parts[row], type=pa.int32()) for row in range(len(counts)))]
            yield pa.RecordBatch.from_arrays(columns, names=[*batch.schema.names, *names])

    return df.mapInArrow(partition_batches, out_schema)


def _key_nullable(df: Any, key_column: str) -> bool:
    """Whether the schema lets the key column hold nulls (after ``filter(col(k).isNotNull())`` it
    does not)."""
    return bool(next(f.nullable for f in df.schema.fields if f.name == key_column))


def _register_jvm_function(df: Any) -> bool:
    """Register kgroup's JVM function in ``df``'s session (adding its jar to a session kgroup did
    not start); ``False`` when it cannot (no JDK to compile it, a session that refuses the jar)."""
    from kgroup.spark.partitioning.jvm import register_function

    return register_function(df.sparkSession) is None


#: ``keyless`` of :func:`_with_jvm_partitions` for a nullable key column found without a null key
_NO_NULL_KEYS = "no null keys"


def _holds_null_keys(df: Any, key_column: str) -> bool:
    """Whether any row of ``df`` has a null key: one Spark job reading only the key column, which
    a Parquet file or a cached DataFrame answers from its statistics (null counts) where it can."""
    from pyspark.sql import functions as F

    key = F.col(_quoted(key_column))
    return not df.select(key).where(key.isNull()).isEmpty()


def _with_jvm_partitions(
    df: Any, key_column: str, counts: list[int], names: list[str], keyless: Any | None
) -> Any:
    """The partition columns computed by kgroup's JVM function. ``keyless``: ``None`` — a null key
    gets a null partition; a list of columns from :func:`_jvm_keyless_columns` (one per count) —
    kgroup's JVM placement of the null keys; an Arrow UDF from :func:`_keyless_partitions_udf` —
    it places the null keys in the Python workers; :data:`_NO_NULL_KEYS` — the data had none when
    looked at, and a null key met later fails the job (the input changed in between: placing it
    here could differ from the Python path)."""
    from pyspark.sql import functions as F

    key = F.col(_quoted(key_column)).cast("binary")  # a string's UTF-8 bytes, as StringSerializer
    keyed = [F.call_udf(JVM_FUNCTION_NAME, key, F.lit(n)) for n in counts]
    if keyless is None:  # every key is present (or a null one gets no partition): no row leaves the JVM
        return df.withColumns(dict(zip(names, keyed, strict=True)))
    if isinstance(keyless, list):  # kgroup's JVM placement of the null keys: no row leaves the JVM
        return df.withColumns(
            {name: F.coalesce(jvm, placed) for name, jvm, placed in zip(names, keyed, keyless, strict=True)}
        )
    if keyless is _NO_NULL_KEYS:  # no row leaves the JVM either
        changed = F.raise_error(
            F.lit(
                f"key column {key_column!r} had no null key when with_kafka_partition looked, and has one "
                "now: the input changed; call with_kafka_partition again on the changed input"
            )
        )
        return df.withColumns(
            {name: F.coalesce(jvm, changed) for name, jvm in zip(names, keyed, strict=True)}
        )
    # Only each row's "is the key null" flag goes to the Python workers, where the null-key
    # strategies run on the null rows in the task's row order; the keyed rows keep the JVM's answer.
    placed = f"__kgroup_keyless_{uuid.uuid4().hex}"
    with_placed = df.withColumn(placed, keyless(F.col(_quoted(key_column)).isNull()))
    columns = {
        name: F.coalesce(jvm, F.col(placed)[f"p{i}"])
        for i, (name, jvm) in enumerate(zip(names, keyed, strict=True))
    }
    return with_placed.withColumns(columns).drop(placed)


#: a record size or batch.size beyond a Java int is left to Python (Kafka's batch.size is an int)
_MAX_JVM_BYTES = 0x7FFFFFFF


def _jvm_strategy(strategy: str, batch_size: int) -> str | None:
    """The name of the strategy kgroup's JVM producer models for ``strategy`` (as
    :class:`KeylessProducer` creates it), or ``None`` when only Python has it: a partitioner
    registered by the user, or one of the built-in names registered over. ``keyed`` places its
    null keys with an ``adaptive`` partitioner of the same ``batch_size``."""
    from kgroup.partitioning import (
        AdaptivePartitioner,
        KeyedPartitioner,
        LegacyRoundRobinPartitioner,
        RoundRobinPartitioner,
        UniformStickyPartitioner,
        create_partitioner,
    )

    config: dict[str, object] = {"batch_size": batch_size} if strategy in ("adaptive", "keyed") else {}
    partitioner = create_partitioner(strategy, rng=random.Random(0), **config)
    if type(partitioner) is KeyedPartitioner:
        partitioner = partitioner.null_key
    if type(partitioner) is AdaptivePartitioner:
        plain = partitioner.adaptive_partitioning_enable and partitioner.availability_timeout_ms == 0
        return "adaptive" if plain and partitioner.batch_size == batch_size else None
    if type(partitioner) is RoundRobinPartitioner:
        return None if partitioner.double_call_on_new_batch else "round-robin"
    if type(partitioner) is UniformStickyPartitioner:
        return "uniform-sticky"
    if type(partitioner) is LegacyRoundRobinPartitioner:
        return "legacy-round-robin"
    return None


def _jvm_keyless_columns(
    df: Any,
    key_column: str,
    strategy: str,
    user_seed: int,
    counts: list[int],
    record_bytes: int,
    batch_size: int,
) -> list[Any] | None:
    """One column per count placing each null key in the JVM (``null`` for a keyed row): kgroup's
    Java ``KeylessPartition`` (:func:`kgroup.spark.partitioning.jvm.keyless_udf`), with the same
    producers, seeds and row order as :func:`_keyless_partitions_udf`. ``None`` when the JVM does
    not model the strategy or the sizes, or the session cannot load the class: the caller uses the
    Arrow UDF.

    Each column is non-deterministic to Spark (``asNondeterministic``, and the partition index
    argument is so too): no filter is pushed below it and it is evaluated once per row, in the
    task's row order. The partition index tells the Java side when a task starts reading another
    RDD partition (a ``coalesce``), where the Python path starts a new Arrow UDF iterator."""
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import Column, _to_seq

    from kgroup.spark.partitioning.jvm import keyless_udf

    name = _jvm_strategy(strategy, batch_size)
    if name is None or record_bytes > _MAX_JVM_BYTES or batch_size > _MAX_JVM_BYTES:
        return None
    spark = df.sparkSession
    arguments = [F.col(_quoted(key_column)).isNull(), F.spark_partition_id()]
    columns: list[Any] = []
    for n in counts:
        function = keyless_udf(spark, name, user_seed, n, record_bytes, batch_size)
        if function is None:
            return None
        java_arguments = _to_seq(spark.sparkContext, [c._jc for c in arguments])
        columns.append(Column(function.apply(java_arguments)))
    return columns


def _keyless_partitions_udf(
    strategy: str, user_seed: int, counts: list[int], record_bytes: int, batch_size: int
) -> Any:
    """An Arrow UDF from each row's "key is null" flag to a struct of partitions (field ``p<i>``
    for ``counts[i]``): the null-key strategy's placement for a null key, null for a keyed row.

    The same producers, seeds and order as the Arrow path of :func:`with_kafka_partitions`: one
    :class:`KeylessProducer` per task and partition count, seeded by :func:`task_seed`, created on
    the task's first keyless record and fed the task's keyless records in row order. Marked
    non-deterministic, so Spark neither pushes a filter below it (which would change the rows a
    task's producer sees) nor evaluates it twice.
    """
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    fields = [f"p{i}" for i in range(len(counts))]
    out_type = "struct<" + ",".join(f"{field}:int" for field in fields) + ">"

    def place(flags: Iterator[Any]) -> Iterator[Any]:
        # Runs in the Python worker of each Spark task.
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        task_id = context.partitionId() if context is not None else 0
        producers: list[KeylessProducer] | None = None
        for is_null in flags:
            missing = is_null.to_numpy(zero_copy_only=False)
            positions = np.flatnonzero(missing)
            if not len(positions):
                empty = pa.nulls(len(missing), pa.int32())
                yield pa.StructArray.from_arrays([empty] * len(fields), names=fields)
                continue
            if producers is None:  # one producer per task: created on its first keyless record
                producers = _task_producers(strategy, user_seed, task_id, counts, record_bytes, batch_size)
            keyed = ~missing
            arrays = []
            for producer in producers:
                parts = np.zeros(len(missing), dtype=np.int32)
                parts[positions] = producer.place(len(positions))
                arrays.append(pa.array(parts, type=pa.int32(), mask=keyed))
            yield pa.StructArray.from_arrays(arrays, names=fields)

    with warnings.catch_warnings():  # pyspark prefers type hints; this module's are strings
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(place, out_type, ArrowUDFType.SCALAR_ITER).asNondeterministic()


def with_kafka_partition(
    df: Any,
    key_column: str,
    num_partitions: int,
    null_key_strategy: str | None = DEFAULT_NULL_KEY_STRATEGY,
    seed: int = 0,
    output_column: str = "partition",
    *,
    key_serializer: str | None = None,
    **keyless: int,
) -> Any:
    """``df`` with an int column ``output_column``: each record's partition in a topic of
    ``num_partitions`` partitions (see the module documentation for keys and keyless records).
    ``keyless`` takes ``record_bytes`` and ``batch_size``, and ``key_serializer`` is as in
    :func:`with_kafka_partitions`."""
    return with_kafka_partitions(
        df,
        key_column,
        [num_partitions],
        null_key_strategy,
        seed,
        [output_column],
        key_serializer=key_serializer,
        **keyless,
    )


def key_column_expression(key_column: str) -> Any:
    """The Spark column for ``key_column``, quoted so any name works."""
    from pyspark.sql import functions as F

    return F.col(_quoted(key_column))
