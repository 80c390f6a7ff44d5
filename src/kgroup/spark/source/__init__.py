"""The ``kgroup`` Spark data source: Spark's Kafka source and sink, laid out as PySpark's API.

* :mod:`~kgroup.spark.source.datasource` — :class:`KgroupDataSource` and :func:`register`;
* :mod:`~kgroup.spark.source.batch` — the batch reader (``spark.read``);
* :mod:`~kgroup.spark.source.stream` — the stream reader (``spark.readStream``, ``consume=partition``);
* :mod:`~kgroup.spark.source.group_stream` — the group stream reader (``consume=group``) and the
  listener that commits a query's last batch to its group;
* :mod:`~kgroup.spark.source.read_task` — one task's offset range, fetched by every reader;
* :mod:`~kgroup.spark.source.writer` — the sink (``write`` / ``writeStream``);
* :mod:`~kgroup.spark.source.options` and :mod:`~kgroup.spark.source.group_options` — the options;
* :mod:`~kgroup.spark.source.offsets` — the offsets JSON Spark checkpoints;
* :mod:`~kgroup.spark.source.ranges` — offset planning; :mod:`~kgroup.spark.source.kafka_io` —
  the confluent-kafka clients.

Importing this package loads no pyspark; :func:`register` and :class:`KgroupDataSource` are loaded
on first use. See ``docs/spark.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["KgroupDataSource", "register"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("kgroup.spark.source.datasource"), name)
    raise AttributeError(f"module 'kgroup.spark.source' has no attribute {name!r}")
