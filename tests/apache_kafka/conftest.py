"""The differential suite's fixtures: one scenario, run against kgroup's broker and Apache Kafka.

``target`` is parametrized over both brokers; a test written once against it runs twice, and the
test ids say which (``[kgroup]`` / ``[apache]``). Apache Kafka is the run's shared node (the
``apache_kafka`` fixture), so every test takes fresh names from ``names``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import pytest

from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, KafkaOracle, require_apache_kafka

_counter = itertools.count()


class _Server(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...

    def create_topic(self, name: str, partitions: int) -> None: ...


@dataclass
class Target:
    """One broker under test: ``kind`` is ``"kgroup"`` or ``"apache"``."""

    kind: str
    server: _Server

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    def create_topic(self, name: str, partitions: int) -> None:
        self.server.create_topic(name, partitions)


@pytest.fixture(params=["kgroup", "apache"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    if request.param == "apache":
        kafka = request.getfixturevalue("apache_kafka")
        assert isinstance(kafka, ApacheKafka)
        yield Target("apache", kafka)
        kafka.check_alive()
    else:
        with KafkaBroker() as broker:
            yield Target("kgroup", broker)


@pytest.fixture
def names(request: pytest.FixtureRequest) -> Iterator[str]:
    """A prefix unique in this run (topics and groups of the shared Apache Kafka never collide)."""
    yield f"t{os.getpid()}-{next(_counter)}-{request.node.originalname[:40]}".replace("_", "-")


@pytest.fixture(scope="session")
def kafka_oracle() -> Iterator[KafkaOracle]:
    """Apache Kafka's own assignors and partitioners in one JVM, shared by the run."""
    libs = require_apache_kafka()
    with KafkaOracle(libs) as oracle:
        yield oracle
        # shown with -s: the run's volume (docs/apache-kafka.md quotes it)
        print(f"\nKafka oracle {oracle.version}: {oracle.items} requests in {oracle.calls} round trips")
