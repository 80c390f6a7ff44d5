"""Spark's own Kafka connector (``spark-sql-kafka-0-10``) for the installed PySpark, resolved with Maven.

The peer of ``format("kgroup")`` in ``benchmarks/bench_spark_kafka.py``: ``format("kafka")`` needs the
connector's jar and its runtime dependencies (``kafka-clients``, ``commons-pool2``,
``spark-token-provider-kafka-0-10``) on the session's class path (``spark.jars``). :func:`connector_jars`
resolves ``org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>`` with ``mvn`` from Maven
Central into ``~/.cache/kgroup/spark-sql-kafka/<version>/`` the first time and reuses it afterwards
(nothing is committed). ``python -m kgroup.testing.spark_kafka_connector fetch [SPARK_VERSION]`` does
it ahead of time. On 2026-11-26 Maven Central's newest connector was 4.2.0 while PySpark 4.3.0 was
installed: the benchmark then runs the 4.2.0 connector in Spark 4.3.0 (``--connector-version``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kgroup.javatools import cache_root
from kgroup.model import KgroupError

__all__ = ["ConnectorUnavailable", "connector_jars", "spark_version"]

SCALA_VERSION = "2.13"
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
RESOLVE_TIMEOUT_S = 600


class ConnectorUnavailable(KgroupError):
    """The connector's jars cannot be resolved here (no Maven, Maven Central unreachable)."""


def spark_version() -> str:
    """The installed PySpark's version (the connector must be the same release)."""
    from importlib.metadata import version

    return version("pyspark")


def _home(version: str) -> Path:
    return cache_root() / "spark-sql-kafka" / version


def _pom(version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgroup.reference</groupId>
  <artifactId>spark-sql-kafka</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_{SCALA_VERSION}</artifactId>
      <version>{version}</version></dependency>
  </dependencies>
</project>
"""


def _resolve(version: str, home: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConnectorUnavailable(
            "spark-sql-kafka-0-10 needs Maven to fetch its jars: install it (e.g. apt-get install maven)"
        )
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgroup-mvn-", dir=home) as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(_pom(version))
        staged = Path(work) / "jars"
        command = [
            mvn, "-B", "-q", "-f", str(pom), f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={staged}", "-DincludeScope=runtime",
        ]  # fmt: skip
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise ConnectorUnavailable(
                f"mvn did not resolve spark-sql-kafka-0-10 {version} within {RESOLVE_TIMEOUT_S} s: "
                "check that Maven Central can be reached"
            ) from None
        if result.returncode != 0:
            lines = [line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line]
            raise ConnectorUnavailable(
                f"mvn could not resolve spark-sql-kafka-0-10_{SCALA_VERSION}:{version} "
                f"({(lines[0] if lines else 'no output')[:300]}): check that Maven Central can be reached "
                "and has that release (it may publish the connector later than PySpark; name an older "
                "release: fetch 4.2.0)"
            )
        final = home / "jars"
        if final.exists():
            shutil.rmtree(final)
        os.replace(staged, final)
    (home / "RESOLVED").write_text(version + "\n")


def _artifact(jar_name: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", jar_name)


def _shipped_with_pyspark() -> set[str]:
    import pyspark

    return {_artifact(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def connector_jars(version: str | None = None) -> list[Path]:
    """The connector's jars for Spark ``version`` (default: the installed PySpark's), resolved once,
    without those PySpark ships itself in any version (Scala, Hadoop, compression codecs): Spark's
    own class path comes first, so only the connector and what Spark lacks are given."""
    version = version or spark_version()
    home = _home(version)
    if not (home / "RESOLVED").is_file():
        _resolve(version, home)
    shipped = _shipped_with_pyspark()
    jars = sorted(j for j in (home / "jars").glob("*.jar") if _artifact(j.name) not in shipped)
    if not any(j.name.startswith("spark-sql-kafka-0-10") for j in jars):
        raise ConnectorUnavailable(
            f"spark-sql-kafka-0-10 is missing from {home / 'jars'}; delete it and fetch again"
        )
    return jars


def main(argv: list[str]) -> int:
    usage = "usage: python -m kgroup.testing.spark_kafka_connector fetch [SPARK_VERSION]"
    if not argv or argv[0] != "fetch" or len(argv) > 2:
        print(usage, file=sys.stderr)
        return 2
    version = argv[1] if len(argv) == 2 else spark_version()
    try:
        jars = connector_jars(version)
    except KgroupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"spark-sql-kafka-0-10 {version}: {len(jars)} jars in {jars[0].parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
