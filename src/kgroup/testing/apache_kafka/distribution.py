"""Apache Kafka's jars, pinned, resolved with Maven into kgroup's cache (nothing is committed).

kgroup's reference for "exact to Kafka" is one Apache Kafka release, named here and nowhere else:
:data:`KAFKA_VERSION`. :func:`kafka_libs` resolves that release's broker (``kafka_2.13``, KRaft),
``kafka-clients``, ``kafka-group-coordinator`` and their runtime dependencies with ``mvn`` (from Maven
Central, through the user's Maven settings) into ``~/.cache/kgroup/apache-kafka/<version>/libs`` —
the same directory layout as the ``libs/`` of Kafka's binary distribution — and reuses it afterwards.
``python -m kgroup.testing.apache_kafka fetch`` (``make kafka``) does it ahead of time.

Every failure is one line that says what to do: no JDK, no Maven, a registry that cannot be reached.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kgroup.javatools import JavaToolMissing, MavenFailed, cache_root, find_java_tool, maven_copy_dependencies
from kgroup.kafka_release import KAFKA_VERSION  # the one place it is named
from kgroup.model import KgroupError

__all__ = [
    "KAFKA_VERSION",
    "LOG4J_VERSION",
    "SCALA_VERSION",
    "KafkaLibs",
    "KafkaUnavailable",
    "kafka_libs",
    "log4j2_file_config",
]

#: Kafka's broker artefact is built per Scala version; 2.13 is the only one Kafka 4 publishes.
SCALA_VERSION = "2.13"
#: The log4j 2 release Kafka 4.4.0 depends on; its SLF4J binding gives the broker a log file.
LOG4J_VERSION = "2.25.5"
#: maven-dependency-plugin, pinned so every machine resolves the same way
#: resolving the 45 jars (43 MiB) took 22 s with them in ~/.m2 already; a cold ~/.m2 downloads them first
RESOLVE_TIMEOUT_S = 600

_ARTIFACTS = (
    ("org.apache.kafka", f"kafka_{SCALA_VERSION}", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-clients", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-group-coordinator", KAFKA_VERSION),
    ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
)


class KafkaUnavailable(KgroupError):
    """Apache Kafka cannot be run here (no JDK, no Maven, the jars cannot be resolved)."""


@dataclass(frozen=True, slots=True)
class KafkaLibs:
    """A resolved Apache Kafka: its ``libs`` directory and the ``java`` to run it with."""

    version: str
    libs: Path
    java: str

    @property
    def classpath(self) -> str:
        """The JVM class path of every jar (``libs/*``)."""
        return str(self.libs / "*")

    def jars(self) -> list[Path]:
        return sorted(self.libs.glob("*.jar"))

    def jar(self, artifact: str) -> Path:
        """The jar of one artefact, e.g. ``jar("kafka-clients")``."""
        found = sorted(self.libs.glob(f"{artifact}-[0-9]*.jar"))
        if not found:
            raise KafkaUnavailable(
                f"{artifact} is not among the resolved jars in {self.libs}; run `make kafka` again"
            )
        return found[0]


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    """Where a resolved release lives: ``$KGROUP_KAFKA_HOME`` if set, else kgroup's cache."""
    override = os.environ.get("KGROUP_KAFKA_HOME")
    if override:
        return Path(override)
    return cache_root() / "apache-kafka" / version


def _pom(version: str) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{version if v == KAFKA_VERSION else v}</version></dependency>"
        for g, a, v in _ARTIFACTS
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgroup.reference</groupId>
  <artifactId>apache-kafka</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _resolve(version: str, home: Path) -> None:
    def check(staged: Path) -> str | None:
        jar = f"kafka_{SCALA_VERSION}-{version}.jar"
        return None if any(staged.glob(jar)) else f"{jar} is missing from {staged}"

    try:
        maven_copy_dependencies(
            _pom(version), home, "libs", what=f"Apache Kafka {version}", timeout_s=RESOLVE_TIMEOUT_S,
            check=check,
        )  # fmt: skip
    except MavenFailed as exc:
        hint = f" (or point KGROUP_KAFKA_HOME at a directory holding libs/ of Kafka {version})"
        raise KafkaUnavailable(str(exc) + (hint if "needs Maven" in str(exc) else "")) from None
    (home / "RESOLVED").write_text(version + "\n")


def kafka_libs(version: str = KAFKA_VERSION, *, resolve: bool = True) -> KafkaLibs:
    """Apache Kafka ``version``, resolved (with ``mvn`` the first time) and ready to run.

    Raises :class:`KafkaUnavailable` with one line saying what is missing and how to fix it.
    ``resolve=False`` only looks: it never runs Maven.
    """
    try:
        java = find_java_tool("java")
    except JavaToolMissing as exc:
        raise KafkaUnavailable(f"Apache Kafka needs a JDK 17: {exc}") from None
    home = kafka_home(version)
    libs = home / "libs"
    marker = home / "RESOLVED"
    ready = libs.is_dir() and (
        marker.is_file() or (os.environ.get("KGROUP_KAFKA_HOME") and any(libs.glob("kafka_*.jar")))
    )
    if not ready:
        if not resolve:
            raise KafkaUnavailable(f"Apache Kafka {version} is not resolved yet: run `make kafka`")
        _resolve(version, home)
    return KafkaLibs(version=version, libs=libs, java=java)


def log4j2_file_config(path: Path, level: str = "INFO") -> str:
    """A log4j 2 configuration (properties format) sending a Kafka JVM's log to ``path`` at ``level``."""
    return (
        "status = error\n"
        "appender.file.type = File\n"
        "appender.file.name = FILE\n"
        f"appender.file.fileName = {path}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        f"rootLogger.level = {level}\n"
        "rootLogger.appenderRef.file.ref = FILE\n"
    )
