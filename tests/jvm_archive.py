"""The test run's class-data-sharing archive for Spark's driver JVM: each Spark start in half the CPU.

A Spark driver loads and verifies some ten thousand classes from Spark's jars each time it starts; the
suite starts a dozen of them (the shared sessions of each xdist group, the tests that run ``kgroup``
with Spark in a process of their own). Java 17's dynamic class-data-sharing archive
(``-XX:ArchiveClassesAtExit`` once, then ``-XX:SharedArchiveFile``) keeps those classes parsed and
verified in one file the JVMs map: measured here, a session's start and first query went from 10.4–10.7
CPU-s (9.0 s wall) to 5.8–6.3 CPU-s (4.9 s). ``make test`` builds the archive beside mypy
(``python tests/jvm_archive.py``: a Spark session running what the tests run — Arrow batches through a
Python worker, Parquet, a shuffle, a streaming query, the ``kgroup`` format's read and write on an
in-process broker); ``tests/conftest.py`` adds :func:`jvm_options` to ``SPARK_SUBMIT_OPTS`` when the
archive exists. A JVM that cannot use it (another Java or Spark) starts as before, silently: its CDS
messages are switched off. Nothing here changes what the JVM runs, only how fast it starts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: the suite's lean JVM (tests/conftest.py): the archive is made by a JVM with the same options
LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _java() -> Path | None:
    """The java spark-class runs: ``$JAVA_HOME/bin/java``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where this Java and this PySpark's archive lives (``None``: no Java or no PySpark)."""
    java = _java()
    try:
        import pyspark
    except ImportError:
        return None
    if java is None:
        return None
    stat = java.stat()
    key = hashlib.sha256(
        f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}".encode()
    ).hexdigest()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kgroup" / "cds"
    return cache / f"spark-{pyspark.__version__}-{key[:16]}.jsa"


def jvm_options() -> str:
    """The options that map the archive, or ``""`` when there is none yet."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} {_QUIET}" if path is not None and path.exists() else ""


_WORKLOAD = r"""
import pyarrow as pa, tempfile
from kgroup.spark import register
from kgroup.spark.session import get_spark
from kgroup.testing import KafkaBroker
spark = get_spark("local[2]", app_name="kgroup-cds", shuffle_partitions=4)
register(spark)
def double(batches):
    for batch in batches:
        yield pa.RecordBatch.from_arrays([pa.compute.multiply(batch.column(0), 2)], ["id"])
with tempfile.TemporaryDirectory() as tmp:
    df = spark.range(1000).mapInArrow(double, "id long")
    df.groupBy((df.id % 7).alias("k")).count().write.parquet(f"{tmp}/p")
    spark.read.parquet(f"{tmp}/p").orderBy("k").collect()
    with KafkaBroker(topics={"t": 2}) as kafka:
        opts = {"kafka.bootstrap.servers": kafka.bootstrap_servers}
        spark.range(100).selectExpr("cast(id as string) as key", "cast(id as string) as value").write.format(
            "kgroup").options(topic="t", **opts).mode("append").save()
        spark.read.format("kgroup").options(subscribe="t", **opts).load().count()
        query = (spark.readStream.format("kgroup").options(subscribe="t", startingOffsets="earliest", **opts)
                 .load().writeStream.format("parquet").option("checkpointLocation", f"{tmp}/c")
                 .trigger(availableNow=True).start(f"{tmp}/s"))
        query.awaitTermination(120)
spark.stop()
"""


def build() -> int:
    """Build the archive if it is missing (one Spark session with ``-XX:ArchiveClassesAtExit``)."""
    path = archive_path()
    if path is None:
        print("jvm_archive: no java or no pyspark; the tests start Spark without an archive")
        return 0
    if path.exists():
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        made = Path(tmp) / path.name
        env = {
            **os.environ,
            "SPARK_SUBMIT_OPTS": f"{LEAN_JVM} -XX:ArchiveClassesAtExit={made} {_QUIET}",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        done = subprocess.run(
            [sys.executable, "-c", _WORKLOAD],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not made.exists():
            # the tests run without it; say why in one line
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"jvm_archive: no archive (exit {done.returncode}): {last}")
            return 0
        os.replace(made, path)  # atomic: a JVM never maps a half-written archive
    for stale in path.parent.glob("spark-*.jsa"):  # another Java's or PySpark's (157 MB each)
        if stale != path:
            stale.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(build())
