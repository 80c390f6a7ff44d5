"""The Kafka client side of the ``kgroup`` data source: confluent-kafka (librdkafka), used both on
the driver (metadata and offsets, to plan) and in the executors (fetching exact offset ranges,
producing).

* :class:`OffsetLookup` — the driver's view: topics, partitions, earliest and latest offsets
  (ListOffsets through the admin client, at the configured isolation level);
* :func:`fetch_range` — one executor task: the range's records as Arrow record batches in the
  source's schema. On a PLAINTEXT connection they are fetched raw and decoded in bulk
  (:mod:`kgroup.spark.source.bulk_read`); otherwise librdkafka fetches them (``assign`` + seek to the
  range's first offset, fetch up to, not including, its end), a Python object per record;
* :func:`consumer_config` / :func:`producer_config` — what the clients are given.

Every wait is bounded (``kafka.default.api.timeout.ms`` for the driver's requests,
``kafkaConsumer.pollTimeoutMs`` for a fetch that makes no progress).
"""

from __future__ import annotations

import bisect
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from kgroup.model import KgroupError, TopicPartition
from kgroup.spark.source.bulk_read import can_read_in_bulk, read_range_in_bulk
from kgroup.spark.source.options import SourceOptions, Subscription, check_client_config
from kgroup.spark.source.ranges import DataLossReporter, OffsetRange
from kgroup.spark.source.record_columns import arrow_schema

__all__ = [
    "ARROW_BATCH_ROWS",
    "OffsetLookup",
    "arrow_schema",
    "consumer_config",
    "fetch_range",
    "fetch_range_with_librdkafka",
    "producer_config",
]

LOG = logging.getLogger("kgroup.spark")
# librdkafka's own log lines (a refused connection is logged at every retry): kept out of the
# task's stderr; what matters reaches the user as an error from the client's calls.
CLIENT_LOG = logging.getLogger("kgroup.spark.librdkafka")
CLIENT_LOG.addHandler(logging.NullHandler())
CLIENT_LOG.propagate = False

#: Rows per Arrow batch handed to Spark by a reading task.
ARROW_BATCH_ROWS = 10_000

# librdkafka's timestamp types -> Kafka's TimestampType ids (the column Spark shows):
# not available -> -1 (NO_TIMESTAMP_TYPE), create time -> 0, log append time -> 1.
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


def consumer_config(options: SourceOptions, role: str) -> dict[str, Any]:
    """librdkafka consumer settings for one task or the driver: no group is ever joined (``assign``
    only, nothing committed); offsets out of range are errors, not silent resets; uncommitted
    records are read as Kafka's Java consumer does by default (``isolation.level``)."""
    config = {
        "group.id": f"kgroup-spark-{uuid.uuid4()}-{role}",
        "isolation.level": "read_uncommitted",
        "enable.partition.eof": "true",
        "logger": CLIENT_LOG,
        **options.client_dict(),
    }
    config.update(
        {
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "auto.offset.reset": "error",
        }
    )
    return config


def producer_config(client_config: Mapping[str, str]) -> dict[str, Any]:
    return {"logger": CLIENT_LOG, **client_config}


