"""kgroup on Spark: Kafka's partitioning as DataFrame transformations, and the jobs built on it.

The only package of kgroup that imports pyspark — and only when a function here is called, so
``import kgroup.spark`` is cheap. The names below are loaded on first use:

* :func:`get_spark` / :func:`spark_session` — a SparkSession (``local[*]`` by default);
* :func:`with_kafka_partition` / :func:`with_kafka_partitions` — add each record's Kafka partition;
* :func:`run_partition_job` / :func:`summarize_partitions` — the ``kgroup partition --input`` job;
* :func:`generate_events` — the demo's skewed synthetic events;
* :func:`register` — the ``kgroup`` data source on a session: ``spark.read.format("kgroup")``,
  ``readStream``, ``write`` and ``writeStream``, with the options and schema of Spark's Kafka source.

Three products, one sub-package each: :mod:`kgroup.spark.source` (the ``kgroup`` data source),
:mod:`kgroup.spark.partitioning` (the partitioning functions and jobs) and :mod:`kgroup.spark.demo`
(the demo's and the simulator's Spark jobs); ``session``, ``progress`` and ``null_keys`` serve all
three. See ``docs/spark.md`` (its section "Layout of kgroup.spark").
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "DEFAULT_MASTER": "kgroup.spark.session",
    "get_spark": "kgroup.spark.session",
    "spark_session": "kgroup.spark.session",
    "DEFAULT_NULL_KEY_STRATEGY": "kgroup.spark.null_keys",
    "task_seed": "kgroup.spark.null_keys",
    "with_kafka_partition": "kgroup.spark.partitioning.partition_column",
    "with_kafka_partitions": "kgroup.spark.partitioning.partition_column",
    "PartitionJob": "kgroup.spark.partitioning.job",
    "read_input": "kgroup.spark.partitioning.job",
    "run_partition_job": "kgroup.spark.partitioning.job",
    "summarize_partitions": "kgroup.spark.partitioning.job",
    "EventSpec": "kgroup.spark.demo.events",
    "generate_events": "kgroup.spark.demo.events",
    "PartitionSummary": "kgroup.spark.partitioning.results",
    "KgroupDataSource": "kgroup.spark.source.datasource",
    "register": "kgroup.spark.registration",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgroup.spark' has no attribute {name!r}")
    return getattr(import_module(module), name)
