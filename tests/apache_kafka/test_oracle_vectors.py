"""Every reference vector in ``tests/vectors`` re-checked against the pinned Apache Kafka (4.4.0).

The vectors were computed by Kafka trunk 1eb7644 (2024-10-25, before 4.0; ``tests/vectors/FORMAT.md``).
Here the oracle (:class:`~kgroup.testing.apache_kafka.KafkaOracle`) asks 4.4.0 the same questions:
a vector whose answer changed is no longer a fact about the release kgroup follows. What changed is
listed below with the Kafka change that did it; everything else must still be identical (assignment,
``HashMap`` member order, murmur2, the partitioner's sequence).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.group.server_assignors.vectors import SERVER_UNIFORM_CHANGED_BY_KAFKA_4

from kgroup.assignors.fileformat import parse_assignment_file, run_assignment_file
from kgroup.partitioning import (
    ClusterView,
    ProducerModel,
    UsableBroker,
    create_partitioner,
    java_client_partition_order,
)
from kgroup.testing.apache_kafka import ApacheKafka, KafkaOracle, server_vector_group

VECTORS = Path(__file__).parents[1] / "vectors"

def _load(folder: str) -> list[tuple[str, dict[str, Any]]]:
    files = sorted((VECTORS / folder).rglob("*.json"))
    return [(str(f.relative_to(VECTORS / folder).with_suffix("")), json.loads(f.read_text())) for f in files]


def _strings(assignment: dict[str, Any] | None) -> dict[str, list[str]]:
    return {member: [str(tp) for tp in parts] for member, parts in (assignment or {}).items()}


@pytest.mark.parametrize(
    ("folder", "count"),
    [("range", 295), ("roundrobin", 215), ("sticky", 452), ("cooperative-sticky", 484)],
)
def test_consumer_assignor_vectors_are_unchanged_in_the_pinned_kafka(
    kafka_oracle: KafkaOracle, folder: str, count: int
) -> None:
    vectors = _load(folder)
    assert len(vectors) == count
    answers = kafka_oracle.assign_many([(v["assignor"], v["input"]) for _, v in vectors])
    changed = []
    for (name, vector), answer in zip(vectors, answers, strict=True):
        expected = vector["expected"]
        if "error" in expected:
            same = answer.error is not None and answer.error.split(":")[0] == expected["error"].split(":")[0]
        else:
            same = (
                answer.error is None
                and _strings(answer.assignment) == expected["assignment"]
                and list(answer.member_iteration_order) == expected["memberIterationOrder"]
            )
        if not same:
            changed.append(name)
    version = kafka_oracle.version
    assert changed == [], f"{len(changed)} {folder} vectors differ in Kafka {version}: {changed[:10]}"


def test_murmur2_vectors_are_unchanged(kafka_oracle: KafkaOracle) -> None:
    vectors = json.loads((VECTORS / "murmur2" / "murmur2.json").read_text())
    assert len(vectors) == 1000
    counts = vectors[0]["input"]["numPartitions"]
    assert all(v["input"]["numPartitions"] == counts for v in vectors)
    answers = kafka_oracle.murmur2([bytes.fromhex(v["input"]["keyHex"]) for v in vectors], counts)
    for vector, answer in zip(vectors, answers, strict=True):
        expected = vector["expected"]
        assert (answer.murmur2, answer.to_positive) == (expected["murmur2"], expected["toPositive"]), vector
        assert {str(n): p for n, p in answer.partitions.items()} == expected["partitions"], vector


def test_round_robin_partitioner_vectors_are_unchanged(kafka_oracle: KafkaOracle) -> None:
    vectors = json.loads((VECTORS / "producer" / "roundrobin_partitioner.json").read_text())
    assert len(vectors) == 30
    for vector in vectors:
        spec = vector["input"]
        got = kafka_oracle.round_robin_partitioner(
            spec["numPartitions"], spec["availablePartitions"], spec["calls"]
        )
        assert got == vector["expected"]["partitions"], spec


@pytest.mark.parametrize("folder", ["server-range", "server-uniform"])
def test_server_assignor_vectors_in_the_pinned_kafka(kafka_oracle: KafkaOracle, folder: str) -> None:
    vectors = _load(folder)
    assert len(vectors) == 60
    changed = set()
    for name, vector in vectors:
        expected = vector["expected"]
        group = server_vector_group(vector["input"], expected["topicIds"])
        assignor = vector["assignor"].removeprefix("server-")
        answer = kafka_oracle.server_assign(assignor, group.topics, group.members)
        assert answer.error is None, f"{name}: {answer.error}"
        # the group as built for the assignor is the recorded one: same member order, same type
        assert list(answer.member_ids) == expected["memberIterationOrder"], name
        assert answer.subscription_type == expected["subscriptionType"], name
        got = {m: group.partition_strings(answer.assignment.get(m, ())) for m in answer.member_ids}
        if got != expected["assignment"]:
            counts = sorted(len(p) for p in expected["assignment"].values())
            assert sorted(len(p) for p in got.values()) == counts, name
            changed.add(name)
    recorded = SERVER_UNIFORM_CHANGED_BY_KAFKA_4 if folder == "server-uniform" else frozenset()
    assert changed == recorded


def test_the_adminutils_vectors_reference_is_gone_from_the_pinned_kafka(kafka_oracle: KafkaOracle) -> None:
    """``replicas/adminutils_*`` hold ``org.apache.kafka.admin.AdminUtils.assignReplicasToBrokers``
    answers (the ZooKeeper-era placement). Kafka 4.x removed that class; a KRaft controller places
    replicas with ``StripedReplicaPlacer`` (the ``striped_*`` vectors, below). The 60 AdminUtils vectors
    cannot be re-checked against 4.4.0: they stay facts about 1eb7644."""
    assert not kafka_oracle.has_class("org.apache.kafka.admin.AdminUtils")
    assert not kafka_oracle.has_class("kafka.admin.AdminUtils")
    assert kafka_oracle.has_class("org.apache.kafka.metadata.placement.StripedReplicaPlacer")


def test_kafka_producer_asks_a_round_robin_partitioner_once_per_record(
    kafka_oracle: KafkaOracle, apache_kafka: ApacheKafka
) -> None:
    """KAFKA-9965: trunk 1eb7644's KafkaProducer asked a pluggable partitioner a second time for a
    record that starts a new batch, so each such record used two RoundRobinPartitioner counter values
    (with 4 partitions it reached only 2 of them). 4.4.0 has no ``Partitioner.onNewBatch`` and asks
    once. Here every record starts a new batch (batch.size 1, each send waits for its ack).

    The real producer walks ``availablePartitionsForTopic`` in its own order (not ascending: its
    ``MetadataSnapshot``'s HashMap), which ``ClusterView.single(..., java_client_order=True)`` gives."""
    topic = "oracle-round-robin-producer"
    apache_kafka.create_topic(topic, 4)
    real = kafka_oracle.produce(
        apache_kafka.bootstrap_servers,
        topic,
        12,
        partitioner="org.apache.kafka.clients.producer.RoundRobinPartitioner",
        batch_size=1,
    )
    order = real.metadata_order
    assert order == java_client_partition_order(topic, 4) == (1, 2, 3, 0)
    assert list(real.partitions) == list(order) * 3  # one counter value per record: every partition in turn
    cluster = ClusterView.single(topic, 4, java_client_order=True)
    model = ProducerModel(create_partitioner("round-robin"), cluster, batch_size=1)
    modelled = []
    for _ in range(12):
        modelled.append(model.send(topic, size_bytes=20))
        model.drain()
    assert modelled == list(real.partitions)
    assert model.new_batch_calls == 0


def test_eager_sticky_gives_a_stale_claim_back_outside_the_subscription(kafka_oracle: KafkaOracle) -> None:
    """Issue 22 (docs/member.md): Kafka's own ``StickyAssignor`` gives ``a``, which subscribes to t0
    only, t1-0 — its claim from generation 1, older than the others' — as kgroup's does
    (tests/assignors/test_sticky_rules.py)."""
    group = {
        "topics": [{"name": "t0", "partitions": 1}, {"name": "t1", "partitions": 6}],
        "members": [
            {"memberId": "a", "topics": ["t0"], "owned": ["t1-0", "t1-1", "t1-2"], "generation": 1},
            {"memberId": "b", "topics": ["t0", "t1"], "owned": ["t0-0", "t1-3", "t1-4"], "generation": 2},
            {"memberId": "c", "topics": ["t1"], "owned": ["t1-0", "t1-1", "t1-2", "t1-5"], "generation": 2},
        ],
    }
    answer = kafka_oracle.assign("sticky", group)
    assert answer.error is None
    expected = {"a": ["t0-0", "t1-0"], "b": ["t1-3", "t1-4"], "c": ["t1-1", "t1-2", "t1-5"]}
    assert _strings(answer.assignment) == expected


@pytest.mark.parametrize(
    ("subscription_generation", "c0_gets"),
    [(3, ["a-0", "a-1", "b-0", "b-1"]), (None, ["a-0", "a-1", "a-2", "b-2"])],
    ids=["generation-in-subscription", "no-generation-in-subscription"],
)
def test_eager_sticky_stale_claim_depends_on_the_subscription_generation(
    kafka_oracle: KafkaOracle, subscription_generation: int | None, c0_gets: list[str]
) -> None:
    """Generation 4 of test_java_subscription_change.py's leader run, with the generation-2 claim of c0
    in its user data and the subscriptions' own ``generationId`` as a real client sends it (3), or
    absent (a v0/v1 subscription): Kafka's answer differs, and kgroup's is Kafka's in both
    (tests/assignors/test_sticky_rules.py, which also says why)."""
    ids = [
        "c0-c113810d-3ce1-45f2-9115-49bdc5a21172",
        "c1-2e14f84b-fa70-4ac5-80b0-7306a8484a51",
        "c2-17848f14-cbfb-46b8-96be-946f9b983de5",
    ]
    claims = [
        (["a"], ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"], 2),
        (["a", "b"], ["a-3", "b-3", "b-4", "b-5"], 3),
        (["a", "b"], ["a-2", "b-2", "b-6", "b-7"], 3),
    ]
    members: list[dict[str, object]] = []
    for member_id, (topics, claim, generation) in zip(ids, claims, strict=True):
        member: dict[str, object] = {
            "memberId": member_id,
            "topics": topics,
            "userData": {"partitions": claim, "generation": generation},
        }
        if subscription_generation is not None:
            member["generation"] = subscription_generation
        members.append(member)
    group = {"topics": [{"name": "a", "partitions": 4}, {"name": "b", "partitions": 8}], "members": members}
    answer = kafka_oracle.assign("sticky", group)
    assert answer.error is None
    assert _strings(answer.assignment)[ids[0]] == c0_gets
    af = parse_assignment_file({"assignor": "sticky", "input": group}, source="issue 22, generation 4")
    assert _strings(run_assignment_file(af)) == _strings(answer.assignment)


def test_the_striped_replica_vectors_are_the_pinned_kafkas_answers(kafka_oracle: KafkaOracle) -> None:
    """``replicas/striped_*`` were computed by 4.4.0's ``StripedReplicaPlacer`` (through the oracle, the
    brokers registered with a real ``BrokerHeartbeatManager``); asked again, Kafka gives each answer."""
    vectors = [(name, v) for name, v in _load("replicas") if v.get("placer") == "striped"]
    assert len(vectors) == 60
    cases = [
        (
            [UsableBroker(b["id"], b["rack"], b["fenced"]) for b in v["input"]["brokers"]],
            [(v["input"]["partitions"], v["input"]["replicationFactor"])],
            v["input"]["seed"],
        )
        for _, v in vectors
    ]
    for (name, vector), answer in zip(vectors, kafka_oracle.striped_place_many(cases), strict=True):
        (placed,) = answer.topics
        expected = vector["expected"]
        if "error" in expected:
            assert placed == expected["error"], name
        else:
            assert placed == [expected["assignment"][str(p)] for p in range(len(placed))], name