class OffsetLookup:
    """The driver's questions to the cluster: which partitions, which offsets."""

    def __init__(self, options: SourceOptions) -> None:
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient

        self._options = options
        self._timeout_s = options.api_timeout_ms / 1000
        config = consumer_config(options, "driver")
        check_client_config(config, Consumer)  # librdkafka names a bad kafka.* option at once
        admin_config: dict[str, Any] = dict(options.client_dict())
        admin_config["logger"] = CLIENT_LOG
        self._isolation = config.get("isolation.level", "read_uncommitted")
        self._admin = AdminClient(admin_config)

    def _unreachable(self, exc: BaseException) -> KgroupError:
        return KgroupError(
            f"kafka.bootstrap.servers: no broker answered at {self._options.bootstrap_servers} within "
            f"{self._timeout_s:g} s ({exc}); check the address and that the broker is running "
            "(kafka.default.api.timeout.ms sets the wait)"
        )

    def topic_partitions(self) -> dict[str, int]:
        """Every topic of the cluster with its partition count."""
        try:
            metadata = self._admin.list_topics(timeout=self._timeout_s)
        except Exception as exc:
            raise self._unreachable(exc) from None
        return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}

    def subscribed_partitions(
        self, subscription: Subscription, fail_on_data_loss: bool
    ) -> list[TopicPartition]:
        """The partitions a subscription reads now. A named topic or partition that does not exist is
        an error when ``failOnDataLoss`` is true (it may have been deleted), else skipped with a warning."""
        topics = self.topic_partitions()
        if subscription.kind == "subscribePattern":
            return sorted(
                TopicPartition(t, p) for t, n in topics.items() if subscription.matches(t) for p in range(n)
            )
        if subscription.kind == "subscribe":
            missing = [t for t in subscription.topics if t not in topics]
            wanted = [
                TopicPartition(t, p) for t in subscription.topics if t in topics for p in range(topics[t])
            ]
            option = "subscribe"
        else:
            missing = sorted({t for t, p in subscription.partitions if p >= topics.get(t, 0)})
            wanted = [TopicPartition(t, p) for t, p in subscription.partitions if p < topics.get(t, 0)]
            option = "assign"
        if missing:
            message = (
                f"{option}: topic(s) {missing} not found on {self._options.bootstrap_servers} "
                f"(or the assigned partition does not exist)"
            )
            if fail_on_data_loss:
                raise KgroupError(
                    message + "; create the topic, correct the name, or set failOnDataLoss to false "
                    "to read only the topics that exist"
                )
            LOG.warning("%s; failOnDataLoss is false: reading the others", message)
        return sorted(wanted)

    def offsets(self, partitions: list[TopicPartition], which: str) -> dict[TopicPartition, int]:
        """The ``earliest`` or ``latest`` offset of each partition (ListOffsets)."""
        if not partitions:
            return {}
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as KafkaTP
        from confluent_kafka.admin import OffsetSpec as KafkaOffsetSpec  # type: ignore[attr-defined]

        spec = KafkaOffsetSpec.earliest() if which == "earliest" else KafkaOffsetSpec.latest()
        isolation = (
            IsolationLevel.READ_COMMITTED
            if self._isolation == "read_committed"
            else IsolationLevel.READ_UNCOMMITTED
        )
        request = {KafkaTP(t, p): spec for t, p in partitions}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=isolation, request_timeout=self._timeout_s
            )
            return {
                TopicPartition(tp.topic, tp.partition): future.result().offset
                for tp, future in futures.items()
            }
        except KgroupError:
            raise
        except Exception as exc:
            raise self._unreachable(exc) from None


class _Columns:
    """Column lists of the records fetched since the last Arrow batch (filled a fetched list at a time:
    one list comprehension per column is much cheaper than a Python call per record)."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []

    def extend(self, messages: list[Any], offsets: list[int]) -> None:
        self.keys += [m.key() for m in messages]
        self.values += [m.value() for m in messages]
        self.offsets += offsets
        stamps = [m.timestamp() for m in messages]
        self.timestamps += [ms * 1000 for _kind, ms in stamps]
        self.types += [_TIMESTAMP_TYPE.get(kind, -1) for kind, _ms in stamps]
        if self.include_headers:
            self.headers += [
                [{"key": k, "value": v} for k, v in headers] if headers else None
                for headers in (m.headers() for m in messages)
            ]

    def __len__(self) -> int:
        return len(self.offsets)

    def batch(self, schema: Any, topic: str, partition: int) -> Any:
        import pyarrow as pa

        n = len(self.offsets)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.types, pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, schema.field("headers").type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self.keys, self.values, self.offsets, self.timestamps, self.types, self.headers = (
            [],
            [],
            [],
            [],
            [],
            [],
        )
        return batch


def fetch_range(
    options: SourceOptions, piece: OffsetRange, report: DataLossReporter, batch_rows: int = ARROW_BATCH_ROWS
) -> Iterator[Any]:
    """The records ``[from, until)`` of one partition, as Arrow record batches.

    The fetch ends at the first record at or past ``until`` or when the partition's end (EOF) is at
    or past it (the last offsets of a range may be transaction markers, never delivered). No progress
    for ``kafkaConsumer.pollTimeoutMs`` means the records are gone: data loss. An offset out of range
    (deleted by retention since planning) is data loss too; without ``failOnDataLoss`` the fetch goes
    on from the earliest offset kept.
    """
    if can_read_in_bulk(options.client_dict()):
        yield from read_range_in_bulk(options, piece, report, batch_rows)
    else:
        yield from fetch_range_with_librdkafka(options, piece, report, batch_rows)


def fetch_range_with_librdkafka(
    options: SourceOptions, piece: OffsetRange, report: DataLossReporter, batch_rows: int = ARROW_BATCH_ROWS
) -> Iterator[Any]:
    """:func:`fetch_range` through confluent-kafka's consumer (every security protocol librdkafka has)."""
    from confluent_kafka import Consumer

    if piece.size <= 0:
        return
    schema = arrow_schema(options.include_headers)
    columns = _Columns(options.include_headers)
    consumer = Consumer(consumer_config(options, "executor"))
    fetch = _RangeFetch(consumer, options, piece, report)
    try:
        while fetch.next_offset < piece.until_offset:
            records, offsets = fetch.poll(batch_rows)
            if records:
                columns.extend(records, offsets)
            if len(columns) >= batch_rows:
                yield columns.batch(schema, piece.topic, piece.partition)
        if len(columns):
            yield columns.batch(schema, piece.topic, piece.partition)
    finally:
        consumer.close()


