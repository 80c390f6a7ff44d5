"""kgroup on Spark: Kafka's partitioning as DataFrame transformations, and the jobs built on it.

The only package of kgroup that imports pyspark — and only when a function here is called, so
``import kgroup.spark`` is cheap. The names below are loaded on first use:

* :func:`get_spark` / :func:`spark_session` — a SparkSession (``local[*]`` by default);
* :func:`with_kafka_partition` / :func:`with_kafka_partitions` — add each record's Kafka partition;
* :func:`run_partition_job` / :func:`summarize_partitions` — the ``kgroup partition --input`` job;
* :func:`generate_events` — the demo's skewed synthetic events;
* :func:`register` — the ``kgroup`` data source on a session: ``spark.read.format("kgroup")``,
  ``readStream``, ``write`` and ``writeStream``, with the options and schema of Spark's Kafka source.

See ``docs/spark.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "DEFAULT_MASTER": "kgroup.spark.session",
    "get_spark": "kgroup.spark.session",
    "spark_session": "kgroup.spark.session",
    "DEFAULT_NULL_KEY_STRATEGY": "kgroup.spark.partitioning",
    "task_seed": "kgroup.spark.partitioning",
    "with_kafka_partition": "kgroup.spark.partitioning",
    "with_kafka_partitions": "kgroup.spark.partitioning",
    "PartitionJob": "kgroup.spark.partition_job",
    "read_input": "kgroup.spark.partition_job",
    "run_partition_job": "kgroup.spark.partition_job",
    "summarize_partitions": "kgroup.spark.partition_job",
    "EventSpec": "kgroup.spark.events",
    "generate_events": "kgroup.spark.events",
    "PartitionSummary": "kgroup.spark.results",
    "KgroupDataSource": "kgroup.spark.source",
    "register": "kgroup.spark.source",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgroup.spark' has no attribute {name!r}")
    return getattr(import_module(module), name)
