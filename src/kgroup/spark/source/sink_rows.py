"""The sink's rows, ready to produce: one Arrow batch's columns with every record's topic and partition.

:class:`RowPlanner` is what both of the sink's producers share (the bulk path,
:mod:`kgroup.spark.source.bulk_sink`, and librdkafka's, :mod:`kgroup.spark.source.librdkafka_sink`):
it reads the columns Spark's Kafka sink has (``key``, ``value``, ``topic``, ``partition``,
``headers``) and gives every record without a partition the one a **Java** producer would choose —
keyed records by Kafka's murmur2 (:func:`kgroup.partitioning.partitions_for_keys`, vectorised), keyless
records by the ``nullKeyStrategy`` option (kgroup's models of Kafka's partitioners, one producer per
Spark task seeded from ``nullKeySeed``; its state carries across the task's Arrow batches).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgroup.model import KgroupError
from kgroup.spark.source.options import SinkOptions

__all__ = ["PlannedRows", "RowPlanner", "SinkColumns"]


@dataclass(frozen=True, slots=True)
class SinkColumns:
    """Which of the sink's columns the written DataFrame has (checked on the driver)."""

    has_key: bool
    has_topic: bool
    has_partition: bool
    has_headers: bool


@dataclass(frozen=True, slots=True)
class PlannedRows:
    """One Arrow batch's records: row ``i`` to ``topics[topic_index[i]]``, partition ``partitions[i]``."""

    keys: Any  # Arrow binary (null: keyless)
    values: Any  # Arrow string or binary, as the DataFrame has it
    headers: Any | None  # the headers column, or None
    topics: tuple[str, ...]
    topic_index: Any  # numpy int64, one per row
    partitions: Any  # numpy int64, one per row

    @property
    def rows(self) -> int:
        return len(self.partitions)

    def topic_list(self) -> list[str]:
        """Each row's topic (a Python list: librdkafka's path produces one record at a time)."""
        if len(self.topics) == 1:
            return [self.topics[0]] * self.rows
        return [self.topics[i] for i in self.topic_index.tolist()]


class RowPlanner:
    """One Spark task's partition choices, as a Java producer would make them."""

    def __init__(
        self, options: SinkOptions, columns: SinkColumns, task_id: int, partition_count: Callable[[str], int]
    ) -> None:
        self.options = options
        self.columns = columns
        self.task_id = task_id
        self.partition_count = partition_count
        self.choosers: dict[str, Callable[..., int]] = {}

    def chooser(self, topic: str) -> Callable[..., int]:
        choose = self.choosers.get(topic)
        if choose is None:
            from kgroup.partitioning import null_key_chooser
            from kgroup.spark.null_keys import task_seed

            n = self.partition_count(topic)
            seed = task_seed(self.options.null_key_seed, self.task_id, n)
            choose = null_key_chooser(self.options.null_key_strategy, n, rng=random.Random(seed))
            self.choosers[topic] = choose
        return choose

    def plan(self, batch: Any) -> PlannedRows | None:
        """The batch's records with their topics and partitions (None for a batch of no rows)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from kgroup.partitioning import partitions_for_keys

        names = [n.lower() for n in batch.schema.names]

        def column(name: str) -> Any:
            return batch.column(names.index(name))

        n = batch.num_rows
        if n == 0:
            return None
        values = column("value")
        keys = column("key") if self.columns.has_key else pa.nulls(n, pa.binary())
        if pa.types.is_string(keys.type):
            keys = keys.cast(pa.binary())
        if self.options.topic is not None:
            topics: tuple[str, ...] = (self.options.topic,)
            topic_index = np.zeros(n, dtype=np.int64)
        else:
            topic_column = column("topic")
            if topic_column.null_count:
                raise KgroupError("topic: a row has a null topic and no topic option is set; fill the column")
            encoded = topic_column.dictionary_encode()
            topics = tuple(encoded.dictionary.to_pylist())
            topic_index = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        if self.columns.has_partition:
            given = column("partition")
            partitions = np.asarray(given.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            if int(partitions.min()) < -1 or given.null_count < int((partitions == -1).sum()):
                raise KgroupError("partition: a negative partition number; give 0 or more, or null to choose")
            self._check_given_partitions(topics, topic_index, partitions)
        else:
            partitions = np.full(n, -1, dtype=np.int64)
        missing = partitions < 0
        if missing.any():
            for index in sorted(range(len(topics)), key=lambda i: topics[i]):
                topic = topics[index]
                rows = np.flatnonzero(missing & (topic_index == index))
                if not len(rows):
                    continue
                count = self.partition_count(topic)
                topic_keys = keys.take(pa.array(rows))
                keyed = np.asarray(partitions_for_keys(topic_keys, count), dtype=np.int64)
                null_rows = np.flatnonzero(topic_keys.is_null().to_numpy(zero_copy_only=False))
                if len(null_rows):
                    choose = self.chooser(topic)
                    sizes = pc.binary_length(values.take(pa.array(rows[null_rows]))).fill_null(0)
                    for i, size in zip(null_rows.tolist(), sizes.to_pylist(), strict=True):
                        keyed[i] = choose(max(int(size), 1))
                partitions[rows] = keyed
        headers = column("headers") if self.columns.has_headers else None
        return PlannedRows(keys, values, headers, topics, topic_index, partitions)

    def _check_given_partitions(self, topics: tuple[str, ...], topic_index: Any, partitions: Any) -> None:
        """A Java producer refuses a record for a partition the topic does not have; so does this."""
        given = partitions >= 0
        if not given.any():
            return
        for index in sorted(set(topic_index[given].tolist()), key=lambda i: topics[i]):
            topic = topics[index]
            highest = int(partitions[given & (topic_index == index)].max())
            count = self.partition_count(topic)
            if highest >= count:
                raise KgroupError(
                    f"partition: {highest} is not a partition of topic {topic!r} (it has {count}: 0 to "
                    f"{count - 1}); fix the partition column or leave it null to choose"
                )
