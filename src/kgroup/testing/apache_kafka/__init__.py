"""Apache Kafka itself, the reference kgroup is checked against: its jars, its broker, its Java code.

* :data:`KAFKA_VERSION` — the one pinned release (``docs/apache-kafka.md`` says why that one);
* :func:`kafka_libs` — the release's jars, resolved with Maven into kgroup's cache on first use;
* :class:`ApacheKafka` — a context manager running it in KRaft mode (one node or several) on 127.0.0.1;
* :func:`require_apache_kafka` — for tests: the jars, or a skip (outside CI) / a failure (in CI) with
  one line saying why;
* :class:`KafkaOracle` — the release's own assignors (client-side and the KIP-848 coordinator's),
  murmur2 and partitioners in one JVM, asked from Python (``oracle.py``);
* the ``apache_kafka`` pytest fixture (:mod:`kgroup.testing.pytest_plugin`): one node per test run.

``python -m kgroup.testing.apache_kafka fetch`` resolves the jars ahead of time (``make kafka``).
"""

from kgroup.testing.apache_kafka.cluster import DEFAULT_CONFIGS, ApacheKafka, KafkaNodeDied
from kgroup.testing.apache_kafka.distribution import (
    KAFKA_VERSION,
    KafkaLibs,
    KafkaUnavailable,
    kafka_libs,
)
from kgroup.testing.apache_kafka.oracle import (
    KafkaOracle,
    OracleAnswer,
    OracleDied,
    OracleError,
    ServerAnswer,
    ServerGroup,
    ServerMember,
    kgroup_group_spec,
    server_vector_group,
    vector_input,
)
from kgroup.testing.apache_kafka.skips import in_ci, require_apache_kafka

__all__ = [
    "DEFAULT_CONFIGS",
    "KAFKA_VERSION",
    "ApacheKafka",
    "KafkaLibs",
    "KafkaNodeDied",
    "KafkaOracle",
    "KafkaUnavailable",
    "OracleAnswer",
    "OracleDied",
    "OracleError",
    "ServerAnswer",
    "ServerGroup",
    "ServerMember",
    "in_ci",
    "kafka_libs",
    "kgroup_group_spec",
    "require_apache_kafka",
    "server_vector_group",
    "vector_input",
]
