"""``df.write.format("kgroup")`` and ``writeStream.format("kgroup")``: DataFrame rows produced to
Kafka, with the columns of Spark's Kafka sink.

Columns: ``value`` (required; string or binary), ``key`` (string or binary, optional), ``topic``
(string; the ``topic`` option overrides it, as in Spark), ``partition`` (int, optional) and
``headers`` (``array<struct<key: string, value: binary>>``, optional). Strings are written as
UTF-8, as Spark's sink does.

What kgroup adds: a record without a ``partition`` gets the partition a **Java** producer would
choose — keyed records by Kafka's murmur2 (computed vectorised over each Arrow batch by
:func:`kgroup.partitioning.partitions_for_keys`), keyless records by the ``nullKeyStrategy`` option
(kgroup's models of Kafka's partitioners, one producer per Spark task seeded from ``nullKeySeed``).
Spark's sink leaves the choice to the Java client; librdkafka's own default partitioner (CRC32)
would pick other partitions, which is why kgroup always passes the partition explicitly.

Delivery is at least once, like Spark's Kafka sink: a failed task is retried and may write twice.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kgroup.model import KgroupError
from kgroup.spark.source.options import SinkOptions

__all__ = ["KgroupBatchWriter", "KgroupStreamWriter", "SinkColumns", "SinkCommit", "check_sink_schema"]

LOG = logging.getLogger("kgroup.spark")


@dataclass(frozen=True, slots=True)
class SinkColumns:
    """Which of the sink's columns the written DataFrame has (checked on the driver)."""

    has_key: bool
    has_topic: bool
    has_partition: bool
    has_headers: bool


@dataclass(frozen=True, slots=True)
class SinkCommit(WriterCommitMessage):
    """What one task wrote: records per (topic, partition)."""

    counts: tuple[tuple[str, int, int], ...]


def check_sink_schema(schema: Any, options: SinkOptions) -> SinkColumns:
    """Spark's ``KafkaWriter.validateQuery``: the columns' presence and types, before any job."""
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

    fields = {f.name.lower(): f.dataType for f in schema.fields}

    def check(name: str, allowed: tuple[type, ...], wanted: str) -> None:
        if name in fields and not isinstance(fields[name], allowed):
            raise KgroupError(
                f"{name}: the column is {fields[name].simpleString()}; it must be {wanted} (cast it)"
            )

    if "value" not in fields:
        raise KgroupError("value: the DataFrame has no value column; add one (string or binary)")
    check("value", (StringType, BinaryType), "string or binary")
    check("key", (StringType, BinaryType), "string or binary")
    check("topic", (StringType,), "string")
    check("partition", (IntegerType,), "int")
    if options.topic is None and "topic" not in fields:
        raise KgroupError(
            "topic: no topic option and no topic column; set .option('topic', NAME) or add a topic column"
        )
    if "headers" in fields:
        headers = fields["headers"]
        ok = (
            isinstance(headers, ArrayType)
            and isinstance(headers.elementType, StructType)
            and [(f.name, type(f.dataType)) for f in headers.elementType.fields]
            == [("key", StringType), ("value", BinaryType)]
        )
        if not ok:
            raise KgroupError(
                f"headers: the column is {headers.simpleString()}; it must be "
                "array<struct<key: string, value: binary>>"
            )
    _check_strategy(options)
    return SinkColumns("key" in fields, "topic" in fields, "partition" in fields, "headers" in fields)


def _check_strategy(options: SinkOptions) -> None:
    from kgroup.partitioning import null_key_chooser

    try:
        null_key_chooser(options.null_key_strategy, 1, rng=random.Random(0))
    except KgroupError as exc:
        raise KgroupError(f"nullKeyStrategy: {exc.message}") from None


