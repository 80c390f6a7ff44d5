"""Offset planning of the ``kgroup`` data source, as Spark's Kafka source plans it. Pure: no client.

* :func:`rate_limit` — ``maxOffsetsPerTrigger`` shared among partitions in proportion to their
  backlog (``KafkaMicroBatchStream.rateLimit``: a share below one record is rounded up so a small
  partition is never starved, a larger share rounded down);
* :func:`split_ranges` — ``minPartitions``: one Spark task per partition range, or, when there are
  fewer ranges than ``minPartitions``, each range cut into pieces in proportion to its size
  (``KafkaOffsetRangeCalculator``, the classic algorithm: ``round(size / total * minPartitions)``
  pieces, at least one, the last piece taking the remainder);
* :func:`resolve_offsets` — ``earliest`` / ``latest`` / JSON offsets (-2, -1) against the broker's
  earliest and latest offsets, reporting data loss as Spark's ``reportDataLoss`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kgroup.model import KgroupError, TopicPartition
from kgroup.spark.source.offsets import EARLIEST, LATEST, partition_list
from kgroup.spark.source.options import OffsetSpec

__all__ = [
    "DataLossReporter",
    "OffsetRange",
    "data_loss_reporter",
    "plan_ranges",
    "rate_limit",
    "resolve_offsets",
    "split_ranges",
]

_LONG_MAX = 2**63 - 1

#: Called with a message when records are missing; raises or only warns (``failOnDataLoss``).
DataLossReporter = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records ``[from_offset, until_offset)`` of one partition: one Spark task reads them."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def data_loss_reporter(fail_on_data_loss: bool, warn: Callable[[str], None]) -> DataLossReporter:
    """Spark's ``reportDataLoss``: an error when ``failOnDataLoss`` is true, else a warning."""

    def report(message: str) -> None:
        if fail_on_data_loss:
            raise KgroupError(
                f"failOnDataLoss: {message}. Some data may have been lost (aged out of Kafka, or the topic "
                "was deleted); set the option failOnDataLoss to false to skip such data and go on"
            )
        warn(message + "; some data may have been lost (failOnDataLoss is false: going on)")

    return report


def rate_limit(
    limit: int,
    start: Mapping[TopicPartition, int],
    until: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """The end offsets of a micro-batch reading at most about ``limit`` records from ``start``.

    ``start`` holds every partition of ``until`` (new partitions at their earliest offset).
    """
    sizes = {tp: end - start[tp] for tp, end in until.items() if tp in start and end - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    out: dict[TopicPartition, int] = {}
    for tp, end in until.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        begin = start[tp]
        prorate = limit * (size / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        offset = _LONG_MAX if share > _LONG_MAX - begin else begin + share
        out[tp] = min(end, offset)
    return out


def _scala_round(value: float) -> int:
    """Scala's ``math.round`` on a double: half rounds up (Python's ``round`` rounds half to even)."""
    return math.floor(value + 0.5)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """One task per non-empty range, or the ranges cut into about ``min_partitions`` pieces."""
    nonempty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)
    out: list[OffsetRange] = []
    for r in nonempty:
        parts = max(_scala_round(r.size / total * min_partitions), 1)
        remaining = r.size
        begin = r.from_offset
        for part in range(parts):
            this_part = remaining // (parts - part)  # the last piece takes the remainder
            remaining -= this_part
            end = min(begin + this_part, r.until_offset)
            out.append(OffsetRange(r.topic, r.partition, begin, end))
            begin = end
    return [r for r in out if r.size > 0]


def resolve_offsets(
    name: str,
    spec: OffsetSpec,
    partitions: list[TopicPartition],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    report: DataLossReporter,
) -> dict[TopicPartition, int]:
    """``spec`` (the option ``name``) as one offset per partition of ``partitions``.

    JSON offsets must name every partition (Spark asserts this too); an offset before the earliest
    kept one is data loss (reported; the read then starts at the earliest), an offset past the latest
    one is refused.
    """
    if spec.kind == "earliest":
        return {tp: earliest[tp] for tp in partitions}
    if spec.kind == "latest":
        return {tp: latest[tp] for tp in partitions}
    given = spec.as_dict()
    if set(given) != set(partitions):
        raise KgroupError(
            f"{name}: JSON offsets must name every partition read (named {partition_list(given)}, "
            f"reading {partition_list(partitions)}); use -2 for earliest, -1 for latest"
        )
    out: dict[TopicPartition, int] = {}
    for tp in partitions:
        offset = given[tp]
        if offset == EARLIEST:
            out[tp] = earliest[tp]
        elif offset == LATEST:
            out[tp] = latest[tp]
        elif offset < earliest[tp]:
            report(f"{name} for {tp} was {offset} but the earliest offset kept is {earliest[tp]}")
            out[tp] = earliest[tp]
        elif offset > latest[tp]:
            raise KgroupError(
                f"{name}: offset {offset} of {tp} is out of range (the partition holds offsets "
                f"{earliest[tp]} to {latest[tp]}); give an offset in that range, -2 or -1"
            )
        else:
            out[tp] = offset
    return out


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    new_partition_start: Mapping[TopicPartition, int],
    report: DataLossReporter,
) -> list[OffsetRange]:
    """The ranges between two offset maps (``KafkaMicroBatchStream.planInputPartitions``).

    A partition of ``end`` missing from ``start`` is new: it starts at ``new_partition_start`` (its
    earliest offset; not 0 is data loss). A partition of ``start`` missing from ``end`` is gone, and
    an end before its start means the partition was reset: both data loss.
    """
    gone = sorted(set(start) - set(end))
    if gone:
        report(f"partitions {partition_list(gone)} are gone")
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        if tp in start:
            begin = start[tp]
        else:
            begin = new_partition_start[tp]
            if begin != 0:
                report(f"added partition {tp} starts from {begin} instead of 0")
        until = end[tp]
        if until < begin:
            report(f"partition {tp}'s offset was changed from {begin} to {until}")
            continue
        ranges.append(OffsetRange(tp.topic, tp.partition, begin, until))
    return ranges
