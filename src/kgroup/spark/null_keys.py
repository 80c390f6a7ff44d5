"""How kgroup's Spark jobs place keyless records: shared by the partitioning functions
(:mod:`kgroup.spark.partitioning`) and the ``kgroup`` sink (:mod:`kgroup.spark.source.writer`).

Each Spark task models its own producer, with its own seeded random sequence (:func:`task_seed`),
so a run is reproducible on any cluster. Pure: no pyspark.
"""

from __future__ import annotations

import hashlib

__all__ = ["DEFAULT_NULL_KEY_STRATEGY", "task_seed"]

#: how Kafka's producer places keyless records by default (its built-in partitioner, KIP-794)
DEFAULT_NULL_KEY_STRATEGY = "adaptive"


def task_seed(seed: int, task_partition_id: int, num_partitions: int) -> int:
    """The seed of the null-key partitioner of one Spark task for one partition count.

    A stable hash (BLAKE2b of the three numbers), so two tasks — or two counts — never share a
    random sequence, and the same inputs give the same seed on every machine and Python version.
    """
    digest = hashlib.blake2b(f"kgroup:{seed}:{task_partition_id}:{num_partitions}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")
