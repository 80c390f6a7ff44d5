"""``spark.read.format("kgroup")``: a batch read, ``startingOffsets`` to ``endingOffsets``.

The driver plans the offset ranges once with confluent-kafka's admin client; each Spark task
fetches one range (:mod:`kgroup.spark.source.read_task`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from kgroup.model import KgroupError
from kgroup.spark.source.kafka_io import OffsetLookup
from kgroup.spark.source.options import SourceOptions
from kgroup.spark.source.ranges import OffsetRange, data_loss_reporter, resolve_offsets, split_ranges
from kgroup.spark.source.read_task import RangePartition, read_piece

__all__ = ["KgroupBatchReader"]

LOG = logging.getLogger("kgroup.spark")


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
                raise KgroupError(
                    f"startingOffsets: {tp} starts at {start[tp]}, after its end {end[tp]}; "
                    "give a start at or before the end"
                )
            ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
        pieces = split_ranges(ranges, options.min_partitions)
        return [RangePartition(p) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_piece(self.options, partition)
