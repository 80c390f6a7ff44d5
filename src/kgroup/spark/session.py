"""Building the SparkSession kgroup's jobs run on: local by default, any cluster by master URL.

Local mode is the embedded default. The settings keep a local run quiet and small: no web UI, few
shuffle partitions, Arrow for Python data exchange, the Python workers running the same interpreter
as the driver (so they import the same kgroup), and Spark's own logging cut down to errors.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError

__all__ = ["DEFAULT_MASTER", "check_master", "get_spark", "spark_session"]

DEFAULT_MASTER = "local[*]"

# Spark prints its start-up banner through log4j before any setLogLevel() call can run, so the
# driver JVM is started with this configuration instead (written to a temporary file once). The
# repl logger is given the root's level (otherwise a PySpark driver announces its "default log
# level" on every start) and the console only lets errors through.
_LOG4J2_PROPERTIES = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = warn
"""


def _log4j_config_file() -> Path:
    path = (
        Path(tempfile.gettempdir())
        / f"kgroup-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties"
    )
    if not path.exists() or path.read_text() != _LOG4J2_PROPERTIES:
        path.write_text(_LOG4J2_PROPERTIES)
    return path


def _prepare_environment() -> None:
    # The Python workers must be this interpreter: it is the one with kgroup, numpy and pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # A local run needs no network interface beyond loopback (and must not pick a flaky one).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


# What spark-submit accepts (anything else makes the JVM print a stack trace and exit).
_MASTER_PATTERN = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[.+\]|yarn|(spark|k8s)://\S+")


def check_master(master: str) -> None:
    """Reject a master URL Spark would not accept, with the forms it does."""
    if not _MASTER_PATTERN.fullmatch(master or ""):
        raise KgroupError(
            f"master: {master!r} is not a Spark master URL; use local[*], local[N], spark://HOST:PORT, "
            "yarn or k8s://HOST:PORT"
        )


def get_spark(
    master: str = DEFAULT_MASTER, app_name: str = "kgroup", shuffle_partitions: int | None = None
) -> Any:
    """The active SparkSession, or a new one for ``master`` (``local[*]``, ``local[2]``,
    ``spark://host:7077``, ``yarn`` …).

    If a session already exists it is returned as is (Spark allows one per process); ``master``
    then has no effect. ``shuffle_partitions`` defaults to 8 for local masters (small data, few
    cores) and to Spark's own default elsewhere.
    """
    check_master(master)
    _prepare_environment()
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise KgroupError(
            f"pyspark is not importable ({exc}); reinstall kgroup with its dependencies"
        ) from exc

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    log4j = _log4j_config_file()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
    )
    from kgroup.spark.jvm import kgroup_jar

    jar = kgroup_jar()  # kgroup's JVM partitioning function, compiled once per machine
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    if shuffle_partitions is None and master.startswith("local"):
        shuffle_partitions = 8
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise KgroupError(
            f"master: could not start Spark on {master!r} ({first}); "
            "check the master URL and that Java 17 is installed"
        ) from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def spark_session(master: str = DEFAULT_MASTER, app_name: str = "kgroup") -> Iterator[Any]:
    """A SparkSession for the duration of a job: stopped afterwards only if this call started it.

    A session that already existed (a notebook's, or the test suite's shared one) is left running.
    """
    from pyspark.sql import SparkSession

    existed = SparkSession.getActiveSession() is not None
    spark = get_spark(master, app_name)
    try:
        yield spark
    finally:
        if not existed:
            spark.stop()
