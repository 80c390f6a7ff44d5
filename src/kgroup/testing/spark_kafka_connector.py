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

import re
import sys
from pathlib import Path

from kgroup.javatools import MavenFailed, cache_root, maven_copy_dependencies
from kgroup.model import KgroupError
from kgroup.testing.fetch_command import fetch_main

__all__ = ["ConnectorUnavailable", "connector_jars", "spark_version"]

SCALA_VERSION = "2.13"
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
    try:
        maven_copy_dependencies(
            _pom(version), home, "jars", what=f"spark-sql-kafka-0-10_{SCALA_VERSION}:{version}",
            timeout_s=RESOLVE_TIMEOUT_S, check=lambda staged: None,
        )  # fmt: skip
    except MavenFailed as exc:
        # Maven Central may publish the connector later than PySpark
        hint = "; or name an older release that Maven Central has: fetch 4.2.0"
        raise ConnectorUnavailable(str(exc) + ("" if "needs Maven" in str(exc) else hint)) from None
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
    return fetch_main(
        argv,
        usage="python -m kgroup.testing.spark_kafka_connector fetch [SPARK_VERSION]",
        fetch=lambda args: _fetched_line(args[0] if args else spark_version()),
        unavailable=KgroupError,
        optional_args=1,
    )


def _fetched_line(version: str) -> str:
    jars = connector_jars(version)
    return f"spark-sql-kafka-0-10 {version}: {len(jars)} jars in {jars[0].parent}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
