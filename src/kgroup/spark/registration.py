"""``kgroup.spark.register(spark)``: everything kgroup adds to a SparkSession, on any session.

* the ``kgroup`` data source (:func:`kgroup.spark.source.datasource.register`);
* kgroup's JVM partitioning function (:func:`kgroup.spark.partitioning.jvm.register_function`), so
  ``with_kafka_partition`` computes partitions inside Spark's JVM on a session kgroup did not start
  too (a notebook's, ``spark-submit``'s, any ``SparkSession.builder``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> str | None:
    """Register the ``kgroup`` format and kgroup's JVM partitioning function on ``spark``.

    Returns ``None`` when both are there, else why the JVM function is not (no JDK to compile it,
    a session that refuses the jar) — partitioning then runs in the Python workers, exact as well.
    """
    from kgroup.spark.partitioning.jvm import register_function
    from kgroup.spark.source.datasource import register as register_data_source

    register_data_source(spark)
    return register_function(spark)
