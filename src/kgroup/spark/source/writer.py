"""``df.write.format("kgroup")`` and ``writeStream.format("kgroup")``: DataFrame rows produced to
Kafka, with the columns of Spark's Kafka sink.

Columns: ``value`` (required; string or binary), ``key`` (string or binary, optional), ``topic``
(string; the ``topic`` option overrides it, as in Spark), ``partition`` (int, optional) and
``headers`` (``array<struct<key: string, value: binary>>``, optional). Strings are written as
UTF-8, as Spark's sink does.

What kgroup adds: a record without a ``partition`` gets the partition a **Java** producer would
choose (:mod:`kgroup.spark.source.sink_rows`) — keyed records by Kafka's murmur2, keyless records by
the ``nullKeyStrategy`` option. Spark's sink leaves the choice to the Java client; librdkafka's own
default partitioner (CRC32) would pick other partitions, which is why kgroup always passes the
partition explicitly.

Each task writes through one of two producers: the bulk path (:mod:`kgroup.spark.source.bulk_sink`:
record batches written from Arrow in one kernel and sent on Kafka's wire, with the Java producer's
delivery defaults — PLAINTEXT, no compression) or, when the ``kafka.*`` options ask for what only
librdkafka does (TLS/SASL, compression, another librdkafka property), confluent-kafka
(:mod:`kgroup.spark.source.librdkafka_sink`, one ``produce()`` per record).

Delivery is at least once, like Spark's Kafka sink: a failed task is retried and may write twice.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kgroup.model import KgroupError
from kgroup.spark.source.bulk_producer import BulkProducer, ProducerSettings
from kgroup.spark.source.bulk_sink import BulkTaskProducer, bulk_settings
from kgroup.spark.source.options import SinkOptions, check_client_config
from kgroup.spark.source.sink_rows import SinkColumns
from kgroup.spark.worker_gc import task_started

if TYPE_CHECKING:
    from kgroup.spark.source.librdkafka_sink import LibrdkafkaTaskProducer

__all__ = [
    "KgroupBatchWriter",
    "KgroupStreamWriter",
    "SinkColumns",
    "SinkCommit",
    "check_sink_client",
    "check_sink_schema",
    "check_sink_topic",
    "sink_producer_settings",
]

LOG = logging.getLogger("kgroup.spark")


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


def _write(options: SinkOptions, columns: SinkColumns, batches: Iterator[Any]) -> SinkCommit:
    from pyspark import TaskContext

    task_started()
    context = TaskContext.get()
    task_id = context.partitionId() if context is not None else 0
    settings = sink_producer_settings(options)
    producer: BulkTaskProducer | LibrdkafkaTaskProducer
    if settings is not None:
        producer = BulkTaskProducer(options, columns, task_id, settings)
    else:
        from kgroup.spark.source.librdkafka_sink import LibrdkafkaTaskProducer

        producer = LibrdkafkaTaskProducer(options, columns, task_id)
    try:
        for batch in batches:
            producer.write_batch(batch)
        counts = producer.finish()
    finally:
        if isinstance(producer, BulkTaskProducer):
            producer.abort()
    return SinkCommit(tuple(sorted((t, p, c) for (t, p), c in counts.items())))


def sink_producer_settings(options: SinkOptions) -> ProducerSettings | None:
    """The bulk path's settings for a write's ``kafka.*`` options, or None: librdkafka's path."""
    return bulk_settings(options.client_dict(), options.api_timeout_ms)


def check_sink_client(options: SinkOptions) -> None:
    """On the driver, before any task: librdkafka checks every ``kafka.*`` property's name and value
    (as it would on the librdkafka path), and the bulk path the values it takes itself."""
    from confluent_kafka import Producer

    from kgroup.spark.source.kafka_io import producer_config

    check_client_config(producer_config(options.client_dict()), Producer)
    settings = sink_producer_settings(options)
    if options.topic is not None:
        check_sink_topic(options, settings)


def check_sink_topic(options: SinkOptions, settings: ProducerSettings | None) -> None:
    """On the driver, before any task: the ``topic`` option's topic exists, or the cluster creates
    it now as it would for the first record of Spark's ``format("kafka")`` sink (a producer's
    Metadata request with ``allow_auto_topic_creation``, honoured where ``auto.create.topics.enable``
    is on); where the cluster will not create it or the principal may not write it, one line
    here, before any Spark job (Spark's sink fails each task after ``max.block.ms``, 60 s)."""
    assert options.topic is not None
    timeout_s = options.api_timeout_ms / 1000
    if settings is not None:
        producer = BulkProducer(options.bootstrap_servers, settings, timeout_s)
        try:
            producer.partition_count(options.topic)
        finally:
            producer.close()
        return
    from confluent_kafka import Producer

    from kgroup.spark.source.kafka_io import producer_config
    from kgroup.spark.source.librdkafka_sink import topic_partition_count

    config = producer_config(options.client_dict())
    client = Producer(config)
    try:
        topic_partition_count(client, options.topic, options.bootstrap_servers, timeout_s, config)
    finally:
        client.flush(0)


def _log_commit(messages: list[Any], what: str) -> None:
    total = sum(c for m in messages if isinstance(m, SinkCommit) for _t, _p, c in m.counts)
    LOG.info("kgroup sink: %s wrote %d records", what, total)


class _SinkWriting:
    """What the batch and the streaming writer share: the sink's options and columns, and each task's
    write of its Arrow batches (:func:`_write`)."""

    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return _write(self.options, self.columns, iterator)


class KgroupBatchWriter(_SinkWriting, DataSourceArrowWriter):
    def commit(self, messages: list[Any]) -> None:
        _log_commit(messages, "batch")


class KgroupStreamWriter(_SinkWriting, DataSourceStreamArrowWriter):
    def commit(self, messages: list[Any], batchId: int) -> None:
        _log_commit(messages, f"micro-batch {batchId}")
