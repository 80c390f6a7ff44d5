"""One Spark task's offset range, read in bulk: raw Fetch answers to Arrow batches.

:func:`read_range_in_bulk` is what a reading task runs on a PLAINTEXT connection
(:func:`can_read_in_bulk`): :class:`~kgroup.spark.source.partition_fetcher.PartitionFetcher` fetches
the partition's record batches, :func:`~kgroup.spark.source.record_columns.decode_fetched` turns each
answer into one Arrow record batch. The range's semantics are those of the confluent-kafka path
(:func:`kgroup.spark.source.kafka_io.fetch_range`): exactly ``[from, until)``, no progress for
``kafkaConsumer.pollTimeoutMs`` is data loss, an offset out of range (deleted by retention since
planning) is data loss and the read goes on from the earliest offset kept.

The ``kafka.*`` options it takes: ``isolation.level``, ``max.partition.fetch.bytes`` (default here
8 MiB: fewer round trips than Kafka's 1 MiB, for the same records), ``fetch.max.wait.ms`` /
``fetch.wait.max.ms`` and ``client.id``; the others concern librdkafka's own machinery.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from kgroup.model import ErrorCode, KgroupError
from kgroup.spark.source.options import SourceOptions
from kgroup.spark.source.partition_fetcher import PartitionFetcher, RetriableFetchError, wait
from kgroup.spark.source.ranges import DataLossReporter, OffsetRange
from kgroup.spark.source.record_columns import AbortedTransaction, decode_fetched

__all__ = ["can_read_in_bulk", "read_range_in_bulk"]

DEFAULT_PARTITION_MAX_BYTES = 8 << 20
_RETRY_PAUSE_S = 0.1


def can_read_in_bulk(client_config: Mapping[str, str]) -> bool:
    """Whether the bulk path can connect as the ``kafka.*`` options ask: PLAINTEXT only."""
    protocol = client_config.get("security.protocol", "plaintext").strip().lower()
    return protocol == "plaintext"


def _int_option(config: Mapping[str, str], names: tuple[str, ...], default: int) -> int:
    for name in names:
        if name in config:
            try:
                return int(config[name])
            except ValueError:
                raise KgroupError(f"kafka.{name}: {config[name]!r} is not a whole number; give one") from None
    return default


def read_range_in_bulk(
    options: SourceOptions, piece: OffsetRange, report: DataLossReporter, batch_rows: int
) -> Iterator[Any]:
    """The records ``[from, until)`` of one partition, as Arrow record batches of at most ``batch_rows``."""
    if piece.size <= 0:
        return
    config = options.client_dict()
    read_committed = config.get("isolation.level", "read_uncommitted").strip().lower() == "read_committed"
    fetcher = PartitionFetcher(
        options.bootstrap_servers,
        piece.topic,
        piece.partition,
        timeout_s=options.api_timeout_ms / 1000,
        read_committed=read_committed,
        max_wait_ms=_int_option(config, ("fetch.max.wait.ms", "fetch.wait.max.ms"), 500),
        partition_max_bytes=_int_option(config, ("max.partition.fetch.bytes",), DEFAULT_PARTITION_MAX_BYTES),
        client_id=config.get("client.id", "kgroup-spark"),
    )
    label = f"{piece.topic}-{piece.partition}"
    until = piece.until_offset
    next_offset = piece.from_offset
    last_progress = time.monotonic()
    poll_timeout_s = options.poll_timeout_ms / 1000
    problem = ""
    try:
        while next_offset < until:
            if time.monotonic() - last_progress > poll_timeout_s:
                report(
                    f"could not fetch offsets {next_offset} to {until} of {label} within "
                    f"kafkaConsumer.pollTimeoutMs ({options.poll_timeout_ms} ms)"
                    + (f" ({problem})" if problem else "")
                )
                return  # failOnDataLoss is false: go on without them
            try:
                answer = fetcher.fetch(next_offset)
                if answer.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    report(f"offset {next_offset} of {label} is out of range (Broker: Offset out of range)")
                    earliest = fetcher.earliest_offset()
                    next_offset = min(max(earliest, next_offset), until)
                    last_progress = time.monotonic()
                    continue
            except RetriableFetchError as exc:
                problem = str(exc)
                wait(_RETRY_PAUSE_S)
                continue
            if answer.error != ErrorCode.NONE:
                raise KgroupError(
                    f"kafka.bootstrap.servers: fetching {label} failed ({answer.error.name}); "
                    "check the broker and the kafka.* options"
                )
            fetched = decode_fetched(
                answer.records,
                topic=piece.topic,
                partition=piece.partition,
                fetch_offset=next_offset,
                until_offset=until,
                read_committed=read_committed,
                aborted=[AbortedTransaction(pid, first) for pid, first in answer.aborted],
                include_headers=options.include_headers,
            )
            if fetched.next_offset > next_offset:
                next_offset = fetched.next_offset
                last_progress = time.monotonic()
            if fetched.batch is not None:
                batch = fetched.batch
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
    finally:
        fetcher.close()
