"""One Spark task of a ``kgroup`` read: a partition's offset range, fetched in an executor.

Shared by the batch reader, the stream reader and the group stream reader: each plans
:class:`RangePartition` pieces on the driver, and :func:`read_piece` fetches one in a task.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

from kgroup.spark.source.kafka_io import fetch_range
from kgroup.spark.source.options import SourceOptions
from kgroup.spark.source.ranges import OffsetRange, data_loss_reporter
from kgroup.spark.worker_gc import task_started

__all__ = ["RangePartition", "read_piece"]

LOG = logging.getLogger("kgroup.spark")


class RangePartition(InputPartition):
    """One Spark task's work: the records ``[from, until)`` of one Kafka partition."""

    def __init__(self, piece: OffsetRange) -> None:
        super().__init__(piece)
        self.piece = piece


def read_piece(options: SourceOptions, partition: InputPartition) -> Iterator[Any]:
    """An executor task: the range's records as Arrow record batches.

    A batch read with nothing to read (an empty topic, every range empty) plans no piece; PySpark then
    runs one task on its placeholder ``InputPartition(None)``, which reads nothing.
    """
    if not isinstance(partition, RangePartition):
        if partition.value is None:
            return
        raise TypeError(f"a kgroup read task got {type(partition).__name__}, not a RangePartition")
    task_started()
    report = data_loss_reporter(options.fail_on_data_loss, LOG.warning)
    yield from fetch_range(options, partition.piece, report)
