"""The simulated member models the client the scenario names (``group.client``): librdkafka commits
a revoked partition's offset as it revokes it (auto-commit on), Kafka's Java consumer only before it
rejoins — so at a cooperative handover, with rebalance round trips long enough for records to arrive
in between, the Java model reprocesses what the old owner processed after its last commit and the
librdkafka model does not (docs/validate.md, where real librdkafka consumers show 0)."""

from __future__ import annotations

import dataclasses

import pytest

from kgroup.model import KgroupError
from kgroup.sim import simulate
from kgroup.sim.scenario import NetworkSpec, parse_scenario

DATA = {
    "seed": 1,
    "duration_ms": 20_000,
    "topics": {"t": 12},
    "group": {
        "assignors": ["cooperative-sticky"],
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
        "auto_commit_interval_ms": 1000,
    },
    "consumers": [{"count": 2, "prefix": "w", "topics": ["t"]}],
    "network": {"latency_ms": 30, "jitter_ms": 20},
    "workload": {"produce_per_partition_per_s": 50, "auto_offset_reset": "earliest"},
    "events": [{"at_ms": 8000, "kind": "scale", "count": 2, "topics": ["t"]}],
}


def test_the_java_model_reprocesses_at_a_cooperative_handover_and_librdkafka_does_not() -> None:
    java = parse_scenario(DATA)
    assert java.group.client == "java"
    librdkafka = parse_scenario({**DATA, "group": {**DATA["group"], "client": "librdkafka"}})
    assert librdkafka.group.client == "librdkafka"
    java_result, librdkafka_result = simulate(java), simulate(librdkafka)
    assert java_result.metrics["moved_partitions"] == librdkafka_result.metrics["moved_partitions"] > 0
    assert java_result.metrics["records_reprocessed"] > 0
    assert librdkafka_result.metrics["records_reprocessed"] == 0
    # on a network without delay the Java model has no window either
    quiet = dataclasses.replace(java, network=NetworkSpec())
    assert simulate(quiet).metrics["records_reprocessed"] <= java_result.metrics["records_reprocessed"]


def test_an_unknown_client_names_the_field() -> None:
    with pytest.raises(KgroupError, match=r"group\.client: is 'kafka-go'.*use one of java, librdkafka"):
        parse_scenario({**DATA, "group": {**DATA["group"], "client": "kafka-go"}})
