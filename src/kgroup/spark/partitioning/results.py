"""What a partitioning job found, as plain frozen values (no Spark objects: safe to keep, test, render).

Produced by :func:`kgroup.spark.partitioning.job.summarize_partitions`; printed by
``kgroup partition --input``, rendered into the demo's report, and serialised by ``to_json()`` in the
shape documented in ``docs/spark.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "CountSummary",
    "HotPartition",
    "KeyCount",
    "MovedShare",
    "NullProgress",
    "PartitionSummary",
    "Progress",
]


@dataclass(frozen=True, slots=True)
class KeyCount:
    """A key and its number of records. Binary keys are shown as hex (``key_type`` says which)."""

    key: str
    records: int


@dataclass(frozen=True, slots=True)
class HotPartition:
    """One of the most loaded partitions, with its most frequent keys."""

    partition: int
    records: int
    top_keys: tuple[KeyCount, ...]


@dataclass(frozen=True, slots=True)
class CountSummary:
    """Records per partition for one partition count, and its skew."""

    num_partitions: int
    per_partition: tuple[int, ...]
    hottest: tuple[HotPartition, ...]

    @property
    def records(self) -> int:
        return sum(self.per_partition)

    @property
    def mean(self) -> float:
        return self.records / self.num_partitions

    @property
    def max_over_mean(self) -> float:
        """Skew: the fullest partition's records over the mean (1.0 is perfectly even; 0 if empty)."""
        return max(self.per_partition) / self.mean if self.records else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "per_partition": list(self.per_partition),
            "mean": self.mean,
            "max": max(self.per_partition),
            "min": min(self.per_partition),
            "max_over_mean": self.max_over_mean,
            "hottest": [
                {
                    "partition": h.partition,
                    "records": h.records,
                    "top_keys": [{"key": k.key, "records": k.records} for k in h.top_keys],
                }
                for h in self.hottest
            ],
        }


@dataclass(frozen=True, slots=True)
class MovedShare:
    """What changes when a topic goes from ``from_count`` to ``to_count`` partitions.

    Only keyed records count: a key's partition is a function of the key, so "moved" is defined;
    a keyless record has no partition to keep.
    """

    from_count: int
    to_count: int
    keys_moved: int
    distinct_keys: int
    records_moved: int
    keyed_records: int

    @property
    def keys_moved_share(self) -> float:
        return self.keys_moved / self.distinct_keys if self.distinct_keys else 0.0

    @property
    def records_moved_share(self) -> float:
        return self.records_moved / self.keyed_records if self.keyed_records else 0.0

    @property
    def uniform_keys_moved_share(self) -> float:
        """The share of keys expected to move if hashes were uniform: ``1 - min(a, b) / lcm(a, b)``.

        A hash ``h`` keeps its partition iff ``h % a == h % b``; over one period ``lcm(a, b)`` that
        holds for exactly one ``h`` per common remainder ``0 .. min(a, b) - 1``.
        """
        a, b = self.from_count, self.to_count
        return 1.0 - min(a, b) / math.lcm(a, b)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.from_count,
            "to": self.to_count,
            "keys_moved": self.keys_moved,
            "distinct_keys": self.distinct_keys,
            "keys_moved_share": self.keys_moved_share,
            "uniform_keys_moved_share": self.uniform_keys_moved_share,
            "records_moved": self.records_moved,
            "keyed_records": self.keyed_records,
            "records_moved_share": self.records_moved_share,
        }


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    """The whole result of partitioning one dataset for one or more partition counts."""

    input: str | None
    input_format: str | None
    key_column: str
    key_type: str  # "string" or "binary"
    records: int
    keyed_records: int
    distinct_keys: int
    null_key_strategy: str
    seed: int
    counts: tuple[CountSummary, ...]
    moved: tuple[MovedShare, ...]
    output: str | None = None

    @property
    def keyless_records(self) -> int:
        return self.records - self.keyed_records

    def count(self, num_partitions: int) -> CountSummary:
        for c in self.counts:
            if c.num_partitions == num_partitions:
                return c
        raise KeyError(num_partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "format": self.input_format,
            "key_column": self.key_column,
            "key_type": self.key_type,
            "records": self.records,
            "keyed_records": self.keyed_records,
            "keyless_records": self.keyless_records,
            "distinct_keys": self.distinct_keys,
            "null_key_strategy": self.null_key_strategy,
            "seed": self.seed,
            "counts": {str(c.num_partitions): c.to_json() for c in self.counts},
            "moved": [m.to_json() for m in self.moved],
            "output": self.output,
        }


class Progress(Protocol):
    """Where long jobs report their stages (a terminal spinner in the CLI, nothing in a library call)."""

    def stage(self, description: str) -> Any:
        """A context manager around one stage of work."""
        ...


class NullProgress:
    """Reports nothing."""

    @contextmanager
    def stage(self, description: str) -> Iterator[None]:
        yield
