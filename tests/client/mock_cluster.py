"""librdkafka's mock cluster (confluent-kafka ``test.mock.num.brokers``) as an independent coordinator.

librdkafka starts the mock brokers inside the client that asks for them and logs their bootstrap
address; the handle below keeps that client alive (the cluster lives as long as it does) and exposes
the address so that kgroup's client, and any other client, can connect over loopback.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import confluent_kafka

_BOOTSTRAP = re.compile(r"Mock cluster \S+ bootstrap\.servers=(\S+)")


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


#: the partition count of a topic the mock cluster auto-creates (librdkafka's default; the Python
#: binding cannot change it, and the mock has no controller for CreateTopics)
MOCK_PARTITIONS = 4


@contextmanager
def mock_cluster(brokers: int = 1, topics: tuple[str, ...] = ()) -> Iterator[str]:
    """Start a mock cluster of ``brokers`` brokers with ``topics`` (each auto-created with
    :data:`MOCK_PARTITIONS` partitions by producing one record); yields the bootstrap servers string;
    the cluster stops when the block ends."""
    capture = _Capture()
    logger = logging.getLogger(f"kgroup-tests-mock-{id(capture)}")
    logger.propagate = False
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    holder = confluent_kafka.Producer(
        {
            "test.mock.num.brokers": brokers,
            "debug": os.environ.get("KGROUP_MOCK_DEBUG", "mock"),
            "logger": logger,
        }
    )
    try:
        deadline = time.monotonic() + 10
        bootstrap = None
        while bootstrap is None and time.monotonic() < deadline:
            holder.poll(0.05)
            for message in capture.messages:
                match = _BOOTSTRAP.search(message)
                if match:
                    bootstrap = match.group(1)
        assert bootstrap is not None, "librdkafka did not report its mock cluster's address"
        if not os.environ.get("KGROUP_MOCK_DEBUG"):
            logger.removeHandler(capture)
        for topic in topics:
            holder.produce(topic, b"")
        assert holder.flush(10) == 0, "the mock cluster did not take the topic-creating records"
        yield bootstrap
    finally:
        holder.flush(1)
        del holder
