"""Apache Kafka's Java clients as process handles: ``JavaConsumer`` and ``JavaProducer``.

Each handle runs ``ClientDriver.java`` (beside this module) in its own JVM against the pinned
``kafka-clients`` jar: the real ``KafkaConsumer`` (classic group protocol) or ``KafkaProducer``,
configured with Kafka's property names. The driver prints one JSON line per observable event
(partitions assigned, revoked or lost with the generation of ``consumer.groupMetadata()``, records,
commits and their result, errors) and takes commands on stdin; the handle reads the events in a
thread, keeps them all (``events``) and waits for the ones a test needs with a bound, raising
:class:`JavaClientTimeout` (what it waited for, what it saw last) or :class:`JavaClientDied` (the
exit code and the client's last error) in one line.

    >>> with JavaConsumer(kafka.bootstrap_servers, "g", ["orders"]) as consumer:  # doctest: +SKIP
    ...     assigned = consumer.wait_assigned()
    ...     print(assigned.generation, sorted(consumer.assignment))

The driver is compiled on first use with :func:`kgroup.javatools.compile_jar` against
``kafka-clients`` and Jackson, into kgroup's cache. Each JVM logs through log4j 2 into its own file
(``log_file``); nothing but the events reaches its stdout. The handles work for any broker, so a
user's test can drive Kafka's own clients against ``kgroup serve`` as kgroup's tests do.

This module gathers them: the JVM process is :mod:`.java_process`'s, the consumer :mod:`.java_consumer`'s,
the producer :mod:`.java_producer`'s and the exactly-once worker :mod:`.java_eos_worker`'s.
"""

from kgroup.testing.apache_kafka.java_consumer import Commit, JavaConsumer, Rebalance
from kgroup.testing.apache_kafka.java_eos_worker import JavaExactlyOnceWorker
from kgroup.testing.apache_kafka.java_process import (
    DEFAULT_WAIT_S,
    JavaClientDied,
    JavaClientError,
    JavaClientProcess,
    JavaClientTimeout,
    client_driver_jar,
    close_all,
    start_all,
)
from kgroup.testing.apache_kafka.java_producer import JavaProducer, SentRecord

__all__ = [
    "DEFAULT_WAIT_S",
    "Commit",
    "JavaClientDied",
    "JavaClientError",
    "JavaClientProcess",
    "JavaClientTimeout",
    "JavaConsumer",
    "JavaExactlyOnceWorker",
    "JavaProducer",
    "Rebalance",
    "SentRecord",
    "client_driver_jar",
    "close_all",
    "start_all",
]
