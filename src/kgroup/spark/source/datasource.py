"""``format("kgroup")``: the data source, as PySpark's Python Data Source API lays one out.

:class:`KgroupDataSource` is registered as ``kgroup`` by :func:`register` and hands Spark its
readers and writers: batch reads (:mod:`kgroup.spark.source.batch`), streaming reads
(:mod:`kgroup.spark.source.stream`; ``consume=group``: :mod:`kgroup.spark.source.group_stream`)
and the sink (:mod:`kgroup.spark.source.writer`). Options and schema are those of Spark's Kafka
source (:mod:`kgroup.spark.source.options`). See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader

from kgroup.model import KgroupError
from kgroup.spark.source.options import (
    ReadKind,
    check_read_options_early,
    parse_sink_options,
    parse_source_options,
)

# The readers and writers are imported where Spark asks for one: PySpark unpickles this class in each
# of its Python workers (the lookup, the schema, the read and write planning, every task), and a
# worker that plans a read has no use for the sink's modules, nor a writer for the reader's.

__all__ = ["HEADERS_COLUMN", "KAFKA_SCHEMA", "KgroupDataSource", "register", "session_key"]

#: Spark's Kafka source schema (``KafkaRecordToRowConverter.kafkaSchema``), every column nullable.
KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int"
)
HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"


class KgroupDataSource(DataSource):
    """The ``kgroup`` format: Spark's Kafka source and sink in Python (Kafka's wire on PLAINTEXT,
    confluent-kafka otherwise)."""

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
        from kgroup.spark.source.batch import KgroupBatchReader

        return KgroupBatchReader(parse_source_options(self.options, ReadKind.BATCH))

    def streamReader(self, schema: Any) -> Any:
        options = parse_source_options(self.options, ReadKind.STREAM)
        if options.consume == "group":
            from kgroup.spark.source.group_stream import KgroupGroupStreamReader

            return KgroupGroupStreamReader(options)
        from kgroup.spark.source.stream import KgroupStreamReader

        return KgroupStreamReader(options)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        if overwrite:
            raise KgroupError(
                "mode: overwrite is not allowed for Kafka (records can only be appended); use mode('append')"
            )
        from kgroup.spark.source.writer import KgroupBatchWriter, check_sink_client, check_sink_schema

        options = parse_sink_options(self.options)
        columns = check_sink_schema(schema, options)
        check_sink_client(options)
        return KgroupBatchWriter(options, columns)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from kgroup.spark.source.writer import KgroupStreamWriter, check_sink_client, check_sink_schema

        options = parse_sink_options(self.options)
        columns = check_sink_schema(schema, options)
        check_sink_client(options)
        return KgroupStreamWriter(options, columns)


#: The group-commit listener registered on each session, keyed by :func:`session_key`.
_COMMITTERS: dict[tuple[str, str], Any] = {}


def session_key(spark: Any) -> tuple[str, str]:
    """Which session this is, as no later session can claim: the Spark application's id and the
    session's own UUID (the JVM's ``SparkSession.sessionUUID``; Spark Connect: its session id).
    ``id(spark)`` would not do: a new session's Python object can take a stopped one's address."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is not None:
        return (str(spark.sparkContext.applicationId), str(jsession.sessionUUID()))
    return ("connect", str(spark.session_id))


def register(spark: Any) -> None:
    """Register the ``kgroup`` format on a SparkSession (``spark.read.format("kgroup")`` …), and the
    listener that commits a finished ``consume=group`` batch to its group (once per session)."""
    try:
        spark.dataSource.register(KgroupDataSource)
    except Exception as exc:
        # a session made by newSession() already has its parent's Python data sources, and Spark
        # refuses to register one of them again (DATA_SOURCE_ALREADY_EXISTS); it is there: go on
        if getattr(exc, "getCondition", lambda: None)() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
    key = session_key(spark)
    if key not in _COMMITTERS:
        from kgroup.spark.source.group_stream import GroupOffsetCommitter

        committer = GroupOffsetCommitter()
        spark.streams.addListener(committer)
        _COMMITTERS[key] = committer
