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
from typing import IO, Any

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
appender.console.filter.threshold.level = {threshold}
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = warn
"""

#: what the JVM prints on its own that says nothing to a kgroup user: Spark 4 starts the JVM with
#: ``--add-modules jdk.incubator.vector`` and the JDK announces it on every start, with no switch
#: to turn that off; so the JVM's stderr goes through :func:`_forward_jvm_stderr`, which drops it.
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


def _log4j_config_file() -> Path:
    # Spark's own failures reach the user as kgroup's one-line errors (the exception travels back
    # to Python); its log lines would only repeat them with a Java stack. KGROUP_DEBUG=1 lets
    # Spark's errors through to stderr again.
    threshold = "error" if os.environ.get("KGROUP_DEBUG") else "off"
    text = _LOG4J2_PROPERTIES.replace("{threshold}", threshold)
    path = (
        Path(tempfile.gettempdir())
        / f"kgroup-log4j2-{threshold}-{os.getuid() if hasattr(os, 'getuid') else 0}.properties"
    )
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _forward_jvm_stderr(pipe: IO[bytes], target_fd: int) -> None:
    """Copy the JVM's stderr (and its Python workers') to ``target_fd``, line by line, without
    the lines of :data:`_JVM_NOISE`. Runs in a daemon thread for as long as the JVM lives."""
    with pipe:
        for line in iter(pipe.readline, b""):
            if not line.startswith(_JVM_NOISE):
                try:
                    os.write(target_fd, line)
                except OSError:  # our stderr is gone (closed pipe): nothing left to tell
                    return


def _launch_jvm(options: dict[str, str]) -> None:
    """Start the JVM the way PySpark does, but with its stderr piped through
    :func:`_forward_jvm_stderr` (``popen_kwargs`` is PySpark's hook for capturing the JVM's
    output). Sessions started later in this process reuse this JVM, as PySpark's own do."""
    import subprocess
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # a JVM is already running (or given to us): nothing to launch
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    process = getattr(gateway, "proc", None)
    if process is not None and process.stderr is not None:
        threading.Thread(
            target=_forward_jvm_stderr, args=(process.stderr, 2), name="kgroup-jvm-stderr", daemon=True
        ).start()
    SparkContext._ensure_initialized(gateway=gateway)


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
    options = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
    }
    from kgroup.spark.partitioning.jvm import kgroup_jar

    jar = kgroup_jar()  # kgroup's JVM partitioning function, compiled once per machine
    if jar is not None:
        options["spark.jars"] = jar
    if shuffle_partitions is None and master.startswith("local"):
        shuffle_partitions = 8
    if shuffle_partitions is not None:
        options["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if master.startswith("local"):
        options["spark.driver.bindAddress"] = "127.0.0.1"
        options["spark.driver.host"] = "127.0.0.1"
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        _launch_jvm(options)
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
