"""``spark.read.format("kgroup")``: Kafka records read by offset range, like Spark's Kafka source.

:class:`KgroupDataSource` is the data source (PySpark's Python Data Source API) registered as
``kgroup`` by :func:`register`: batch reads (:class:`KgroupBatchReader`, here), streaming reads
(:mod:`kgroup.spark.source_stream`) and the sink (:mod:`kgroup.spark.sink`). Options and schema are
those of Spark's Kafka source (:mod:`kgroup.spark.options`); the driver plans offset ranges with
confluent-kafka's admin client, and each Spark task fetches one range with a librdkafka consumer
(``assign`` + seek, no consumer group). See ``docs/spark.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kgroup.spark.kafka_io import OffsetLookup, fetch_range
from kgroup.spark.options import (
    SourceOptions,
    check_read_options_early,
    parse_sink_options,
    parse_source_options,
)
from kgroup.spark.ranges import OffsetRange, data_loss_reporter, resolve_offsets, split_ranges

__all__ = ["KAFKA_SCHEMA", "KgroupDataSource", "RangePartition", "register"]

LOG = logging.getLogger("kgroup.spark")

#: Spark's Kafka source schema (``KafkaRecordToRowConverter.kafkaSchema``), every column nullable.
KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int"
)
HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"


class RangePartition(InputPartition):
    """One Spark task's work: the records ``[from, until)`` of one Kafka partition."""

    def __init__(self, piece: OffsetRange) -> None:
        super().__init__(piece)
        self.piece = piece


def read_piece(options: SourceOptions, partition: InputPartition) -> Iterator[Any]:
    """An executor task: the range's records as Arrow record batches."""
    assert isinstance(partition, RangePartition)
    report = data_loss_reporter(options.fail_on_data_loss, LOG.warning)
    yield from fetch_range(options, partition.piece, report)


class KgroupBatchReader(DataSourceReader):
    """A batch read: ``startingOffsets`` to ``endingOffsets``, planned once on the driver."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        assert options.ending is not None
        lookup = OffsetLookup(options)
        report = data_loss_reporter(options.fail_on_data_loss, LOG.warning)
        tps = lookup.subscribed_partitions(options.subscription, options.fail_on_data_loss)
        earliest = lookup.offsets(tps, "earliest")
        latest = lookup.offsets(tps, "latest")
        start = resolve_offsets("startingOffsets", options.starting, tps, earliest, latest, report)
        end = resolve_offsets("endingOffsets", options.ending, tps, earliest, latest, report)
        ranges = []
        for tp in tps:
            if end[tp] < start[tp]:
                from kgroup.model import KgroupError

                raise KgroupError(
                    f"startingOffsets: {tp[0]}-{tp[1]} starts at {start[tp]}, after its end {end[tp]}; "
                    "give a start at or before the end"
                )
            ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
        pieces = split_ranges(ranges, options.min_partitions)
        return [RangePartition(p) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_piece(self.options, partition)


class KgroupDataSource(DataSource):
    """The ``kgroup`` format: Spark's Kafka source and sink, on confluent-kafka in Python."""

    @classmethod
    def name(cls) -> str:
        return "kgroup"

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", "false")).strip().lower() == "true"

    def schema(self) -> str:
        # Called by load(): a read's bad options fail here, while the DataFrame is being defined.
        check_read_options_early(self.options)
        return KAFKA_SCHEMA + (", " + HEADERS_COLUMN if self._include_headers() else "")

    def reader(self, schema: Any) -> DataSourceReader:
        return KgroupBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: Any) -> Any:
        options = parse_source_options(self.options, streaming=True)
        if options.consume == "group":
            from kgroup.spark.group_source import KgroupGroupStreamReader

            return KgroupGroupStreamReader(options)
        from kgroup.spark.source_stream import KgroupStreamReader

        return KgroupStreamReader(options)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from kgroup.spark.sink import KgroupBatchWriter, check_sink_schema

        if overwrite:
            from kgroup.model import KgroupError

            raise KgroupError(
                "mode: overwrite is not allowed for Kafka (records can only be appended); use mode('append')"
            )
        options = parse_sink_options(self.options)
        return KgroupBatchWriter(options, check_sink_schema(schema, options))

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from kgroup.spark.sink import KgroupStreamWriter, check_sink_schema

        options = parse_sink_options(self.options)
        return KgroupStreamWriter(options, check_sink_schema(schema, options))


_COMMITTERS: dict[int, Any] = {}


def register(spark: Any) -> None:
    """Register the ``kgroup`` format on a SparkSession (``spark.read.format("kgroup")`` …), and the
    listener that commits a finished ``consume=group`` batch to its group (once per session)."""
    spark.dataSource.register(KgroupDataSource)
    key = id(spark)
    if key not in _COMMITTERS:
        from kgroup.spark.group_source import GroupOffsetCommitter

        committer = GroupOffsetCommitter()
        spark.streams.addListener(committer)
        _COMMITTERS[key] = committer
