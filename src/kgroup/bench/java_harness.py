"""The Java side of a benchmark: a harness class from ``testing/apache_kafka/java/`` compiled (on first
use, into kgroup's cache) against the pinned Apache Kafka's jars, for the ``java_*`` modules to run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kgroup.model import KgroupError

if TYPE_CHECKING:
    from kgroup.testing.apache_kafka.distribution import KafkaLibs

__all__ = ["harness_jar"]

_HARNESS_SOURCES = Path(__file__).parent.parent / "testing" / "apache_kafka" / "java"


def harness_jar(source: str, jar_name: str, cannot: str) -> tuple[Path, KafkaLibs]:
    """The jar of ``source`` (a ``.java`` file of the harness folder) and the Kafka it runs with; a
    one-line :class:`KgroupError` ``"{cannot}: {why}"`` when Kafka or a JDK is not there."""
    from kgroup.javatools import CompileFailed, JavaToolMissing, cache_root, compile_jar
    from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaUnavailable, kafka_libs

    try:
        libs = kafka_libs(KAFKA_VERSION)
        jar = compile_jar([_HARNESS_SOURCES / source], libs.jars(), cache_root() / "bench", jar_name)
    except (KafkaUnavailable, CompileFailed, JavaToolMissing) as exc:
        raise KgroupError(f"{cannot}: {exc}") from None
    return jar, libs