class _TaskProducer:
    """One Spark task's producer: partitions chosen as a Java producer would, then produced."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, task_id: int) -> None:
        from confluent_kafka import Producer

        from kgroup.spark.source.kafka_io import producer_config

        self.options = options
        self.columns = columns
        self.task_id = task_id
        self.timeout_s = options.api_timeout_ms / 1000
        # Only failed deliveries are reported (delivery.report.only.error): no Python call per record.
        config = {"delivery.report.only.error": True, **producer_config(options.client_dict())}
        config["on_delivery"] = self._on_delivery
        self.producer = Producer(config)
        self.partition_counts: dict[str, int] = {}
        self.choosers: dict[str, Callable[..., int]] = {}
        self.counts: dict[tuple[str, int], int] = {}
        self.first_error: str | None = None

    def _on_delivery(self, error: Any, _message: Any) -> None:
        if error is not None and self.first_error is None:
            self.first_error = str(error)

    def partitions_of(self, topic: str) -> int:
        count = self.partition_counts.get(topic)
        if count is None:
            try:
                metadata = self.producer.list_topics(topic=topic, timeout=self.timeout_s)
            except Exception as exc:
                raise KgroupError(
                    f"kafka.bootstrap.servers: no broker answered at {self.options.bootstrap_servers} "
                    f"({exc}); check the address and that the broker is running"
                ) from None
            meta = metadata.topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise KgroupError(f"topic: {topic!r} does not exist on the cluster; create it first")
            count = len(meta.partitions)
            self.partition_counts[topic] = count
        return count

    def chooser(self, topic: str) -> Callable[..., int]:
        choose = self.choosers.get(topic)
        if choose is None:
            from kgroup.partitioning import null_key_chooser
            from kgroup.spark.null_keys import task_seed

            n = self.partitions_of(topic)
            seed = task_seed(self.options.null_key_seed, self.task_id, n)
            choose = null_key_chooser(self.options.null_key_strategy, n, rng=random.Random(seed))
            self.choosers[topic] = choose
        return choose

    def write_batch(self, batch: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from kgroup.partitioning import partitions_for_keys

        names = [n.lower() for n in batch.schema.names]

        def column(name: str) -> Any:
            return batch.column(names.index(name))

        n = batch.num_rows
        if n == 0:
            return
        values = column("value")
        keys = column("key") if self.columns.has_key else pa.nulls(n, pa.binary())
        if pa.types.is_string(keys.type):
            keys = keys.cast(pa.binary())
        if self.options.topic is not None:
            topics = [self.options.topic] * n
        else:
            topic_column = column("topic")
            if topic_column.null_count:
                raise KgroupError("topic: a row has a null topic and no topic option is set; fill the column")
            topics = topic_column.to_pylist()
        if self.columns.has_partition:
            given = column("partition")
            partitions = np.asarray(given.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            if int(partitions.min()) < -1 or given.null_count < int((partitions == -1).sum()):
                raise KgroupError("partition: a negative partition number; give 0 or more, or null to choose")
            self._check_given_partitions(topics, partitions)
        else:
            partitions = np.full(n, -1, dtype=np.int64)
        missing = partitions < 0
        if missing.any():
            for topic in sorted(set(topics)):
                rows = np.flatnonzero(missing & (np.asarray(topics, dtype=object) == topic))
                if not len(rows):
                    continue
                count = self.partitions_of(topic)
                topic_keys = keys.take(pa.array(rows))
                keyed = np.asarray(partitions_for_keys(topic_keys, count), dtype=np.int64)
                null_rows = np.flatnonzero(topic_keys.is_null().to_numpy(zero_copy_only=False))
                if len(null_rows):
                    choose = self.chooser(topic)
                    sizes = pc.binary_length(values.take(pa.array(rows[null_rows]))).fill_null(0)
                    for i, size in zip(null_rows.tolist(), sizes.to_pylist(), strict=True):
                        keyed[i] = choose(max(int(size), 1))
                partitions[rows] = keyed
        key_list = keys.to_pylist()
        value_list = values.to_pylist()  # str values are produced as UTF-8 by the client
        partition_list = partitions.tolist()
        produce = self.producer.produce
        if self.columns.has_headers:
            header_list = [
                [(h["key"], h["value"]) for h in headers] if headers else None
                for headers in column("headers").to_pylist()
            ]
            for topic, value, key, partition, headers in zip(
                topics, value_list, key_list, partition_list, header_list, strict=True
            ):
                try:
                    produce(topic, value, key, partition, headers=headers)
                except BufferError:
                    self._produce_when_room(topic, value, key, partition, headers)
        else:
            for topic, value, key, partition in zip(
                topics, value_list, key_list, partition_list, strict=True
            ):
                try:
                    produce(topic, value, key, partition)
                except BufferError:
                    self._produce_when_room(topic, value, key, partition, None)
        for tp, count in Counter(zip(topics, partition_list, strict=True)).items():
            self.counts[tp] = self.counts.get(tp, 0) + count
        self.producer.poll(0)  # serve delivery reports as they come
        self.fail_if_error()

    def _check_given_partitions(self, topics: list[str], partitions: Any) -> None:
        """A Java producer refuses a record for a partition the topic does not have; so does this."""
        import numpy as np

        given = partitions >= 0
        if not given.any():
            return
        topic_array = np.asarray(topics, dtype=object)
        for topic in sorted(set(topic_array[given].tolist())):
            highest = int(partitions[given & (topic_array == topic)].max())
            count = self.partitions_of(topic)
            if highest >= count:
                raise KgroupError(
                    f"partition: {highest} is not a partition of topic {topic!r} (it has {count}: 0 to "
                    f"{count - 1}); fix the partition column or leave it null to choose"
                )

    def _produce_when_room(self, topic: str, value: Any, key: Any, partition: int, headers: Any) -> None:
        """Produce once the local queue has room (deliveries drain it), waiting at most the API timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            self.producer.poll(0.05)
            self.fail_if_error()
            try:
                self.producer.produce(topic, value, key, partition, headers=headers)
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise KgroupError(
                        "kafka.bootstrap.servers: the producer's queue stayed full for "
                        f"{self.timeout_s:g} s; check that the broker is reachable"
                    ) from None

    def fail_if_error(self) -> None:
        if self.first_error is not None:
            raise KgroupError(f"kafka.bootstrap.servers: a record was not delivered ({self.first_error})")

    def finish(self) -> SinkCommit:
        remaining = self.producer.flush(self.timeout_s)
        self.fail_if_error()
        if remaining:
            raise KgroupError(
                f"kafka.bootstrap.servers: {remaining} records not delivered within {self.timeout_s:g} s "
                "(kafka.default.api.timeout.ms); check the broker"
            )
        return SinkCommit(tuple(sorted((t, p, c) for (t, p), c in self.counts.items())))


def _write(options: SinkOptions, columns: SinkColumns, batches: Iterator[Any]) -> SinkCommit:
    from pyspark import TaskContext

    context = TaskContext.get()
    task_id = context.partitionId() if context is not None else 0
    producer = _TaskProducer(options, columns, task_id)
    for batch in batches:
        producer.write_batch(batch)
    return producer.finish()


def _log_commit(messages: list[Any], what: str) -> None:
    total = sum(c for m in messages if isinstance(m, SinkCommit) for _t, _p, c in m.counts)
    LOG.info("kgroup sink: %s wrote %d records", what, total)


class KgroupBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return _write(self.options, self.columns, iterator)

    def commit(self, messages: list[Any]) -> None:
        _log_commit(messages, "batch")


class KgroupStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return _write(self.options, self.columns, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        _log_commit(messages, f"micro-batch {batchId}")
