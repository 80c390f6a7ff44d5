"""Kafka's producer partitioning as Spark DataFrame transformations, and the jobs built on it.

* :mod:`~kgroup.spark.partitioning.partition_column` — :func:`with_kafka_partition` /
  :func:`with_kafka_partitions`: each record's Kafka partition as a column;
* :mod:`~kgroup.spark.partitioning.jvm` — kgroup's JVM function (``java/KafkaPartition.java``),
  compiled on first use;
* :mod:`~kgroup.spark.partitioning.job` — the ``kgroup partition --input`` job;
* :mod:`~kgroup.spark.partitioning.results` — the job's summaries (pure).

Nothing here is imported by the package itself, so importing it loads no pyspark.
"""
