"""The differential suite's fixtures: one scenario, run against kgroup's broker and Apache Kafka.

``target`` is parametrized over both brokers; a test written once against it runs twice, and the
test ids say which (``[kgroup]`` / ``[apache]``). Apache Kafka is the run's shared node (the
``apache_kafka`` fixture), so every test takes fresh names from ``names``. A test that needs other
broker settings (three nodes, an initial rebalance delay) takes ``kind`` and starts a
:class:`Cluster` of that kind itself.
"""

from __future__ import annotations

import itertools
import os
import time
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


@pytest.fixture(autouse=True)
def _oracle_running(request: pytest.FixtureRequest) -> None:
    """A test that uses the run's oracle finds its JVM running: a test that stopped it (a call past its
    bound, the JVM dead) has failed with the reason, and the next test starts a fresh JVM instead of
    every later test of the worker failing on the one stopped (an autouse fixture: Hypothesis' tests
    keep the session's oracle as their own argument)."""
    if "kafka_oracle" in request.fixturenames:
        oracle = request.getfixturevalue("kafka_oracle")
        if oracle.pid is None:
            oracle.stop()
            oracle.start()


class Cluster:
    """A broker started for one test, with the settings the test needs, on either side.

    kgroup's cluster is ``KafkaBroker(brokers=n)`` (node ids 0…n-1), Apache Kafka's is
    ``ApacheKafka(nodes=n)`` (node ids 1…n); topics get ``min(n, 3)`` replicas on both.
    """

    def __init__(
        self,
        kind: str,
        nodes: int = 1,
        group_initial_rebalance_delay_ms: int = 0,
        leader_imbalance_check_interval_s: int = 300,
    ) -> None:
        self.kind = kind
        self.nodes = nodes
        self._kgroup: KafkaBroker | None = None
        self._apache: ApacheKafka | None = None
        if kind == "kgroup":
            self._kgroup = KafkaBroker(
                brokers=nodes,
                group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
                leader_imbalance_check_interval_s=leader_imbalance_check_interval_s,
            )
        else:
            self._apache = ApacheKafka(
                nodes,
                configs={
                    "group.initial.rebalance.delay.ms": group_initial_rebalance_delay_ms,
                    "leader.imbalance.check.interval.seconds": leader_imbalance_check_interval_s,
                },
            )

    def __enter__(self) -> Cluster:
        if self._kgroup is not None:
            self._kgroup.start()
        else:
            assert self._apache is not None
            self._apache.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._kgroup is not None:
            self._kgroup.stop()
        if self._apache is not None:
            try:
                self._apache.check_alive()
            finally:
                self._apache.stop()

    @property
    def bootstrap_servers(self) -> str:
        server = self._kgroup or self._apache
        assert server is not None
        return server.bootstrap_servers

    @property
    def node_ids(self) -> list[int]:
        if self._kgroup is not None:
            return list(range(self.nodes))
        assert self._apache is not None
        return self._apache.node_ids

    def create_topic(self, name: str, partitions: int) -> None:
        if self._kgroup is not None:
            self._kgroup.create_topic(name, partitions)
        else:
            assert self._apache is not None
            self._apache.create_topic(name, partitions, replication_factor=min(self.nodes, 3))

    def stop_node(self, node_id: int) -> None:
        """A controlled shutdown of one node (its leaderships, and the groups it coordinates, move)."""
        if self._kgroup is not None:
            self._kgroup.stop_broker(node_id)
        else:
            assert self._apache is not None
            self._apache.stop_node(node_id)

    def start_node(self, node_id: int) -> None:
        if self._kgroup is not None:
            self._kgroup.start_broker(node_id)
        else:
            assert self._apache is not None
            self._apache.start_node(node_id)

    def coordinator(self, group_id: str, timeout_s: float = 30.0) -> int:
        """The node that coordinates ``group_id``, as FindCoordinator answers a client."""
        return find_coordinator(self.bootstrap_servers, group_id, timeout_s)


def find_coordinator(bootstrap_servers: str, group_id: str, timeout_s: float = 30.0) -> int:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout_s
    problem: object = None
    while time.monotonic() < deadline:
        # a new client per attempt: librdkafka caches the coordinator it found and drops an entry only
        # once it has gone unused for a while (rd_kafka_coord_cache_expire), which a retry every 0.2 s
        # never lets happen — after a coordinator moved, one client went on asking the old one
        # (NOT_COORDINATOR for 30 s, once in CI); a fresh client starts with a FindCoordinator
        admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 3})
        try:
            description = admin.describe_consumer_groups([group_id], request_timeout=10)[group_id].result()
            return int(description.coordinator.id)
        except Exception as exc:  # COORDINATOR_NOT_AVAILABLE while a coordinator moves, …
            problem = exc
            time.sleep(0.2)
    raise AssertionError(f"no coordinator for {group_id!r} within {timeout_s:.0f} s: {problem}")


@pytest.fixture(params=["kgroup", "apache"])
def kind(request: pytest.FixtureRequest) -> str:
    """Which broker a test that starts its own (:class:`Cluster`) runs against."""
    if request.param == "apache":
        require_apache_kafka()
    return str(request.param)


@pytest.fixture(autouse=True)
def _java_clients_need_kafka(request: pytest.FixtureRequest) -> None:
    """The ``test_java_*`` modules drive Kafka's Java clients against both brokers: even their
    ``[kgroup]`` runs need the pinned jars (skipped outside CI without them, failed in CI)."""
    if request.module.__name__.rsplit(".", 1)[-1].startswith("test_java_"):
        require_apache_kafka()