class _RangeFetch:
    """The state of one range's fetch: the next offset wanted, and when progress was last made."""

    def __init__(
        self, consumer: Any, options: SourceOptions, piece: OffsetRange, report: DataLossReporter
    ) -> None:
        from confluent_kafka import TopicPartition as KafkaTP

        self.consumer = consumer
        self.options = options
        self.piece = piece
        self.report = report
        self.label = f"{piece.topic}-{piece.partition}"
        self.poll_timeout_s = options.poll_timeout_ms / 1000
        self.next_offset = piece.from_offset
        self.last_progress = time.monotonic()
        consumer.assign([KafkaTP(piece.topic, piece.partition, piece.from_offset)])

    def poll(self, max_records: int) -> tuple[list[Any], list[int]]:
        """The next records of the range (possibly none) and their offsets; moves ``next_offset``."""
        until = self.piece.until_offset
        messages = self.consumer.consume(num_messages=max_records, timeout=0.5)
        records = [m for m in messages if m.error() is None]
        offsets: list[int] = [m.offset() for m in records]
        if offsets:
            self.last_progress = time.monotonic()
            if offsets[-1] >= until:  # offsets rise within a partition: cut at the range's end
                cut = bisect.bisect_left(offsets, until)
                records, offsets = records[:cut], offsets[:cut]
                self.next_offset = until
            else:
                self.next_offset = offsets[-1] + 1
        if len(records) != len(messages):
            for message in messages:
                if message.error() is not None and self.next_offset < until:
                    self._on_error(message)
        if self.next_offset < until and time.monotonic() - self.last_progress > self.poll_timeout_s:
            self.report(
                f"could not fetch offsets {self.next_offset} to {until} of {self.label} within "
                f"kafkaConsumer.pollTimeoutMs ({self.options.poll_timeout_ms} ms)"
            )
            self.next_offset = until  # failOnDataLoss is false: go on without them
        return records, offsets

    def _on_error(self, message: Any) -> None:
        from confluent_kafka import KafkaError
        from confluent_kafka import TopicPartition as KafkaTP

        error = message.error()
        until = self.piece.until_offset
        raw_offset = message.offset()
        at = -1 if raw_offset is None else raw_offset
        if error.code() == KafkaError._PARTITION_EOF:
            if at >= until:  # the partition ends at or past the range's end: nothing more will come
                self.next_offset = until
            return
        if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            self.report(f"offset {self.next_offset} of {self.label} is out of range ({error.str()})")
            tp = KafkaTP(self.piece.topic, self.piece.partition)
            marks = self.consumer.get_watermark_offsets(tp, timeout=self.poll_timeout_s)
            low = self.next_offset if marks is None else marks[0]
            self.next_offset = min(max(low, self.next_offset), until)
            if self.next_offset < until:
                self.consumer.assign([KafkaTP(self.piece.topic, self.piece.partition, self.next_offset)])
            return
        if error.fatal() or not error.retriable():
            raise KgroupError(
                f"kafka.bootstrap.servers: fetching {self.label} failed ({error.str()}); "
                "check the broker and the kafka.* options"
            )
