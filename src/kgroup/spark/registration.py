"""``kgroup.spark.register(spark)``: everything kgroup adds to a SparkSession, on any session.

* the ``kgroup`` data source (:func:`kgroup.spark.source.datasource.register`);
* on a local session whose Python workers' interpreter has no kgroup, the driver's interpreter for
  them, said in one line (:func:`kgroup.spark.worker_python.arrange_worker_python`);
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
    A local session whose Python workers would run an interpreter without kgroup (no
    ``PYSPARK_PYTHON``) gets the driver's interpreter for them first, with a warning line.
    """
    from kgroup.spark.partitioning.jvm import register_function
    from kgroup.spark.source.datasource import register as register_data_source
    from kgroup.spark.worker_python import arrange_worker_python

    arrange_worker_python(spark)  # before the data source captures the workers' interpreter
    register_data_source(spark)
    return register_function(spark)
