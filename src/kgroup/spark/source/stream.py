"""``spark.readStream.format("kgroup")``: micro-batches of offset ranges, as Spark's Kafka source.

The offsets of a micro-batch are a JSON object ``{"topic": {"partition": offset}}`` — the form Spark's
Kafka source keeps in its checkpoint — so a query restarted from its checkpoint resumes exactly
where it stopped. Planning (:class:`KgroupStreamReader`) runs on the driver:

* ``initialOffset`` — ``startingOffsets`` (default ``latest``) resolved once, at the query's start;
* ``latestOffset(start, limit)`` — the latest offsets now, new partitions from their earliest
  offset, bounded by admission control: ``maxOffsetsPerTrigger`` becomes the default
  ``ReadMaxRows`` limit and is shared among partitions as Spark shares it; ``ReadAllAvailable``
  (which Spark passes for ``Trigger.AvailableNow`` / ``once``) reads everything;
* ``prepareForTriggerAvailableNow`` — records the latest offsets at the query's start; no batch then
  reads past them, so an ``AvailableNow`` query ends;
* ``partitions(start, end)`` — one task per offset range (split by ``minPartitions``).

The records are fetched in the executors exactly as a batch read fetches them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kgroup.model import KgroupError, TopicPartition
from kgroup.spark.source.kafka_io import OffsetLookup
from kgroup.spark.source.offsets import offsets_from_json, offsets_to_json
from kgroup.spark.source.options import SourceOptions
from kgroup.spark.source.ranges import (
    data_loss_reporter,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from kgroup.spark.source.read_task import RangePartition, read_piece

__all__ = ["KgroupStreamReader"]

LOG = logging.getLogger("kgroup.spark")


def _from_json(offset: dict[str, Any]) -> dict[TopicPartition, int]:
    import json

    return offsets_from_json("offset", json.dumps(offset))


class KgroupStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The driver side of a streaming read (partition mode: no consumer group)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._lookup: OffsetLookup | None = None
        self._available_now: dict[TopicPartition, int] | None = None
        self._report = data_loss_reporter(options.fail_on_data_loss, LOG.warning)

    def __getstate__(self) -> dict[str, Any]:
        # The admin client stays on the driver; executors only need the options.
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._lookup = None
        self._available_now = None
        self._report = data_loss_reporter(self.options.fail_on_data_loss, LOG.warning)

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.options)
        return self._lookup

    def _current(self) -> list[TopicPartition]:
        return self.lookup.subscribed_partitions(self.options.subscription, self.options.fail_on_data_loss)

    def initialOffset(self) -> dict[str, Any]:
        tps = self._current()
        earliest = self.lookup.offsets(tps, "earliest")
        latest = self.lookup.offsets(tps, "latest")
        start = resolve_offsets("startingOffsets", self.options.starting, tps, earliest, latest, self._report)
        return offsets_to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self._current()
        self._available_now = self.lookup.offsets(tps, "latest")

    def _latest(self) -> dict[TopicPartition, int]:
        if self._available_now is not None:
            return dict(self._available_now)
        tps = self._current()
        return self.lookup.offsets(tps, "latest")

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = _from_json(start)
        until = self._latest()
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in until if tp not in begin]
            from_new = self.lookup.offsets(new, "earliest")
            until = rate_limit(limit.max_rows, {**from_new, **begin}, until)
        elif not isinstance(limit, ReadAllAvailable):
            raise KgroupError(f"read limit: {limit!r} is not supported by the kgroup source")
        return offsets_to_json(until)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest())

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = _from_json(start)
        until = _from_json(end)
        new = [tp for tp in until if tp not in begin]
        new_start = self.lookup.offsets(new, "earliest")
        ranges = plan_ranges(begin, until, new_start, self._report)
        return [RangePartition(p) for p in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_piece(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        # Partition mode keeps no state outside Spark's checkpoint: nothing to commit.
        return None
