"""Whether a test that needs Apache Kafka runs, skips, or fails — decided in one place.

In CI (``CI`` set to anything but ``false``/``0``/empty) Apache Kafka must be there: a missing JDK or
jars fail the test with the one-line reason. Elsewhere (a laptop without network to Maven Central)
the test is skipped with that line.
"""

from __future__ import annotations

import os

from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaLibs, KafkaUnavailable, kafka_libs

__all__ = ["in_ci", "require_apache_kafka"]

_checked: dict[str, KafkaLibs | str] = {}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_apache_kafka(version: str = KAFKA_VERSION) -> KafkaLibs:
    """Apache Kafka's jars for a test, or ``pytest.skip`` / ``pytest.fail`` with the reason (once per run)."""
    import pytest

    if version not in _checked:
        try:
            _checked[version] = kafka_libs(version)
        except KafkaUnavailable as exc:
            _checked[version] = str(exc)
    found = _checked[version]
    if isinstance(found, KafkaLibs):
        return found
    if in_ci():
        pytest.fail(f"Apache Kafka {version} is required in CI: {found}", pytrace=False)
    pytest.skip(f"Apache Kafka {version} unavailable: {found}")
