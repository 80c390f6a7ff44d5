"""The Apache Kafka release kgroup is exact to, named in one place.

Reports, help texts and ``kgroup version`` say it from here, and the reference the tests run
(:mod:`kgroup.testing.apache_kafka`) fetches this release (why this one: ``docs/apache-kafka.md``).
"""

from __future__ import annotations

__all__ = ["KAFKA_VERSION", "exact_to"]

#: the Apache Kafka release kgroup reproduces and is checked against
KAFKA_VERSION = "4.4.0"


def exact_to() -> str:
    """``"Apache Kafka 4.4.0"``: how reports and help texts name the release."""
    return f"Apache Kafka {KAFKA_VERSION}"
